"""Rules built on c10's arithmetic match eager's FMA-contracted kernels.

Eager's CPU kernels are compiled with -mfma, and GCC fuses the multiply-adds
of c10's Smith division into fused multiply-adds (float and double). Where the quotient's real or
imaginary part is a small difference, the unfused formula is off in many bits;
the rules fuse the same terms (``ScalarOps.fma``) and match eager bit for bit.
"""

from __future__ import annotations

import pytest
import torch
from complex_testing import aten_graph, dynamo_graph, run_pass


def _cancelling_quotients(dtype, n=2048):
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(n, dtype=dtype, generator=gen)
    t = torch.randn(n, generator=gen, dtype=w.real.dtype) * 1e-3
    one = torch.ones_like(t)
    # z / w = 1 + it or t + i: one part of the quotient is tiny, a cancellation.
    z = torch.cat([w * torch.complex(one, t), w * torch.complex(t, one), torch.randn(n, dtype=dtype, generator=gen)])
    return z, torch.cat([w, w, w])


@pytest.mark.skipif(
    torch.backends.cpu.get_cpu_capability() == "DEFAULT", reason="eager's kernels are built without FMA here"
)
@pytest.mark.parametrize(
    "name, fn, arity",
    [
        ("div", lambda z, w: z / w, 2),
        ("reciprocal", lambda w: w.reciprocal(), 1),
        ("number_over", lambda w: (1.5 - 0.25j) / w, 1),
        ("div_number", lambda z: z / (0.3 + 1.7j), 1),
    ],
)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=["c64", "c128"])
def test_division_is_bitwise_eager(name, fn, arity, dtype):
    z, w = _cancelling_quotients(dtype)
    args = (z, w) if arity == 2 else ((w,) if name in ("reciprocal", "number_over") else (z,))
    expected = torch.view_as_real(fn(*args))
    for gm in (dynamo_graph(fn, *args), aten_graph(fn, *args)):
        report = run_pass(gm)
        assert report.count("bridged") + report.count("kept") == 0, report.format()
        out = gm(*args)
        actual = torch.view_as_real(out[0] if isinstance(out, (list, tuple)) else out)
        assert torch.equal(actual, expected), (actual - expected).abs().max()
