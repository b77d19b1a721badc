"""Small complex-valued models trained a few steps, compiled with the pass vs eager."""

from __future__ import annotations

import torch
from complex_testing import compare_training
from torch import nn



class ComplexMLP(nn.Module):
    """Complex weights held as real parameters (``view_as_complex`` of ``[..., 2]``)."""

    def __init__(self, d_in=6, d_hidden=8, d_out=3):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(d_hidden, d_in, 2) * 0.3)
        self.b1 = nn.Parameter(torch.randn(d_hidden, 2) * 0.1)
        self.w2 = nn.Parameter(torch.randn(d_out, d_hidden, 2) * 0.3)

    def forward(self, x):
        z = torch.view_as_complex(x)
        h = nn.functional.linear(z, torch.view_as_complex(self.w1), torch.view_as_complex(self.b1))
        # modReLU-style gate built from |h|, sgn(h) and where
        mag = h.abs()
        h = torch.where(mag > 0.1, torch.sgn(h) * (mag - 0.1), torch.zeros_like(h))
        y = h @ torch.view_as_complex(self.w2).transpose(0, 1)
        return (y.abs() ** 2).mean() + torch.angle(y).sum() * 0.01


class S4DKernel(nn.Module):
    """The S4D convolution kernel: ``K = Re(C · exp(A·dt)^l)`` summed over states."""

    def __init__(self, d_model=4, n_state=8, length=16):
        super().__init__()
        self.log_a = nn.Parameter(torch.log(0.5 * torch.ones(d_model, n_state)))
        self.a_imag = nn.Parameter(torch.pi * torch.arange(n_state).float().repeat(d_model, 1))
        self.log_dt = nn.Parameter(torch.rand(d_model) * -3.0)
        self.c = nn.Parameter(torch.randn(d_model, n_state, 2) * 0.5)
        self.length = length

    def forward(self, u):
        dt = torch.exp(self.log_dt)
        a = -torch.exp(self.log_a) + 1j * self.a_imag
        dt_a = a * dt.unsqueeze(-1)
        c = torch.view_as_complex(self.c) * (torch.exp(dt_a) - 1.0) / a
        positions = torch.arange(self.length, dtype=torch.float32)
        k = torch.exp(dt_a.unsqueeze(-1) * positions)  # [d_model, n_state, length]
        kernel = 2 * torch.einsum("dn,dnl->dl", c, k).real
        return (kernel * u).sum()


def _compare_training(make_model, data, steps=3, **tol):
    return compare_training(make_model, data, steps=steps, **tol)


def test_complex_mlp_trains_like_eager():
    report, fallbacks = _compare_training(ComplexMLP, torch.randn(10, 6, 2), atol=1e-4, rtol=1e-4)
    assert report.count("bridged") == 0, report.format()
    assert fallbacks.beyond_edges == []


def test_s4d_kernel_trains_like_eager():
    report, fallbacks = _compare_training(S4DKernel, torch.randn(4, 16), atol=1e-4, rtol=1e-4)
    # Everything complex is rewritten, `1j * a_imag` (real tensor × complex
    # number) included: Inductor is left no complex work, forward or backward.
    assert report.count("kept") + report.count("bridged") == 0, report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops
