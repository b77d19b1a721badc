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


def models() -> dict:
    length = Dim("length", min=2, max=32)
    return {
        "llama_rope": (LlamaAttentionRope(), (torch.randn(2, 5, 16),), ({1: length},)),
        "polar_in_forward_c128": (PolarInForward(), (torch.randn(3, 5, 8), torch.randn(5, 4)),
                                  ({1: length}, {0: length})),
        "complex_in_out": (ComplexInComplexOut(), (torch.randn(4, 6, dtype=torch.complex64),), ({0: Dim("batch", max=64)},)),
        "s4d_kernel": (S4DKernel(), (torch.randn(2, 3, 7),), ({2: length},)),
        "complex_mlp": (ComplexMLP(), (torch.randn(5, 8),), None),
    }
