"""The models the benchmarks time, written as their public sources write them.

Each keeps its complex math in the form real code uses (``view_as_complex`` of
interleaved pairs, complex parameters, ``torch.polar`` tables), so the numbers
say what a user of that code would see. Sizes come from ``perf.subjects``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from inductor_complex.demo import Attention, ModelArgs, RMSNorm, TransformerBlock, repeat_kv
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

# ----------------------------------------------------------- Llama decode


class CachedAttention(Attention):
    """The demo's attention with a static KV cache, as gpt-fast and Llama's
    reference decode: the new keys and values are written at their positions,
    and the query attends to the whole cache under a mask of filled slots."""

    def forward(self, x, freqs_cis, cache_k, cache_v, positions):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, -1, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, -1, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, -1, self.head_dim)
        if self.rope:
            xq, xk = apply_rotary_emb_complex(xq, xk, freqs_cis)
        cache_k.index_copy_(1, positions, xk)
        cache_v.index_copy_(1, positions, xv)
        n_rep = self.n_heads // self.n_kv_heads
        keys, values = repeat_kv(cache_k, n_rep), repeat_kv(cache_v, n_rep)
        filled = torch.arange(cache_k.shape[1], device=x.device) <= positions[-1]
        q, k, v = (t.transpose(1, 2) for t in (xq, keys, values))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=filled.view(1, 1, 1, -1))
        return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1))


class CachedBlock(TransformerBlock):
    """The demo's block with :class:`CachedAttention`."""

    def __init__(self, args: ModelArgs):
        super().__init__(args)
        self.attention = CachedAttention(args)

    def forward(self, x, freqs_cis, cache_k, cache_v, positions):
        h = x + self.attention(self.attention_norm(x), freqs_cis, cache_k, cache_v, positions)
        return h + self.feed_forward(self.ffn_norm(h))


class CachedDecoder(nn.Module):
    """Llama's layers over hidden states (no embedding or head: the benchmark
    is about the layers), one decode step at ``positions`` into static caches."""

    def __init__(self, args: ModelArgs, batch: int):
        super().__init__()
        self.layers = nn.ModuleList(CachedBlock(args) for _ in range(args.n_layers))
        head_dim = args.dim // args.n_heads
        shape = (args.n_layers, batch, args.max_seq_len, args.n_kv_heads, head_dim)
        self.register_buffer("cache_k", torch.zeros(shape), persistent=False)
        self.register_buffer("cache_v", torch.zeros(shape), persistent=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, args.max_seq_len, args.rope_theta), persistent=False)

    def forward(self, h, positions):
        freqs_cis = self.freqs_cis[positions]
        for i, layer in enumerate(self.layers):
            h = layer(h, freqs_cis, self.cache_k[i], self.cache_v[i], positions)
        return h


class Layers(nn.Module):
    """Llama's layers over hidden states, for training and prefill."""

    def __init__(self, args: ModelArgs):
        super().__init__()
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layers))
        head_dim = args.dim // args.n_heads
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, args.max_seq_len, args.rope_theta), persistent=False)

    def forward(self, h):
        freqs_cis = self.freqs_cis[: h.shape[1]]
        for layer in self.layers:
            h = layer(h, freqs_cis)
        return h


# ------------------------------------------------------- Wan 2.1 DiT block


def wan_rope_table(head_dim: int, max_len: int = 64, theta: float = 10000.0) -> torch.Tensor:
    """Wan 2.1's table: complex128 ``[max_len, head_dim/2]``, its columns split
    between the frame, height and width axes (``d - 4·(d//6)``, ``2·(d//6)``, ``2·(d//6)``)."""
    d = head_dim
    parts = []
    for axis_dim in (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6)):
        freqs = 1.0 / theta ** (torch.arange(0, axis_dim, 2, dtype=torch.float64) / axis_dim)
        angles = torch.outer(torch.arange(max_len, dtype=torch.float64), freqs)
        parts.append(torch.polar(torch.ones_like(angles), angles))
    return torch.cat(parts, dim=1)


def wan_rope_apply(x: torch.Tensor, grid: tuple[int, int, int], freqs: torch.Tensor) -> torch.Tensor:
    """Wan's ``rope_apply`` over a batch on one grid: x ``[B, F·H·W, heads, D]``,
    computed in complex128 and returned as float32."""
    f, h, w = grid
    c = x.shape[-1] // 2
    split = (c - 2 * (c // 3), c // 3, c // 3)
    frame, height, width = freqs.split(split, dim=1)
    table = torch.cat(
        [
            frame[:f].view(f, 1, 1, -1).expand(f, h, w, -1),
            height[:h].view(1, h, 1, -1).expand(f, h, w, -1),
            width[:w].view(1, 1, w, -1).expand(f, h, w, -1),
        ],
        dim=-1,
    ).reshape(f * h * w, 1, -1)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(z * table).flatten(3).float()


class WanBlock(nn.Module):
    """A Wan 2.1 DiT self-attention block (no text cross-attention or time
    modulation): norm, q/k/v with RMS-normed q and k, 3-axis rope, attention,
    GELU MLP."""

    def __init__(self, dim: int, heads: int, grid: tuple[int, int, int], rope: bool = True):
        super().__init__()
        self.heads, self.grid, self.rope = heads, grid, rope
        self.norm1, self.norm2 = nn.LayerNorm(dim, elementwise_affine=False), nn.LayerNorm(dim)
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.norm_q, self.norm_k = RMSNorm(dim, 1e-6), RMSNorm(dim, 1e-6)
        self.ffn = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.register_buffer("freqs", wan_rope_table(dim // heads, max(grid)), persistent=False)

    def forward(self, x):  # [B, F·H·W, dim]
        b, s, d = x.shape
        y = self.norm1(x)
        q = self.norm_q(self.q(y)).view(b, s, self.heads, -1)
        k = self.norm_k(self.k(y)).view(b, s, self.heads, -1)
        v = self.v(y).view(b, s, self.heads, -1)
        if self.rope:
            q, k = wan_rope_apply(q, self.grid, self.freqs), wan_rope_apply(k, self.grid, self.freqs)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.o(out.transpose(1, 2).reshape(b, s, d))
        return x + self.ffn(self.norm2(x))


# ------------------------------------------------------ FNO, S4D, LRU layers


class SpectralConv2d(nn.Module):
    """An FNO layer (neuraloperator's SpectralConv with complex weights): the
    lowest modes of rfft2 mixed across channels, irfft2 back, plus a 1x1 conv."""

    def __init__(self, width: int, modes: int):
        super().__init__()
        self.modes = modes
        scale = 1 / (width * width)
        self.w1 = nn.Parameter(scale * torch.randn(width, width, modes, modes, dtype=torch.cfloat))
        self.w2 = nn.Parameter(scale * torch.randn(width, width, modes, modes, dtype=torch.cfloat))
        self.skip = nn.Conv2d(width, width, 1)

    def forward(self, x):  # [B, C, H, W]
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros_like(x_ft)
        out_ft[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.w1)
        out_ft[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m:, :m], self.w2)
        spectral = torch.fft.irfft2(out_ft, s=x.shape[-2:])
        return F.gelu(spectral + self.skip(x))


class S4DLayer(nn.Module):
    """S4D (Gu et al.): the convolution kernel from diagonal complex state
    matrices, applied by FFT convolution, plus the skip term."""

    def __init__(self, d_model: int, n_state: int, length: int):
        super().__init__()
        self.log_a = nn.Parameter(torch.log(0.5 * torch.ones(d_model, n_state)))
        self.a_imag = nn.Parameter(math.pi * torch.arange(n_state).float().repeat(d_model, 1))
        self.log_dt = nn.Parameter(torch.rand(d_model) * (math.log(0.1) - math.log(0.001)) + math.log(0.001))
        self.c = nn.Parameter(torch.randn(d_model, n_state, 2) * 0.5**0.5)
        self.d = nn.Parameter(torch.randn(d_model))
        self.length = length

    def forward(self, u):  # [B, d_model, L]
        dt = torch.exp(self.log_dt)
        a = -torch.exp(self.log_a) + 1j * self.a_imag
        dt_a = a * dt.unsqueeze(-1)
        c = torch.view_as_complex(self.c) * (torch.exp(dt_a) - 1.0) / a
        k = 2 * torch.einsum("dn,dnl->dl", c, torch.exp(dt_a.unsqueeze(-1) * torch.arange(self.length, device=u.device))).real
        n = 2 * self.length
        y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)[..., : self.length]
        return F.gelu(y + u * self.d.unsqueeze(-1))


class LRULayer(nn.Module):
    """The Linear Recurrent Unit (Orvieto et al.): a diagonal complex
    recurrence ``x_t = λ·x_{t-1} + B·u_t`` with ``|λ| < 1`` by its exp-exp
    parametrisation, read out as ``Re(C·x_t) + D·u_t``; the scan is the
    sequential loop of the reference code."""

    def __init__(self, d_model: int, n_state: int):
        super().__init__()
        u1, u2 = torch.rand(n_state), torch.rand(n_state)
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(u1 * (1 - 0.9**2) + 0.9**2)))
        self.theta_log = nn.Parameter(torch.log(u2 * math.pi * 2))
        self.gamma_log = nn.Parameter(torch.log(torch.sqrt(1 - torch.exp(-torch.exp(self.nu_log.detach())) ** 2)))
        self.b = nn.Parameter(torch.randn(n_state, d_model, 2) / math.sqrt(2 * d_model))
        self.c = nn.Parameter(torch.randn(d_model, n_state, 2) / math.sqrt(n_state))
        self.d = nn.Parameter(torch.randn(d_model))

    def forward(self, u):  # [B, L, d_model]
        lam = torch.exp(-torch.exp(self.nu_log) + 1j * torch.exp(self.theta_log))
        b = torch.view_as_complex(self.b) * torch.exp(self.gamma_log).unsqueeze(-1)
        bu = u.to(b.dtype) @ b.transpose(0, 1)  # [B, L, n_state]
        x = torch.zeros_like(bu[:, 0])
        states = []
        for t in range(u.shape[1]):
            x = lam * x + bu[:, t]
            states.append(x)
        y = (torch.stack(states, 1) @ torch.view_as_complex(self.c).transpose(0, 1)).real
        return y + u * self.d
