"""Inverse trig and inverse hyperbolic rules against eager.

Each op runs through the pass on Dynamo's graph and on torch.export's aten
graph and must equal eager, NaNs and signed zeros included, on: random values;
a 32×32 grid of edge values (0, -0, ±1, values next to 1, ±inf, nan, huge,
tiny, subnormal); a 32×32 grid of glibc's branch thresholds for the dtype
(1/ε, 16/ε, ε/8, ε², ε/2, ε, 3/4, 3/2 and their neighbouring floats); and
random points in the regions where glibc switches formulas (near ±i and ±1,
on the unit circle, magnitudes 1e-300 .. 1e300), all in one tensor per op
and dtype, checked kind by kind. Every size is a multiple of 16, so eager runs
its vectorized loop throughout. Gradients are compared with
eager autograd in float64; one chain is compiled with Inductor forward and
backward. Compiled with the post-grad companion, each op's backward is
eager's derivative formula (rules/eager_derivative.py): its gradients are
compared with eager's on the grid, branch cuts included. Refresh the dump with
``EXPECTTEST_ACCEPT=1 pytest tests/test_inverse_trig_rules.py``.
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

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks

inf, nan = math.inf, math.nan
EDGE = [
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.0, inf, -inf, nan, 1e30, -1e30, 1e-30, 1e-40, 1e-310,
    3e38, -3e38, 1e300, 0.999, -1.001, 1.25, -0.75, 1e-8, -1e-20, 1e20, 2.5, 0.25, 1e-4, 3.0, 1e10, -1e-310,
]  # 32 values: 1024 elements
DTYPES = [torch.complex64, torch.complex128]
# Eager computes log/log1p/atan2/hypot/sqrt of the parts with glibc's scalar
# libm, the rewrite with torch's kernels: finite results differ in the last
# bits (at most 4 ulps measured).
TOL = {torch.complex64: {"rtol": 2e-5, "atol": 1e-6}, torch.complex128: {"rtol": 1e-12, "atol": 1e-12}}

OPS = {
    "asinh": torch.asinh,
    "asin": torch.asin,
    "acosh": torch.acosh,
    "acos": torch.acos,
    "atanh": torch.atanh,
    "atan": torch.atan,
}


def _thresholds(dtype):
    """glibc's branch thresholds for the part dtype, each with both neighbouring floats."""
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    eps = torch.finfo(part).eps
    values = []
    for b in (1 / eps, 16 / eps, eps / 8, eps * eps, eps / 2, eps, 0.75, 1.5):
        t = torch.tensor(b, dtype=part)
        values += [torch.nextafter(t, torch.zeros_like(t)).item(), b, torch.nextafter(t, t * 2).item()]
    below_half = torch.nextafter(torch.tensor(0.5, dtype=part), torch.tensor(0.0, dtype=part)).item()
    below_one = torch.nextafter(torch.tensor(1.0, dtype=part), torch.tensor(0.0, dtype=part)).item()
    above_one = torch.nextafter(torch.tensor(1.0, dtype=part), torch.tensor(2.0, dtype=part)).item()
    return values + [below_half, below_one, above_one, -1.0, -1 / eps, -eps / 8, -1.5, -0.0]  # 32


def _regions(gen):
    """Random points where glibc switches formulas (float64, 1024 of them)."""
    n = 256

    def uniform(lo, hi):
        return lo + (hi - lo) * torch.rand(n, generator=gen, dtype=torch.float64)

    def signs():
        return torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).double()

    def magnitude(lo, hi):
        return 10.0 ** uniform(lo, hi)

    return torch.cat([
        torch.complex(magnitude(-40, 0) * signs(), uniform(0.5, 1.6) * signs()),  # near ±i
        torch.complex(uniform(0.5, 1.6) * signs(), magnitude(-40, 0) * signs()),  # near ±1
        torch.polar(1 + uniform(-1e-3, 1e-3), uniform(-math.pi, math.pi)),  # the unit circle
        torch.complex(magnitude(-300, 300) * signs(), magnitude(-300, 300) * signs()),
    ])


KINDS = ("random", "edge", "thresholds", "regions")


def _grid(dtype):
    """All kinds of test values in one tensor (one trace per op and dtype), and where each kind lies."""
    gen = torch.Generator().manual_seed(0)
    thresholds = _thresholds(dtype)
    parts = {
        "random": torch.randn(512, generator=gen, dtype=dtype) * 3,
        "edge": torch.tensor([complex(a, b) for a in EDGE for b in EDGE], dtype=dtype),
        "thresholds": torch.tensor([complex(a, b) for a in thresholds for b in thresholds], dtype=dtype),
        "regions": _regions(gen).to(dtype),
    }
    spans, start = {}, 0
    for kind in KINDS:
        spans[kind] = slice(start, start + parts[kind].numel())
        start += parts[kind].numel()
    return torch.cat([parts[kind] for kind in KINDS]), spans


def _check(actual, expected, dtype, what=""):
    a, e = torch.view_as_real(actual), torch.view_as_real(expected)
    torch.testing.assert_close(a, e, equal_nan=True, **TOL[dtype], msg=lambda m: f"{what}: {m}")
    zeros = (a == 0) & (e == 0)
    assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros])), f"{what}: signed zeros differ"


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", list(OPS))
def test_matches_eager(name, dtype):
    op = OPS[name]

    def fn(z):
        return op(z)

    z, spans = _grid(dtype)
    assert all((span.stop - span.start) % 16 == 0 for span in spans.values())
    expected = fn(z)
    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    (actual,) = gm(z)
    export_gm = aten_graph(fn, z)
    aten_report = run_pass(export_gm)
    aten_actual = export_gm(z)
    for kind, span in spans.items():
        _check(actual[span], expected[span], dtype, f"Dynamo graph, {kind}")
        _check(aten_actual[span], expected[span], dtype, f"aten graph, {kind}")
    for r in (report, aten_report):
        assert r.count("bridged") + r.count("kept") == 0, r.format()
        assert r.count("rewritten") > 0
    # (computed_once's views are for torch.compile's traced formulas only)
    assert not export_gm.graph.find_nodes(op="call_function", target=torch.ops.aten.as_strided.default)


def test_aliases_and_methods():
    z = torch.randn(16, dtype=torch.complex128)

    def fn(z):
        return torch.arcsin(z) + torch.arccos(z) + torch.arctan(z) + z.arcsinh() + z.arccosh() + z.atanh()

    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert report.count("rewritten") >= 6
    _check(gm(z)[0], fn(z), torch.complex128)


# Ordinary points in every region of glibc's kernel (and their mirror images,
# as asin/acos/acosh run the kernel on -y + ix), including |y| == 1 and
# |x| == 1 exactly, where glibc's formula holds that part constant.
GRAD_POINTS = [
    (0.7, -1.1), (-1.3, 2.2), (2.5, 0.4), (-0.4, -0.6), (3.0, 5.0), (-50.0, 0.3), (0.3, 50.0), (1e-5, -1e-5),
    (1e-9, 0.3), (0.3, -1e-9), (0.3, 1.2), (1.2, -0.3), (0.2, 1.0), (-1.0, 0.2), (0.6, 1e-10), (1e-10, -0.6),
    (1e17, 3.0), (3.0, -1e17), (0.999, 0.01), (-0.01, -0.999), (1e-20, 1.7), (1.7, 1e-20), (0.9, 0.4),
    (1e-12, -1.0), (1.0, -1e-12), (1e-40, 0.5), (0.5, 1e-40), (2e15, 1e15), (1e-3, 1e16),
    (1e-300, 2e-300), (2e-300, 0.5), (0.5, -1e-310), (1e150, -1e150), (5e-324, 0.3),
]
# Points on the axes but off each op's branch cuts (eager's derivative formula
# does not follow the signed zero that picks the side of a cut).
AXIS_POINTS = {
    "asinh": [(0.0, 0.0), (1.5, 0.0), (-2.0, -0.0), (0.0, 0.5), (-0.0, -0.75)],
    "atan": [(0.0, 0.0), (1.5, 0.0), (-2.0, -0.0), (0.0, 0.5), (-0.0, -0.75)],
    "asin": [(0.0, 0.0), (0.0, 1.5), (-0.0, -2.0), (0.5, 0.0), (-0.75, -0.0)],
    "acos": [(0.0, 0.0), (0.0, 1.5), (-0.0, -2.0), (0.5, 0.0), (-0.75, -0.0)],
    "atanh": [(0.0, 0.0), (0.0, 1.5), (-0.0, -2.0), (0.5, 0.0), (-0.75, -0.0)],
    "acosh": [(1.5, 0.0), (2.0, -0.0), (0.0, 1.5), (-0.0, -0.5)],
}


@pytest.mark.parametrize("name", list(OPS))
def test_gradients_match_eager(name):
    assert_unary_gradients_match_eager(OPS[name], GRAD_POINTS + AXIS_POINTS[name])


def test_compiled_chain_forward_backward():
    # atanh in complex128: glibc's exact x² + y² - 1 (Dekker products, which
    # FMA contraction or reassociation would break) on points near |z| = 1.
    def fn(x, w):
        z = torch.view_as_complex(x)
        y = torch.atanh(z) * w
        return torch.view_as_real(y), y.abs().sum()

    gen = torch.Generator().manual_seed(0)
    radius = 1 + 1e-6 * torch.randn(16, generator=gen, dtype=torch.float64)
    near_circle = torch.polar(radius, torch.rand(16, generator=gen, dtype=torch.float64) * 6)
    z = torch.cat([near_circle, torch.randn(16, generator=gen, dtype=torch.complex128)])
    x, w = torch.view_as_real(z).clone(), torch.randn(32, generator=gen, dtype=torch.complex128)
    # Inductor's default inlining of the rewritten pointwise nodes
    # (realize_opcount_threshold=30) makes its code generation for forward and
    # backward several times slower; buffers are realized sooner here.
    with torch._inductor.config.patch(realize_opcount_threshold=4):
        report, fallbacks = compile_and_compare(fn, x, w, atol=1e-9, rtol=1e-9)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_atanh_dump(self):
        z = torch.randn(3, dtype=torch.complex64)
        gm = dynamo_graph(lambda z: torch.atanh(z), z)
        run_pass(gm)
        _check(gm(z)[0], torch.atanh(z), torch.complex64)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        detach: "f32[3]" = getitem.detach()
        detach_1: "f32[3]" = getitem_1.detach()
        isfinite: "b8[3]" = torch.isfinite(detach)
        isfinite_1: "b8[3]" = torch.isfinite(detach_1)
        and_: "b8[3]" = isfinite & isfinite_1;  isfinite = isfinite_1 = None
        eq: "b8[3]" = detach == 0;  detach = None
        eq_1: "b8[3]" = detach_1 == 0;  detach_1 = None
        and__1: "b8[3]" = eq & eq_1;  eq = eq_1 = None
        invert: "b8[3]" = ~and__1;  and__1 = None
        and__2: "b8[3]" = and_ & invert;  and_ = invert = None
        abs_1: "f32[3]" = torch.abs(getitem)
        abs_2: "f32[3]" = torch.abs(getitem_1)
        ge: "b8[3]" = abs_1 >= 134217728.0;  abs_1 = None
        ge_1: "b8[3]" = abs_2 >= 134217728.0;  abs_2 = None
        or_: "b8[3]" = ge | ge_1;  ge = ge_1 = None
        abs_3: "f32[3]" = torch.abs(getitem)
        abs_4: "f32[3]" = torch.abs(getitem_1)
        le: "b8[3]" = abs_4 <= 1;  abs_4 = None
        invert_1: "b8[3]" = ~le
        le_1: "b8[3]" = abs_3 <= 1;  abs_3 = None
        and__3: "b8[3]" = invert_1 & le_1;  invert_1 = le_1 = None
        truediv: "f32[3]" = getitem / 2
        truediv_1: "f32[3]" = getitem_1 / 2
        hypot: "f32[3]" = torch.hypot(truediv, truediv_1);  truediv = truediv_1 = None
        truediv_2: "f32[3]" = 1 / getitem
        truediv_3: "f32[3]" = getitem / getitem_1
        truediv_4: "f32[3]" = truediv_3 / getitem_1;  truediv_3 = None
        truediv_5: "f32[3]" = getitem / hypot
        truediv_6: "f32[3]" = truediv_5 / hypot;  truediv_5 = hypot = None
        truediv_7: "f32[3]" = truediv_6 / 4;  truediv_6 = None
        where: "f32[3]" = torch.where(and__3, truediv_4, truediv_7);  and__3 = truediv_4 = truediv_7 = None
        where_1: "f32[3]" = torch.where(le, truediv_2, where);  le = truediv_2 = where = None
        detach_2: "f32[3]" = getitem_1.detach()
        full_like: "f32[3]" = torch.full_like(detach_2, 1.5707963267948966)
        copysign: "f32[3]" = torch.copysign(full_like, detach_2);  full_like = detach_2 = None
        abs_5: "f32[3]" = torch.abs(getitem)
        abs_6: "f32[3]" = torch.abs(getitem_1)
        invert_4: "b8[3]" = ~or_
        eq_2: "b8[3]" = abs_5 == 1
        and__4: "b8[3]" = invert_4 & eq_2;  invert_4 = eq_2 = None
        lt: "b8[3]" = abs_6 < 1.4210854715202004e-14
        and__5: "b8[3]" = and__4 & lt;  and__4 = lt = None
        detach_3: "f32[3]" = getitem.detach()
        full_like_1: "f32[3]" = torch.full_like(detach_3, 0.5)
        copysign_1: "f32[3]" = torch.copysign(full_like_1, detach_3);  full_like_1 = detach_3 = None
        log: "f32[3]" = torch.log(abs_6)
        sub: "f32[3]" = 0.6931471824645996 - log;  log = None
        mul: "f32[3]" = copysign_1 * sub;  copysign_1 = sub = None
        abs_7: "f32[3]" = torch.abs(getitem_1)
        ge_2: "b8[3]" = abs_7 >= 1.4210854715202004e-14;  abs_7 = None
        mul_1: "f32[3]" = getitem_1 * getitem_1
        where_2: "f32[3]" = torch.where(ge_2, mul_1, 0.0);  ge_2 = mul_1 = None
        add: "f32[3]" = 1 + getitem
        add_1: "f32[3]" = 1 + getitem
        mul_2: "f32[3]" = add * add_1;  add = add_1 = None
        add_2: "f32[3]" = where_2 + mul_2;  mul_2 = None
        sub_1: "f32[3]" = 1 - getitem
        sub_2: "f32[3]" = 1 - getitem
        mul_3: "f32[3]" = sub_1 * sub_2;  sub_1 = sub_2 = None
        add_3: "f32[3]" = where_2 + mul_3;  where_2 = mul_3 = None
        truediv_8: "f32[3]" = add_2 / add_3;  add_2 = None
        lt_1: "b8[3]" = truediv_8 < 0.5
        log_1: "f32[3]" = torch.log(truediv_8);  truediv_8 = None
        mul_4: "f32[3]" = 0.25 * log_1;  log_1 = None
        mul_5: "f32[3]" = 4 * getitem
        truediv_9: "f32[3]" = mul_5 / add_3;  mul_5 = add_3 = None
        log1p: "f32[3]" = torch.log1p(truediv_9);  truediv_9 = None
        mul_6: "f32[3]" = 0.25 * log1p;  log1p = None
        where_3: "f32[3]" = torch.where(lt_1, mul_4, mul_6);  lt_1 = mul_4 = mul_6 = None
        where_4: "f32[3]" = torch.where(and__5, mul, where_3);  and__5 = mul = where_3 = None
        lt_2: "b8[3]" = abs_5 < abs_6
        where_5: "f32[3]" = torch.where(lt_2, abs_6, abs_5)
        where_6: "f32[3]" = torch.where(lt_2, abs_5, abs_6);  lt_2 = abs_5 = abs_6 = None
        sub_3: "f32[3]" = 1 - where_5
        add_4: "f32[3]" = 1 + where_5
        mul_7: "f32[3]" = sub_3 * add_4;  sub_3 = add_4 = None
        lt_3: "b8[3]" = where_6 < 5.960464477539063e-08
        ge_3: "b8[3]" = where_5 >= 1
        invert_8: "b8[3]" = ~lt_3
        invert_9: "b8[3]" = ~ge_3;  ge_3 = None
        and__6: "b8[3]" = invert_8 & invert_9;  invert_8 = invert_9 = None
        ge_4: "b8[3]" = where_5 >= 0.75
        ge_5: "b8[3]" = where_6 >= 0.5
        or__1: "b8[3]" = ge_4 | ge_5;  ge_4 = ge_5 = None
        and__7: "b8[3]" = and__6 & or__1;  and__6 = or__1 = None
        mul_8: "f32[3]" = where_6 * where_6
        sub_4: "f32[3]" = mul_7 - mul_8;  mul_8 = None
        where_7: "f32[3]" = torch.where(lt_3, mul_7, sub_4);  lt_3 = mul_7 = sub_4 = None
        double: "f64[3]" = where_5.double();  where_5 = None
        double_1: "f64[3]" = where_6.double();  where_6 = None
        sub_5: "f64[3]" = double - 1.0
        add_5: "f64[3]" = double + 1.0;  double = None
        mul_9: "f64[3]" = sub_5 * add_5;  sub_5 = add_5 = None
        mul_10: "f64[3]" = double_1 * double_1;  double_1 = None
        add_6: "f64[3]" = mul_9 + mul_10;  mul_9 = mul_10 = None
        float_1: "f32[3]" = add_6.float();  add_6 = None
        neg: "f32[3]" = -float_1;  float_1 = None
        where_8: "f32[3]" = torch.where(and__7, neg, where_7);  and__7 = neg = where_7 = None
        mul_11: "f32[3]" = 2 * getitem_1
        atan2: "f32[3]" = torch.atan2(mul_11, where_8);  mul_11 = where_8 = None
        mul_12: "f32[3]" = 0.5 * atan2;  atan2 = None
        where_9: "f32[3]" = torch.where(or_, where_1, where_4);  where_1 = where_4 = None
        where_10: "f32[3]" = torch.where(or_, copysign, mul_12);  or_ = copysign = mul_12 = None
        detach_4: "f32[3]" = getitem.detach()
        detach_5: "f32[3]" = getitem_1.detach()
        isinf: "b8[3]" = torch.isinf(detach_5)
        isfinite_2: "b8[3]" = torch.isfinite(detach_5)
        isinf_1: "b8[3]" = torch.isinf(detach_4)
        eq_3: "b8[3]" = detach_4 == 0
        or__2: "b8[3]" = isinf_1 | eq_3;  isinf_1 = eq_3 = None
        full_like_2: "f32[3]" = torch.full_like(detach_4, 0.0)
        copysign_2: "f32[3]" = torch.copysign(full_like_2, detach_4);  full_like_2 = None
        full_like_3: "f32[3]" = torch.full_like(detach_5, 1.5707963267948966)
        copysign_3: "f32[3]" = torch.copysign(full_like_3, detach_5);  full_like_3 = None
        or__3: "b8[3]" = isinf | or__2
        where_11: "f32[3]" = torch.where(or__3, copysign_2, nan);  or__3 = copysign_2 = None
        and__8: "b8[3]" = or__2 & isfinite_2;  or__2 = isfinite_2 = None
        or__4: "b8[3]" = isinf | and__8;  isinf = and__8 = None
        full_like_4: "f32[3]" = torch.full_like(detach_4, nan)
        where_12: "f32[3]" = torch.where(or__4, copysign_3, full_like_4);  or__4 = copysign_3 = full_like_4 = None
        isfinite_3: "b8[3]" = torch.isfinite(detach_4);  detach_4 = None
        isfinite_4: "b8[3]" = torch.isfinite(detach_5);  detach_5 = None
        and__9: "b8[3]" = isfinite_3 & isfinite_4;  isfinite_3 = isfinite_4 = None
        where_13: "f32[3]" = torch.where(and__9, getitem, where_11);  getitem = where_11 = None
        where_14: "f32[3]" = torch.where(and__2, where_9, where_13);  where_9 = where_13 = None
        where_15: "f32[3]" = torch.where(and__9, getitem_1, where_12);  and__9 = getitem_1 = where_12 = None
        where_16: "f32[3]" = torch.where(and__2, where_10, where_15);  and__2 = where_10 = where_15 = None
        stack: "f32[3, 2]" = torch.stack((where_14, where_16), -1);  where_14 = where_16 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")


def test_the_report_says_why_a_graph_is_slow_to_compile():
    z = torch.randn(4, dtype=torch.complex64)
    slow = run_pass(dynamo_graph(lambda z: torch.asin(z) + z.acosh() * 2, z))
    note = slow.slow_compile_note()
    assert note and "torch.asin" in note and "Tensor.acosh" in note and "operator.mul" not in note, note
    assert note in slow.format()
    assert run_pass(dynamo_graph(lambda z: z.exp() * 2 / z, z)).slow_compile_note() is None


# Where eager's derivative formula and the derivative of the value's formula
# part: on each op's branch cuts (both signed zeros), eager's formula does not
# follow the side the signed zero picks.
CUT_POINTS = {
    "asinh": [(0.0, 2.0), (-0.0, 2.0), (0.0, -1.5), (-0.0, -1.5)],
    "atan": [(0.0, 2.0), (-0.0, 2.0), (0.0, -1.5), (-0.0, -1.5)],
    "asin": [(2.0, 0.0), (2.0, -0.0), (-1.5, 0.0), (-1.5, -0.0)],
    "acos": [(2.0, 0.0), (2.0, -0.0), (-1.5, 0.0), (-1.5, -0.0)],
    "atanh": [(2.0, 0.0), (2.0, -0.0), (-1.5, 0.0), (-1.5, -0.0)],
    "acosh": [(0.5, 0.0), (0.5, -0.0), (-2.0, 0.0), (-2.0, -0.0)],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", list(OPS))
def test_compiled_backward_is_eagers_derivative_formula(name, dtype):
    """Installed with its companion, the rule's backward is eager's derivative
    formula (rules/eager_derivative.py), rewritten after autograd: gradients
    equal eager's, on branch cuts too, every value of the grid included, and
    Inductor is left no complex op in either graph."""
    op = OPS[name]
    grid, _ = _grid(dtype)
    points = torch.tensor([complex(*p) for p in GRAD_POINTS + AXIS_POINTS[name] + CUT_POINTS[name]], dtype=dtype)
    z = torch.cat([points, grid[::8]])
    z = z[: len(z) // 16 * 16]  # eager's vectorized loop throughout (its scalar tail negates differently)
    seed = torch.randn(z.shape, generator=torch.Generator().manual_seed(1), dtype=dtype)

    def fn(z):
        return op(z) * seed

    eager_z, compiled_z = z.clone().requires_grad_(), z.clone().requires_grad_()
    expected = fn(eager_z)
    torch.view_as_real(expected).sum().backward()
    complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=False)
    torch._dynamo.reset()
    # Buffers realized sooner than Inductor's default: its code generation for
    # the long value formulas is several times faster (see the chain test).
    with torch._inductor.config.patch(realize_opcount_threshold=4), count_complex_fallbacks() as fallbacks:
        actual = torch.compile(fn, options=complex_pass.inductor_options(), fullgraph=True)(compiled_z)
        torch.view_as_real(actual).sum().backward()
    _check(actual.detach(), expected.detach(), dtype, "value")
    _check(compiled_z.grad, eager_z.grad, dtype, "gradient")
    assert fallbacks.beyond_edges == []
    pre_grad = complex_pass.reports[0]
    assert [d.op for d in pre_grad.decisions if d.action == "rewritten"][:1] == [f"torch.{name}"], pre_grad.format()


def test_eager_derivative_only_where_the_backward_is_rewritten():
    """The Function is emitted for Dynamo's graph with grad and the companion
    installed; without grad the formula runs as is, without the companion
    autograd differentiates the formula (its stand-ins kept)."""
    from inductor_complex.rules.eager_derivative import with_eager_derivative

    def calls(requires_grad, companion):
        z = torch.randn(4, dtype=torch.complex64, requires_grad=requires_grad)
        gm = dynamo_graph(torch.asin, z)
        complex_pass = ComplexToRealPass()
        with torch._inductor.config.patch(post_grad_custom_pre_pass=complex_pass.post_grad if companion else None):
            complex_pass(gm.graph)
        gm.recompile()
        count = len(gm.graph.find_nodes(op="call_function", target=with_eager_derivative))
        return count, len(gm.graph.find_nodes(op="call_function", target=torch.where))

    assert calls(True, True)[0] == 1
    (plain, plain_wheres), (smooth, smooth_wheres) = calls(False, True), calls(True, False)
    assert plain == smooth == 0
    assert plain_wheres < smooth_wheres  # the stand-ins


def test_slow_compile_note_counts_the_formula_behind_the_function():
    z = torch.randn(4, dtype=torch.complex64, requires_grad=True)
    gm = dynamo_graph(torch.asin, z)
    complex_pass = ComplexToRealPass()
    with torch._inductor.config.patch(post_grad_custom_pre_pass=complex_pass.post_grad):
        complex_pass(gm.graph)
    note = complex_pass.last_report.slow_compile_note()
    assert note and "torch.asin" in note, complex_pass.last_report.format()


def test_inductor_computes_the_formulas_shared_values_once(monkeypatch):
    """Inductor inlines a value into each of its readers unless the value's
    expression is long or holds an exp/log: glibc's square roots, read by a
    dozen selects each, made loop bodies of thousands of nodes. With
    ``computed_once`` it writes them once: asin's training step built 93k
    loop-body nodes at 0fa02bb (16 s to compile), 10.5k after (6 s)."""
    import torch._inductor.loop_body as loop_body

    sizes = []
    original = loop_body.LoopBody.__init__

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        sizes.append(len(self.root_block.graph.nodes))

    monkeypatch.setattr(loop_body.LoopBody, "__init__", counting)
    z = torch.randn(8, dtype=torch.complex64, requires_grad=True)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    torch._dynamo.reset()
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        torch.view_as_real(torch.compile(torch.asin, options=complex_pass.inductor_options())(z)).sum().backward()
    assert 0 < sum(sizes) < 30_000, (len(sizes), sum(sizes))


def test_bodies_of_higher_order_ops_keep_autograd_through_the_formulas():
    """Inductor's post-grad hook gets the top graphs only, not a torch.cond
    branch's backward: a rule there differentiates its formula (all real), so
    no complex op is left to Inductor in either graph."""

    def fn(x, flag):
        z = torch.view_as_complex(x)
        out = torch.cond(flag, lambda z: torch.asin(z) * 2, lambda z: torch.atan(z) + 1, (z,))
        return torch.view_as_real(out)

    x = torch.randn(16, 2, generator=torch.Generator().manual_seed(0))
    complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=False)
    for flag in (torch.tensor(True), torch.tensor(False)):
        eager_x, compiled_x = x.clone().requires_grad_(), x.clone().requires_grad_()
        fn(eager_x, flag).sum().backward()
        torch._dynamo.reset()
        with torch._inductor.config.patch(realize_opcount_threshold=4), count_complex_fallbacks() as fallbacks:
            torch.compile(fn, options=complex_pass.inductor_options(), fullgraph=True)(compiled_x, flag).sum().backward()
        torch.testing.assert_close(compiled_x.grad, eager_x.grad, **TOL[torch.complex64])
        assert fallbacks.beyond_edges == []
