"""Small complex models, as deployed ones are written, for the exported-program tests.

Each entry: (a module, its example inputs, dynamic_shapes for torch.export or None).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.export import Dim


def _freqs_cis(dim: int, end: int, dtype=torch.float32) -> torch.Tensor:
    freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=dtype)[: dim // 2] / dim))
    angles = torch.outer(torch.arange(end, dtype=dtype), freqs)
    return torch.polar(torch.ones_like(angles), angles)


class LlamaAttentionRope(nn.Module):
    """Llama's reference: a complex buffer from polar, read twice (q and k)."""

    def __init__(self, dim=16, heads=2, end=32):
        super().__init__()
        self.heads = heads
        self.wq, self.wk = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.register_buffer("freqs_cis", _freqs_cis(dim // heads, end))

    @staticmethod
    def _rotate(x, freqs_cis):
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs_cis).flatten(3).type_as(x)

    def forward(self, x):
        batch, length, _ = x.shape
        q = self.wq(x).view(batch, length, self.heads, -1)
        k = self.wk(x).view(batch, length, self.heads, -1)
        q = self._rotate(q, self.freqs_cis[:length].view(1, length, 1, -1))
        k = self._rotate(k, self.freqs_cis[:length].view(1, length, 1, -1))
        return torch.einsum("blhd,bmhd->bhlm", q, k)


class PolarInForward(nn.Module):
    """The table made in forward (torchtitan, DeepSeek-V3 variants), in complex128 (Wan 2.1)."""

    def forward(self, x, angles):
        freqs = torch.polar(torch.ones_like(angles), angles)
        xc = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * freqs).flatten(-2).to(x.dtype)


class ComplexInComplexOut(nn.Module):
    """A complex input and a complex output, with a complex parameter."""

    def __init__(self, n=6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n, dtype=torch.complex64) / n)

    def forward(self, z):
        y = z @ self.weight
        return y * torch.sigmoid(y.abs()) + z.conj()


class S4DKernel(nn.Module):
    """S4D's convolution kernel: complex state built from real parameters."""

    def __init__(self, channels=3, state=8):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.log_dt = nn.Parameter(torch.rand(channels, generator=gen) * -3)
        self.C = nn.Parameter(torch.randn(channels, state // 2, 2, generator=gen) * 0.5)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(channels, state // 2)))
        self.A_imag = nn.Parameter(torch.pi * torch.arange(state // 2).float().repeat(channels, 1))

    def forward(self, u):
        length = u.shape[-1]
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(length, device=u.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        kernel = 2 * torch.einsum("hn,hnl->hl", C, torch.exp(K)).real
        return u * kernel


class ComplexMLP(nn.Module):
    """A complex-valued MLP over real features: complex weights held as real pairs (a buffer)."""

    def __init__(self, n=8, hidden=12):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(n, hidden, dtype=torch.complex64) / n)
        self.register_buffer("w2", torch.randn(hidden, n, dtype=torch.complex64) / hidden)

    def forward(self, x):
        z = torch.complex(x, torch.zeros_like(x)) @ self.w1
        z = z * torch.exp(-z.abs())  # a phase-keeping activation
        return (z @ self.w2).real


class Llama4RotaryEmbedding(nn.Module):
    """Hugging Face's Llama 4 rotary table: polar of ``inv_freq @ position_ids``
    (transposed, so not contiguous) times an attention scaling, under no_grad
    and autocast off, then applied to q as Meta's reference does."""

    def __init__(self, dim=16, scaling=1.25):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (500000 ** (torch.arange(0, dim, 2).float() / dim)), persistent=False)
        self.attention_scaling = scaling

    @torch.no_grad()
    def table(self, x, position_ids):
        inv_freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        with torch.autocast(device_type=x.device.type, enabled=False):
            freqs = (inv_freq.to(x.device) @ position_ids[:, None, :].float()).transpose(1, 2)
            return torch.polar(torch.ones_like(freqs), freqs) * self.attention_scaling

    def forward(self, q, position_ids):
        freqs_cis = self.table(q, position_ids)
        qc = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(qc * freqs_cis[:, :, None, :]).flatten(3).type_as(q)


class StftMask(nn.Module):
    """Speech enhancement: STFT, a complex mask made from the magnitude
    (``complex(tanh(a), tanh(b))``), ISTFT."""

    def __init__(self, n_fft=16, hop=4):
        super().__init__()
        bins = n_fft // 2 + 1
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.a, self.b = nn.Conv1d(bins, bins, 1), nn.Conv1d(bins, bins, 1)

    def forward(self, x):
        spec = torch.stft(x, self.n_fft, self.hop, window=self.window, return_complex=True)
        mag = spec.abs()
        mask = torch.complex(torch.tanh(self.a(mag)), torch.tanh(self.b(mag)))
        return torch.istft(spec * mask, self.n_fft, self.hop, window=self.window, length=x.shape[-1])


class VocosHead(nn.Module):
    """Vocos' ISTFT head: magnitude and phase from a linear layer, ``mag * (cos + 1j sin)``, ISTFT."""

    def __init__(self, dim=8, n_fft=16, hop=4):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.out = nn.Linear(dim, n_fft + 2)
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x):
        mag, phase = self.out(x).transpose(1, 2).chunk(2, dim=1)
        spectrum = torch.exp(mag).clip(max=1e2) * (torch.cos(phase) + 1j * torch.sin(phase))
        return torch.istft(spectrum, self.n_fft, self.hop, self.n_fft, window=self.window, center=True)


class SpectralConv2d(nn.Module):
    """neuraloperator's FNO layer: rfft2, the lowest modes (both ends of the first
    transformed dim) times complex weights, written into a zero spectrum, irfft2."""

    def __init__(self, channels=3, modes=(3, 4)):
        super().__init__()
        self.modes = modes
        scale = 1 / channels**2
        self.w1 = nn.Parameter(scale * torch.randn(channels, channels, *modes, dtype=torch.complex64))
        self.w2 = nn.Parameter(scale * torch.randn(channels, channels, *modes, dtype=torch.complex64))

    def forward(self, x):
        m1, m2 = self.modes
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(*x.shape[:2], x.shape[-2], x.shape[-1] // 2 + 1, dtype=torch.complex64, device=x.device)
        out_ft[:, :, :m1, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], self.w1)
        out_ft[:, :, -m1:, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2], self.w2)
        return torch.fft.irfft2(out_ft, s=x.shape[-2:])


class GlobalFilter(nn.Module):
    """GFNet's global filter: an orthonormal rfft2 times a complex weight (held as pairs), irfft2."""

    def __init__(self, h=6, w=8, dim=4):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(h, w // 2 + 1, dim, 2) * 0.02)

    def forward(self, x):  # [B, H, W, C]
        spectrum = torch.fft.rfft2(x, dim=(1, 2), norm="ortho") * torch.view_as_complex(self.weight)
        return torch.fft.irfft2(spectrum, s=x.shape[1:3], dim=(1, 2), norm="ortho")


class FFTConv(nn.Module):
    """S4D's and Hyena's long convolution: rfft of signal and kernel padded to 2L, product, irfft, first L."""

    def __init__(self, channels=3, length=12):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(channels, length) / length)

    def forward(self, u):  # [B, C, L]
        length = u.shape[-1]
        k_f = torch.fft.rfft(self.kernel, n=2 * length)
        u_f = torch.fft.rfft(u.to(self.kernel.dtype), n=2 * length)
        return torch.fft.irfft(u_f * k_f, n=2 * length)[..., :length] + u


class LogPowerSpectrum(nn.Module):
    """Whisper's front end: STFT, ``abs() ** 2``, log."""

    def __init__(self, n_fft=16, hop=4):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x):
        spectrum = torch.stft(x, self.n_fft, self.hop, window=self.window, return_complex=True)
        return torch.clamp(spectrum[..., :-1].abs() ** 2, min=1e-10).log10()


def fft_models() -> dict:
    """The FFT programs: stft/istft and torch.fft with math on the spectrum."""
    return {
        "stft_mask": (StftMask(), (torch.randn(2, 64),), None),
        "vocos_head": (VocosHead(), (torch.randn(1, 10, 8),), None),
        "fno_spectral_conv": (SpectralConv2d(), (torch.randn(2, 3, 8, 10),), None),
        "gfnet_filter": (GlobalFilter(), (torch.randn(2, 6, 8, 4),), None),
        "fft_conv": (FFTConv(), (torch.randn(2, 3, 12),), None),
        "log_power_spectrum": (LogPowerSpectrum(), (torch.randn(2, 48),), None),
    }


def models() -> dict:
    length = Dim("length", min=2, max=32)
    return {
        "llama_rope": (LlamaAttentionRope(), (torch.randn(2, 5, 16),), ({1: length},)),
        "polar_in_forward_c128": (PolarInForward(), (torch.randn(3, 5, 8), torch.randn(5, 4)),
                                  ({1: length}, {0: length})),
        "complex_in_out": (ComplexInComplexOut(), (torch.randn(4, 6, dtype=torch.complex64),), ({0: Dim("batch", max=64)},)),
        "s4d_kernel": (S4DKernel(), (torch.randn(2, 3, 7),), ({2: length},)),
        "complex_mlp": (ComplexMLP(), (torch.randn(5, 8),), None),
        "llama4_rope": (Llama4RotaryEmbedding(), (torch.randn(2, 5, 2, 16), torch.arange(5).repeat(2, 1)), None),
        **fft_models(),
    }
