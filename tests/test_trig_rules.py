"""Trig, hyperbolic and log/exp-variant rules against eager.

Each op runs through the pass on Dynamo's graph and on torch.export's aten
graph, on random values and on a grid of edge values (0, -0, ±inf, nan, huge,
tiny, subnormal, the exp-overflow thresholds 88/89 and 709/710, the tanh
thresholds 44/354 and the multiples 2t/3t of the glibc scaling steps), and must
equal eager, NaNs and signed zeros included. Gradients are compared with eager
autograd in float64; a chain is compiled with Inductor forward and backward.
Refresh the dump with ``EXPECTTEST_ACCEPT=1 pytest tests/test_trig_rules.py``.
"""

from __future__ import annotations

import math

import expecttest
import pytest
import torch
from complex_testing import (
    assert_unary_gradients_match_eager,
    aten_graph,
    compile_and_compare,
    dynamo_graph,
    normalize_graph,
    run_pass,
)

inf, nan = math.inf, math.nan
EDGE = [
    0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -3.0, inf, -inf, nan, 1e30, -1e30, 1e-30, 1e-40, 1e-310,
    100.0, -100.0, 3e38, 44.5, -45.0, 88.5, 89.0, -89.0, 200.0, 300.0, 355.0, 710.0, -710.0, 1500.0, 2200.0, 3.0,
]  # 32 values: the 1024-element grid is a multiple of 16, so eager runs its vectorized loop throughout
DTYPES = [torch.complex64, torch.complex128]
# Eager computes sinh/cosh/sin/cos of the parts with glibc's scalar libm, the
# rewrite with torch's (Sleef) kernels: finite results may differ in the last bits.
TOL = {torch.complex64: {"rtol": 2e-5, "atol": 1e-6}, torch.complex128: {"rtol": 1e-12, "atol": 1e-12}}

OPS = {
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "log2": torch.log2,
    "log10": torch.log10,
    "exp2": torch.exp2,
    "rsqrt": torch.rsqrt,
    "expm1": torch.expm1,
}



def _grid(dtype, edge):
    if edge:
        return torch.tensor([complex(a, b) for a in EDGE for b in EDGE], dtype=dtype)
    return torch.randn(336, dtype=dtype) * 3


def _check(actual, expected, dtype):
    a, e = torch.view_as_real(actual), torch.view_as_real(expected)
    torch.testing.assert_close(a, e, equal_nan=True, **TOL[dtype])
    zeros = (a == 0) & (e == 0)
    assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros]))


@pytest.mark.parametrize("edge", [False, True], ids=["random", "edge"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", list(OPS))
def test_matches_eager(name, dtype, edge):
    op = OPS[name]

    def fn(z):
        return op(z)

    z = _grid(dtype, edge)
    expected = fn(z)
    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    (actual,) = gm(z)
    _check(actual, expected, dtype)
    export_gm = aten_graph(fn, z)
    aten_report = run_pass(export_gm)
    _check(export_gm(z), expected, dtype)
    for r in (report, aten_report):
        assert r.count("bridged") + r.count("kept") == 0, r.format()
        assert r.count("rewritten") > 0


# Points on both axes (signed zeros), the negative real axis and generic ones.
GRAD_POINTS = [
    (0.0, 0.0), (1.5, 0.0), (-2.0, 0.0), (-2.0, -0.0), (0.0, 1.25), (-0.0, -0.75),
    (0.0, -3.0), (0.7, -1.1), (-1.3, 2.2), (2.5, 0.4), (-0.4, -0.6), (3.0, 5.0),
    (-50.0, 0.3), (0.3, 50.0), (1e-5, -1e-5), (-0.5, 0.0),
]


@pytest.mark.parametrize("name", list(OPS))
def test_gradients_match_eager(name):
    op = OPS[name]
    if name in ("rsqrt", "log2", "log10"):  # singular at 0: no gradient to compare there
        points = [p for p in GRAD_POINTS if p != (0.0, 0.0)]
    else:
        points = GRAD_POINTS

    assert_unary_gradients_match_eager(op, points)


def test_compiled_chain_forward_backward():
    def fn(x, w):
        z = torch.view_as_complex(x)
        y = torch.sin(z) * torch.cos(w) + torch.tanh(z * 0.5)
        y = torch.sinh(y * 0.3) - torch.cosh(z * 0.2) + torch.tan(w * 0.1)
        y = torch.expm1(y * 0.1) + torch.log2(y + 3) + torch.exp2(z * 0.2) + torch.rsqrt(w + 2)
        return torch.view_as_real(y), torch.log10(y).abs().sum()

    x, w = torch.randn(4, 8, 2), torch.randn(8, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, x, w, atol=1e-4, rtol=1e-4)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_tanh_dump(self):
        z = torch.randn(3, dtype=torch.complex64)
        gm = dynamo_graph(lambda z: torch.tanh(z), z)
        run_pass(gm)
        _check(gm(z)[0], torch.tanh(z), torch.complex64)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        signbit: "b8[3]" = torch.signbit(getitem)
        neg: "f32[3]" = -getitem
        where: "f32[3]" = torch.where(signbit, neg, getitem);  signbit = neg = None
        sin: "f32[3]" = torch.sin(getitem_1)
        cos: "f32[3]" = torch.cos(getitem_1)
        gt: "b8[3]" = where > 44
        where_1: "f32[3]" = torch.where(gt, 0.0, getitem)
        sinh: "f32[3]" = torch.sinh(where_1)
        cosh: "f32[3]" = torch.cosh(where_1);  where_1 = None
        mul: "f32[3]" = sinh * sinh
        mul_1: "f32[3]" = cos * cos
        add: "f32[3]" = mul + mul_1;  mul = mul_1 = None
        mul_2: "f32[3]" = sinh * cosh;  sinh = cosh = None
        truediv: "f32[3]" = mul_2 / add;  mul_2 = None
        mul_3: "f32[3]" = sin * cos
        truediv_1: "f32[3]" = mul_3 / add;  mul_3 = add = None
        where_2: "f32[3]" = torch.where(gt, where, 45.0);  where = None
        sub: "f32[3]" = where_2 - 44;  where_2 = None
        mul_4: "f32[3]" = 4.0 * sin
        mul_5: "f32[3]" = mul_4 * cos;  mul_4 = None
        truediv_2: "f32[3]" = mul_5 / 1.6516362661361307e+38;  mul_5 = None
        gt_1: "b8[3]" = sub > 44
        truediv_3: "f32[3]" = truediv_2 / 1.6516362661361307e+38
        where_3: "f32[3]" = torch.where(gt_1, 0.0, sub);  sub = None
        mul_6: "f32[3]" = 2.0 * where_3;  where_3 = None
        exp: "f32[3]" = torch.exp(mul_6);  mul_6 = None
        truediv_4: "f32[3]" = truediv_2 / exp;  truediv_2 = exp = None
        where_4: "f32[3]" = torch.where(gt_1, truediv_3, truediv_4);  gt_1 = truediv_3 = truediv_4 = None
        detach: "f32[3]" = getitem.detach()
        full_like: "f32[3]" = torch.full_like(detach, 1.0)
        copysign: "f32[3]" = torch.copysign(full_like, detach);  full_like = detach = None
        where_5: "f32[3]" = torch.where(gt, copysign, truediv);  copysign = truediv = None
        where_6: "f32[3]" = torch.where(gt, where_4, truediv_1);  gt = where_4 = truediv_1 = None
        detach_1: "f32[3]" = getitem.detach();  getitem = None
        detach_2: "f32[3]" = getitem_1.detach();  getitem_1 = None
        detach_3: "f32[3]" = cos.detach();  cos = None
        detach_4: "f32[3]" = sin.detach();  sin = None
        isinf: "b8[3]" = torch.isinf(detach_1)
        isfinite: "b8[3]" = torch.isfinite(detach_2)
        full_like_1: "f32[3]" = torch.full_like(detach_1, 1.0)
        copysign_1: "f32[3]" = torch.copysign(full_like_1, detach_1);  full_like_1 = None
        eq: "b8[3]" = detach_2 == 0
        eq_1: "b8[3]" = detach_1 == 0
        or_: "b8[3]" = eq | eq_1;  eq = eq_1 = None
        where_7: "f32[3]" = torch.where(or_, detach_1, nan);  or_ = None
        where_8: "f32[3]" = torch.where(isinf, copysign_1, where_7);  copysign_1 = where_7 = None
        abs_1: "f32[3]" = detach_2.abs()
        gt_2: "b8[3]" = abs_1 > 1;  abs_1 = None
        and_: "b8[3]" = isfinite & gt_2;  gt_2 = None
        mul_7: "f32[3]" = detach_4 * detach_3;  detach_4 = detach_3 = None
        full_like_2: "f32[3]" = torch.full_like(mul_7, 0.0)
        copysign_2: "f32[3]" = torch.copysign(full_like_2, mul_7);  full_like_2 = mul_7 = None
        full_like_3: "f32[3]" = torch.full_like(detach_2, 0.0)
        copysign_3: "f32[3]" = torch.copysign(full_like_3, detach_2);  full_like_3 = None
        where_9: "f32[3]" = torch.where(and_, copysign_2, copysign_3);  and_ = copysign_2 = copysign_3 = None
        eq_2: "b8[3]" = detach_2 == 0
        where_10: "f32[3]" = torch.where(eq_2, detach_2, nan);  eq_2 = detach_2 = None
        where_11: "f32[3]" = torch.where(isinf, where_9, where_10);  isinf = where_9 = where_10 = None
        isfinite_1: "b8[3]" = torch.isfinite(detach_1);  detach_1 = None
        and__1: "b8[3]" = isfinite_1 & isfinite;  isfinite_1 = isfinite = None
        where_12: "f32[3]" = torch.where(and__1, where_5, where_8);  where_5 = where_8 = None
        where_13: "f32[3]" = torch.where(and__1, where_6, where_11);  and__1 = where_6 = where_11 = None
        stack: "f32[3, 2]" = torch.stack((where_12, where_13), -1);  where_12 = where_13 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")
