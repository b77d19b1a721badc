"""The log1p rule against eager.

As tests/test_trig_rules.py: each op runs through the pass on Dynamo's graph
and on torch.export's aten graph, on random values, on values near 0 (where
log1p's accuracy matters: ``|1 + z|`` near 1, including ``x ≈ -y²/2``) and on
a 32×32 grid of edge values (1024 elements, so eager runs its vectorized
loop), and must equal eager, NaNs and signed zeros included. Gradients are
compared with eager autograd in float64; a chain is compiled with Inductor
forward and backward.
"""

from __future__ import annotations

import math

import pytest
import torch
from complex_testing import (
    assert_unary_gradients_match_eager,
    aten_graph,
    compile_and_compare,
    dynamo_graph,
    run_pass,
)

inf, nan = math.inf, math.nan
EDGE = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.0, inf, -inf, nan, 1e30, -1e30, 1e-30, 1e-40, 1e-310,
    1e-8, -1e-8, 3e38, -3e38, 1.7e308, -0.75, 0.25, -1.5, 1e-4, -1e-4, 2.5, -1e-20, 1e20, 0.999, -0.999, 3.0,
]  # 32 values: the 1024-element grid is a multiple of 16, so eager runs its vectorized loop throughout
# complex64 near 0 only matches with eager's FMA contractions mirrored (see
# rules/log1p.py): without them 184 of the 1024 "near0" points miss NEAR_TOL.
DTYPES = [torch.complex64, torch.complex128]
# Eager computes log/log1p/hypot/atan2 of the parts with glibc's scalar libm,
# the rewrite with torch's kernels: finite results may differ in the last bits.
TOL = {torch.complex64: {"rtol": 2e-5, "atol": 1e-6}, torch.complex128: {"rtol": 1e-12, "atol": 1e-12}}
# Near 0 the results are tiny: compare relative to each part, without an atol.
NEAR_TOL = {torch.complex64: {"rtol": 1e-5, "atol": 0.0}, torch.complex128: {"rtol": 1e-12, "atol": 0.0}}

OPS = {"log1p": torch.log1p}


def _grid(dtype, kind):
    if kind == "edge":
        return torch.tensor([complex(a, b) for a in EDGE for b in EDGE], dtype=dtype)
    gen = torch.Generator().manual_seed(0)
    if kind == "near0":
        # Magnitudes 1e-12 .. 1e-1, plus points on the circle |1 + z| = 1 (x = -y²/2 ...).
        mag = 10.0 ** (-12 + 11 * torch.rand(512, generator=gen, dtype=torch.float64))
        ang = (torch.rand(512, generator=gen, dtype=torch.float64) * 2 - 1) * math.pi
        z = torch.polar(mag, ang)
        y = 10.0 ** (-8 + 7 * torch.rand(512, generator=gen, dtype=torch.float64))
        circle = torch.complex(torch.cos(y) - 1, torch.sin(y))  # on |1 + z| = 1
        return torch.cat([z, circle]).to(dtype)
    return torch.randn(1024, generator=gen, dtype=dtype) * 3


def _check(actual, expected, dtype, tol=TOL):
    a, e = torch.view_as_real(actual), torch.view_as_real(expected)
    torch.testing.assert_close(a, e, equal_nan=True, **tol[dtype])
    zeros = (a == 0) & (e == 0)
    assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros]))


@pytest.mark.parametrize("kind", ["random", "near0", "edge"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", list(OPS))
def test_matches_eager(name, dtype, kind):
    op = OPS[name]

    def fn(z):
        return op(z)

    z = _grid(dtype, kind)
    tol = NEAR_TOL if kind == "near0" else TOL
    expected = fn(z)
    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    (actual,) = gm(z)
    _check(actual, expected, dtype, tol)
    export_gm = aten_graph(fn, z)
    aten_report = run_pass(export_gm)
    _check(export_gm(z), expected, dtype, tol)
    for r in (report, aten_report):
        assert r.count("bridged") + r.count("kept") == 0, r.format()
        assert r.count("rewritten") > 0


# Finite points off log1p's branch cut (real axis below -1).
GRAD_POINTS = [
    (0.0, 0.0), (1.5, 0.0), (-0.5, 0.0), (-0.5, -0.0), (0.0, 1.25), (-0.0, -0.75),
    (0.0, -3.0), (0.7, -1.1), (-1.3, 2.2), (2.5, 0.4), (-0.4, -0.6), (3.0, 5.0),
    (-50.0, 0.3), (0.3, 50.0), (1e-5, -1e-5), (-2.0, 1e-3), (1e-9, 0.0), (-5e-11, 1e-5),
    # |z| below 1e-154: the division by u - 1 needs its scaled gradient here.
    (1e-200, 3e-200), (-1e-170, 1e-170), (1e-300, -2e-300),
]


@pytest.mark.parametrize("name", list(OPS))
def test_gradients_match_eager(name):
    op = OPS[name]
    assert_unary_gradients_match_eager(op, GRAD_POINTS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_compiled_chain_forward_backward(dtype):
    def fn(x, w):
        z = torch.view_as_complex(x)
        y = torch.log1p(z * 0.3) * w + torch.log1p(w * 0.01)
        return torch.view_as_real(y), torch.log1p(y * 0.1).abs().sum()

    part = torch.float32 if dtype == torch.complex64 else torch.float64
    x, w = torch.randn(4, 8, 2, dtype=part), torch.randn(8, dtype=dtype)
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.complex64 else {"atol": 1e-9, "rtol": 1e-9}
    report, fallbacks = compile_and_compare(fn, x, w, **tol)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []
