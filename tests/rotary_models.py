"""The complex rotary embedding as real models write it (test fixtures)."""

from __future__ import annotations

import torch
from torch import nn

from inductor_complex.llama_rope import (
    apply_rotary_emb_complex as llama_apply_rotary_emb,
)
from inductor_complex.llama_rope import precompute_freqs_cis, reshape_for_broadcast  # noqa: F401  (re-exported for tests)


def deepseek_apply_rotary_emb(x, freqs_cis):
    """DeepSeek-V3's single-tensor form: ``view`` into pairs, ``.to(dtype)`` at the end."""
    dtype = x.dtype
    x = torch.view_as_complex(x.float().view(*x.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    y = torch.view_as_real(x * freqs_cis).flatten(3)
    return y.to(dtype)


class BufferRotary(nn.Module):
    """Table as a registered buffer, sliced by start position (Llama's Attention)."""

    def __init__(self, head_dim: int, max_seq: int):
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, max_seq), persistent=False)

    def forward(self, xq, xk, start_pos: int = 0):
        seqlen = xq.shape[1]
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        return llama_apply_rotary_emb(xq, xk, freqs_cis)


class AttributeRotary(nn.Module):
    """Table as a plain tensor attribute (not a buffer), as Llama 2's code had it."""

    def __init__(self, head_dim: int, max_seq: int):
        super().__init__()
        self.freqs_cis = precompute_freqs_cis(head_dim, max_seq)

    def forward(self, xq, xk, start_pos: int):
        seqlen = xq.shape[1]
        return llama_apply_rotary_emb(xq, xk, self.freqs_cis[start_pos : start_pos + seqlen])


class QKRotary(nn.Module):
    """Projections + rotary, for training steps: q and k with different head counts."""

    def __init__(self, dim=16, n_heads=4, n_kv_heads=2, max_seq=32):
        super().__init__()
        self.head_dim = dim // n_heads
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.register_buffer("freqs_cis", precompute_freqs_cis(self.head_dim, max_seq), persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        xq = self.wq(x).view(b, s, self.n_heads, self.head_dim)
        xk = self.wk(x).view(b, s, self.n_kv_heads, self.head_dim)
        xq, xk = llama_apply_rotary_emb(xq, xk, self.freqs_cis[:s])
        return (xq.sum(2) * xk.sum(2)).sum(-1)
