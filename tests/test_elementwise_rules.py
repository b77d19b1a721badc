"""Elementwise, reduction, creation and linalg rules against eager.

Each case runs the pass on Dynamo's graph and on torch.export's aten graph,
executes the rewritten graph on random values and on a grid of edge values
(0, -0, ±1, ±inf, nan, huge, tiny, subnormal, the negative real axis) and
compares it with eager, NaNs included. A chain of ops is compiled with
Inductor forward and backward; hypothesis draws random chains.
Refresh dumps with ``EXPECTTEST_ACCEPT=1 pytest tests/test_elementwise_rules.py``.
"""

from __future__ import annotations

import inspect
import math

import expecttest
import pytest
import torch
from complex_testing import (
    assert_close,
    aten_graph,
    compile_and_compare,
    dynamo_graph,
    normalize_graph,
    run_pass,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks

inf, nan = math.inf, math.nan
EDGE = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, inf, -inf, nan, 1e30, -1e30, 1e-30, 1e-40, 100.0, -100.0, 3e38, 89.0, 0.5]
DTYPES = [torch.complex64, torch.complex128]
# Eager's vectorized kernels fuse multiply-adds (FMA) that the rewrite rounds
# separately: results then differ in the last bits, tiny absolute amounts.
TOL = {torch.complex64: dict(rtol=2e-5, atol=1e-6), torch.complex128: dict(rtol=1e-12, atol=1e-12)}



def edge_grid(dtype):
    """Every pair of edge values as one complex vector (324 elements)."""
    return torch.tensor([complex(a, b) for a in EDGE for b in EDGE], dtype=dtype)


def _as_real(t):
    return torch.view_as_real(t) if t.is_complex() else t


def _compare(actual, expected, dtype):
    if isinstance(expected, torch.Tensor) and expected.dtype == torch.bool:
        assert torch.equal(actual, expected)
        return
    tol = TOL[dtype if dtype in TOL else torch.complex64]
    if expected.dtype in (torch.float64, torch.complex128):
        tol = TOL[torch.complex128]
    torch.testing.assert_close(_as_real(actual), _as_real(expected), equal_nan=True, **tol)


def _run_dynamo(fn, args):
    gm = dynamo_graph(fn, *args)
    report = run_pass(gm)
    # Dynamo orders graph inputs by first use: map them back to fn's parameters.
    names = list(inspect.signature(fn).parameters)
    order = [names.index(n.target[2:-1]) for n in gm.graph.nodes if n.op == "placeholder"]
    (actual,) = gm(*[args[i] for i in order])
    return actual, report, gm


def rewrite_and_compare(fn, *args, dtype=torch.complex64):
    """Both graph forms: numerics equal eager; returns (dynamo report, aten report, dynamo gm)."""
    expected = fn(*args)
    actual, dyn_report, gm = _run_dynamo(fn, args)
    _compare(actual, expected, dtype)
    export_gm = aten_graph(fn, *args)
    aten_report = run_pass(export_gm)
    _compare(export_gm(*args), expected, dtype)
    for report in (dyn_report, aten_report):
        assert report.count("bridged") + report.count("kept") == 0, report.format()
        assert report.count("rewritten") > 0
    return dyn_report, aten_report, gm


def _inputs(dtype, edge):
    """(z, w, r, mask): two complex vectors, a real one and a mask, 336 long.

    336 = 21 * 16: eager runs its vectorized loop on every element (a tail of
    fewer than 16 goes through its scalar loop, which rounds some edge cases
    differently, see ``neg``); the rules follow the vectorized path.
    """
    if edge:
        z = edge_grid(dtype)
        z = torch.cat([z, z[:12]])
        w = z.flip(0).roll(7)
        w[::3] = z[::3]  # equal operands: z - z, z / z on the edge values too
        r = torch.tensor(EDGE * 19, dtype=z.real.dtype)[:336].roll(3)
    else:
        z = torch.randn(336, dtype=dtype)
        w = torch.randn(336, dtype=dtype)
        r = torch.randn(336, dtype=z.real.dtype)
    return z, w, r, torch.rand(336) > 0.5


UNARY = {
    "neg": lambda z: -z,
    "positive": lambda z: +z,
    "reciprocal": lambda z: torch.reciprocal(z),
    "square": lambda z: torch.square(z),
    "pow2": lambda z: z**2,
    "abs": lambda z: torch.abs(z),
    "angle": lambda z: torch.angle(z),
    "sgn": lambda z: torch.sgn(z),
    "exp": lambda z: torch.exp(z),
    "sigmoid": lambda z: torch.sigmoid(z),
    "log": lambda z: torch.log(z),
    "sqrt": lambda z: torch.sqrt(z),
    "isnan": lambda z: torch.isnan(z),
    "isinf": lambda z: torch.isinf(z),
    "isfinite": lambda z: torch.isfinite(z),
    "number_plus": lambda z: z + 2.5,
    "number_radd": lambda z: (1.5 - 2j) + z,
    "number_rsub": lambda z: 2 - z,
    "number_div": lambda z: z / 3.0,
    "complex_number_div": lambda z: z / (3.0 - 1e-3j),
    "number_over": lambda z: 2.0 / z,
    "eq_number": lambda z: z == 1.0,
}
BINARY = {
    "add": lambda z, w: z + w,
    "add_alpha": lambda z, w: torch.add(z, w, alpha=2.5),
    "sub": lambda z, w: z - w,
    "sub_alpha": lambda z, w: torch.sub(z, w, alpha=-0.5),
    "div": lambda z, w: z / w,
    "eq": lambda z, w: z == w,
    "ne": lambda z, w: torch.ne(z, w),
    "logaddexp": lambda z, w: torch.logaddexp(z, w),
}
WITH_REAL = {
    "add_real": lambda z, r: z + r,
    "real_add": lambda r, z: r + z,
    "real_sub": lambda r, z: r - z,
    "div_real": lambda z, r: z / r,
    "real_div": lambda r, z: r / z,
    "eq_real": lambda z, r: z == r,
    "logaddexp_real": lambda z, r: torch.logaddexp(z, r),
    "where_real": lambda m, z, r: torch.where(m, z, r),
}
SELECT = {
    "where": lambda m, z, w: torch.where(m, z, w),
    "where_number": lambda m, z: torch.where(m, z, 2j),
    "masked_fill": lambda z, m: z.masked_fill(m, 1 - 2j),
    "masked_fill_real": lambda z, m: z.masked_fill(m, 3.0),
}


def _call(fn, z, w, r, m):
    pool = {"z": z, "w": w, "r": r, "m": m}
    return [pool[name] for name in inspect.signature(fn).parameters]


@pytest.mark.parametrize("edge", [False, True], ids=["random", "edge"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", [*UNARY, *BINARY, *WITH_REAL, *SELECT])
def test_elementwise_matches_eager(name, dtype, edge):
    fn = {**UNARY, **BINARY, **WITH_REAL, **SELECT}[name]
    args = _call(fn, *_inputs(dtype, edge))
    rewrite_and_compare(fn, *args, dtype=dtype)
    if edge and name not in ("div", "real_div"):
        # Signed zeros too (they pick the side of a later branch cut). Division
        # is exempt: eager's FMA can leave a subnormal where the rewrite has ±0.
        expected, actual = _as_real(fn(*args)), _as_real(_run_dynamo(fn, args)[0])
        zeros = (expected == 0) & (actual == 0)
        assert torch.equal(torch.signbit(actual[zeros]), torch.signbit(expected[zeros]))


def test_real_plus_complex_number():
    # A real tensor plus a complex number: the imaginary part is the number, exactly.
    r = torch.tensor(EDGE)
    rewrite_and_compare(lambda r: torch.view_as_real(r + 2j), r)


def test_signed_zeros_follow_eager():
    # -0.0 + 0.0 is +0.0: sqrt on the negative real axis then takes eager's side.
    z = torch.tensor([complex(-4.0, -0.0)] * 3)

    def fn(z, r):
        return torch.sqrt(z + r), torch.log(z - r)

    expected = fn(z, torch.zeros(3))
    assert expected[0][0].imag > 0 and expected[1][0].imag > 0  # the +0 side
    gm = dynamo_graph(fn, z, torch.zeros(3))
    run_pass(gm)
    for a, e in zip(gm(z, torch.zeros(3)), expected):
        assert torch.equal(torch.signbit(_as_real(a)), torch.signbit(_as_real(e)))
        _compare(a, e, torch.complex64)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("edge", [False, True], ids=["random", "edge"])
def test_reductions_match_eager(dtype, edge):
    z = (edge_grid(dtype) if edge else torch.randn(324, dtype=dtype)).reshape(18, 18)
    cases = [
        lambda z: z.sum(),
        lambda z: z.sum(0),
        lambda z: torch.sum(z, -1, keepdim=True),
        lambda z: z.mean(),
        lambda z: z.mean(-1),
        lambda z: z.cumsum(1),
        lambda z: torch.linalg.vector_norm(z, dim=1),
        lambda z: torch.linalg.vector_norm(z, 1, dim=0),
        lambda z: torch.linalg.vector_norm(z, float("inf")),
        lambda z: z.norm(dim=-1),
    ]
    for fn in cases:
        rewrite_and_compare(fn, z, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_creation_matches_eager(dtype):
    z, r = edge_grid(dtype), torch.tensor(EDGE * 18, dtype=edge_grid(dtype).real.dtype)
    rewrite_and_compare(lambda z: torch.zeros_like(z) + z, z, dtype=dtype)
    rewrite_and_compare(lambda z: torch.ones_like(z) * z, z, dtype=dtype)
    rewrite_and_compare(lambda z: torch.full_like(z, 2 - 1j) * z, z, dtype=dtype)
    rewrite_and_compare(lambda r: torch.full_like(r, 2 - 1j, dtype=dtype) + r, r, dtype=dtype)
    rewrite_and_compare(lambda z: torch.zeros_like(z, dtype=z.real.dtype) + z.real, z, dtype=dtype)
    rewrite_and_compare(lambda z: torch.full_like(z, 3.0, dtype=torch.float64) + z.abs(), z, dtype=dtype)


def test_constant_factories_are_rewritten():
    # All-constant factories are recorded through the rule's tracer, not baked in.
    def fn(z):
        return z + torch.zeros(4, dtype=torch.complex64) + torch.full((4,), 2 - 1j, dtype=torch.complex64)

    z = torch.randn(4, dtype=torch.complex64)
    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    assert report.count("kept") + report.count("bridged") == 0, report.format()
    assert not any(n.op == "get_attr" for n in gm.graph.nodes)  # no constant baked in
    torch.testing.assert_close(gm(z)[0], fn(z))


RANDOM_FACTORIES = {
    "randn": lambda z: z + torch.randn(3, 4, dtype=z.dtype),
    "randn_size_tuple": lambda z: torch.randn((3, 4), dtype=torch.complex128) + z,
    "rand": lambda z: z + torch.rand(3, 4, dtype=z.dtype),
    "randn_like": lambda z: z + torch.randn_like(z),
    "rand_like_real_input": lambda z: torch.rand_like(z.real, dtype=z.dtype) + z,
}


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", list(RANDOM_FACTORIES))
def test_random_factories_draw_eagers_numbers(name, dtype):
    # Eager fills a complex random tensor's view_as_real; the rule makes the
    # same real draw, so one generator state gives eager's numbers exactly.
    fn, z = RANDOM_FACTORIES[name], torch.randn(3, 4, dtype=dtype)
    for make in (dynamo_graph, aten_graph):
        gm = make(fn, z)
        report = run_pass(gm)
        assert report.count("rewritten") >= 2 and not report.count("kept") and not report.count("bridged"), report.format()
        torch.manual_seed(7)
        want = fn(z)
        torch.manual_seed(7)
        got = gm(z)
        got = got[0] if isinstance(got, (list, tuple)) else got
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_random_factories_compile_with_symbolic_sizes():
    def fn(z):
        return z + torch.randn_like(z) + torch.rand(z.shape[0], dtype=z.dtype)

    complex_pass = ComplexToRealPass(fused_rotary=False)
    compiled = torch.compile(fn, dynamic=True, fullgraph=True, options={"pre_grad_custom_pass": complex_pass})
    # Inductor draws with its own generator unless it falls back to eager's.
    with torch._inductor.config.patch(fallback_random=True), count_complex_fallbacks() as fallbacks:
        for n in (5, 7):
            z = torch.randn(n, dtype=torch.complex64)
            torch.manual_seed(3)
            want = fn(z)
            torch.manual_seed(3)
            assert torch.equal(compiled(z), want)
    assert fallbacks.beyond_edges == [], fallbacks.ops
    report = complex_pass.last_report
    assert report.count("rewritten") and not report.count("kept") and not report.count("bridged"), report.format()


def test_random_like_of_a_transposed_tensor_is_kept():
    # Eager fills randn_like(x.T) in memory order, which follows the strides.
    fn = lambda z: torch.randn_like(z.T) + 1  # noqa: E731
    gm = dynamo_graph(fn, torch.randn(3, 4, dtype=torch.complex64))
    report = run_pass(gm)
    assert "non-contiguous result" in " ".join(d.reason for d in report.decisions), report.format()


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_linalg_matches_eager(dtype):
    a, b = torch.randn(3, 4, 5, dtype=dtype), torch.randn(3, 5, 6, dtype=dtype)
    rb = torch.randn(3, 5, 6, dtype=a.real.dtype)
    weight, bias = torch.randn(7, 5, dtype=dtype), torch.randn(7, dtype=dtype)
    rewrite_and_compare(lambda a, b: a @ b, a, b, dtype=dtype)
    rewrite_and_compare(lambda a, rb: a @ rb.to(a.dtype), a, rb, dtype=dtype)
    rewrite_and_compare(lambda a, b: torch.bmm(a, b), a, b, dtype=dtype)
    rewrite_and_compare(lambda a, b: torch.mm(a[0], b[0]), a, b, dtype=dtype)
    rewrite_and_compare(lambda a, b: a[0] @ b[0, :, 0], a, b, dtype=dtype)
    rewrite_and_compare(lambda a, b: torch.einsum("bij,bjk->bik", a, b), a, b, dtype=dtype)
    # FNO's per-mode product, with ellipsis, implicit output, a real operand.
    x, w = torch.randn(2, 3, 4, 5, dtype=dtype), torch.randn(3, 6, 4, 5, dtype=dtype)
    rewrite_and_compare(lambda x, w: torch.einsum("bixy,ioxy->boxy", x, w), x, w, dtype=dtype)
    rewrite_and_compare(lambda x, w: torch.einsum("...ixy,ioxy->...oxy", x, w), x, w, dtype=dtype)
    rewrite_and_compare(lambda x, w: torch.einsum("bixy,ioxy", x, w), x, w, dtype=dtype)
    rewrite_and_compare(lambda x, w: torch.einsum("bixy,ioxy->boxy", x, w.real.to(dtype)), x, w, dtype=dtype)
    rewrite_and_compare(lambda a, weight, bias: nn.functional.linear(a, weight, bias), a, weight, bias, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_in_place_ops_match_eager(dtype):
    def fn(z, w):
        z = z.clone()
        z += w
        z *= 2
        z -= w
        z /= w + 1
        z.neg_()
        return z

    z, w, _, _ = _inputs(dtype, edge=True)
    rewrite_and_compare(fn, z, w, dtype=dtype)


def test_in_place_write_lands_in_the_caller_tensor():
    def fn(x, w):
        z = torch.view_as_complex(x)
        z.mul_(w)
        z.add_(1j)
        return x * 1.0

    x, w = torch.randn(5, 2), torch.randn(5, dtype=torch.complex64)
    expected_x = x.clone()
    expected = fn(expected_x, w)
    gm = dynamo_graph(fn, x.clone(), w)
    report = run_pass(gm)
    actual_x = x.clone()
    torch.testing.assert_close(gm(actual_x, w)[0], expected)
    torch.testing.assert_close(actual_x, expected_x)
    assert report.count("bridged") + report.count("kept") == 0, report.format()


def test_refusals_are_kept():
    # Rules that refuse their arguments leave the op complex, with eager's numbers:
    # addmm with alpha=0 (eager skips the product, NaNs and all) and
    # vector_norm with ord=0 (a count of non-zeros, which no rule computes).
    def fn(z, a, b):
        count = torch.linalg.vector_norm(z, ord=0)
        return torch.addmm(z, a, b, alpha=0) + count, count

    z, a, b = (torch.randn(2, 2, dtype=torch.complex64) for _ in range(3))
    a[0, 0] = complex(float("nan"), 0.0)
    expected = fn(z, a, b)
    gm = dynamo_graph(fn, z, a, b)
    report = run_pass(gm)
    kept = {d.op for d in report.decisions if d.action in ("kept", "bridged")}
    assert {"torch._C._linalg.linalg_vector_norm", "torch.addmm"} <= kept, report.format()
    actual = gm(*gm.example_inputs)
    torch.testing.assert_close(actual[0], expected[0], equal_nan=True)
    torch.testing.assert_close(actual[1], expected[1])


def test_abs_angle_sgn_gradients_at_zero_match_eager():
    def fn(x):
        z = torch.view_as_complex(x)
        return z.abs() + torch.angle(z) + torch.view_as_real(torch.sgn(z)).sum(-1)

    x = torch.tensor([[0.0, 0.0], [3.0, -4.0], [-0.0, 0.0], [0.5, 0.0]])
    report, fallbacks = compile_and_compare(fn, x)
    assert report.count("bridged") == 0


def test_compiled_chain_forward_backward():
    def fn(x, w, r):
        z = torch.view_as_complex(x)
        y = (z * w + 1.5j) / (w - 2) - r
        y = torch.exp(y * 0.1)
        y = torch.log(y + 3) * torch.sqrt(y)
        y = y.reciprocal() + torch.square(y) - torch.sgn(y)
        s = y.mean(-1, keepdim=True) + y.cumsum(-1) @ w.unsqueeze(-1)
        return torch.view_as_real(s), y.abs().sum() + torch.angle(y).mean(), torch.linalg.vector_norm(y, dim=-1)

    x, w, r = torch.randn(4, 6, 2), torch.randn(6, dtype=torch.complex64), torch.randn(4, 6)
    report, fallbacks = compile_and_compare(fn, x, w, r)
    assert report.count("bridged") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_add_dump(self):
        z, r = torch.randn(3, dtype=torch.complex64), torch.randn(3)
        report, _, gm = rewrite_and_compare(lambda z, r: z + r, z, r)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]", L_r_: "f32[3]"):
        l_z_ = L_z_
        l_r_ = L_r_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        mul: "f32[3]" = 0.0 * l_r_
        add_1: "f32[3]" = 0.0 + mul;  mul = None
        add_2: "f32[3]" = getitem + l_r_;  getitem = l_r_ = None
        add_3: "f32[3]" = getitem_1 + add_1;  getitem_1 = add_1 = None
        stack: "f32[3, 2]" = torch.stack((add_2, add_3), -1);  add_2 = add_3 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_div_dump(self):
        z, w = torch.randn(3, dtype=torch.complex64), torch.randn(3, dtype=torch.complex64)
        _, _, gm = rewrite_and_compare(lambda z, w: z / w, z, w)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]", L_w_: "c64[3]"):
        l_z_ = L_z_
        l_w_ = L_w_
        view_as_real_1: "f32[3, 2]" = torch.view_as_real(l_w_);  l_w_ = None
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        getitem_2: "f32[3]" = view_as_real_1[(Ellipsis, 0)]
        getitem_3: "f32[3]" = view_as_real_1[(Ellipsis, 1)];  view_as_real_1 = None
        abs_1: "f32[3]" = getitem_2.abs()
        abs_2: "f32[3]" = getitem_3.abs()
        ge: "b8[3]" = abs_1 >= abs_2
        eq: "b8[3]" = abs_1 == 0
        eq_1: "b8[3]" = abs_2 == 0
        and_: "b8[3]" = eq & eq_1;  eq = eq_1 = None
        where: "f32[3]" = torch.where(ge, getitem_2, getitem_3)
        where_1: "f32[3]" = torch.where(ge, getitem_3, getitem_2);  getitem_3 = getitem_2 = None
        truediv_1: "f32[3]" = where_1 / where
        double: "f64[3]" = where_1.double();  where_1 = None
        double_1: "f64[3]" = truediv_1.double()
        double_2: "f64[3]" = where.double();  where = None
        mul: "f64[3]" = double * double_1;  double = double_1 = None
        add: "f64[3]" = mul + double_2;  mul = double_2 = None
        float_1: "f32[3]" = add.float();  add = None
        truediv_2: "f32[3]" = 1.0 / float_1;  float_1 = None
        double_3: "f64[3]" = getitem_1.double()
        double_4: "f64[3]" = truediv_1.double()
        double_5: "f64[3]" = getitem.double()
        mul_1: "f64[3]" = double_3 * double_4;  double_3 = double_4 = None
        add_1: "f64[3]" = mul_1 + double_5;  mul_1 = double_5 = None
        float_2: "f32[3]" = add_1.float();  add_1 = None
        double_6: "f64[3]" = getitem.double()
        double_7: "f64[3]" = truediv_1.double()
        double_8: "f64[3]" = getitem_1.double()
        mul_2: "f64[3]" = double_6 * double_7;  double_6 = double_7 = None
        add_2: "f64[3]" = mul_2 + double_8;  mul_2 = double_8 = None
        float_3: "f32[3]" = add_2.float();  add_2 = None
        where_2: "f32[3]" = torch.where(ge, float_2, float_3);  float_2 = float_3 = None
        mul_3: "f32[3]" = where_2 * truediv_2;  where_2 = None
        neg: "f32[3]" = -getitem
        double_9: "f64[3]" = neg.double();  neg = None
        double_10: "f64[3]" = truediv_1.double()
        double_11: "f64[3]" = getitem_1.double()
        mul_4: "f64[3]" = double_9 * double_10;  double_9 = double_10 = None
        add_3: "f64[3]" = mul_4 + double_11;  mul_4 = double_11 = None
        float_4: "f32[3]" = add_3.float();  add_3 = None
        neg_1: "f32[3]" = -getitem
        double_12: "f64[3]" = getitem_1.double()
        double_13: "f64[3]" = truediv_1.double();  truediv_1 = None
        double_14: "f64[3]" = neg_1.double();  neg_1 = None
        mul_5: "f64[3]" = double_12 * double_13;  double_12 = double_13 = None
        add_4: "f64[3]" = mul_5 + double_14;  mul_5 = double_14 = None
        float_5: "f32[3]" = add_4.float();  add_4 = None
        where_3: "f32[3]" = torch.where(ge, float_4, float_5);  ge = float_4 = float_5 = None
        mul_6: "f32[3]" = where_3 * truediv_2;  where_3 = truediv_2 = None
        where_4: "f32[3]" = torch.where(and_, abs_1, 1.0)
        truediv_3: "f32[3]" = getitem / where_4;  getitem = where_4 = None
        ones_like: "f32[3]" = torch.ones_like(abs_1);  abs_1 = None
        where_5: "f32[3]" = torch.where(and_, abs_2, ones_like);  abs_2 = ones_like = None
        truediv_4: "f32[3]" = getitem_1 / where_5;  getitem_1 = where_5 = None
        where_6: "f32[3]" = torch.where(and_, truediv_3, mul_3);  truediv_3 = mul_3 = None
        where_7: "f32[3]" = torch.where(and_, truediv_4, mul_6);  and_ = truediv_4 = mul_6 = None
        stack: "f32[3, 2]" = torch.stack((where_6, where_7), -1);  where_6 = where_7 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_abs_dump(self):
        _, _, gm = rewrite_and_compare(lambda z: torch.abs(z), torch.randn(3, dtype=torch.complex64))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        eq: "b8[3]" = getitem == 0
        eq_1: "b8[3]" = getitem_1 == 0
        and_: "b8[3]" = eq & eq_1;  eq = eq_1 = None
        where: "f32[3]" = torch.where(and_, 1.0, getitem);  getitem = None
        where_1: "f32[3]" = torch.where(and_, 0.0, getitem_1);  getitem_1 = None
        hypot: "f32[3]" = torch.hypot(where, where_1);  where = where_1 = None
        where_2: "f32[3]" = torch.where(and_, 0.0, hypot);  and_ = hypot = None
        return (where_2,)""")

    def test_exp_dump(self):
        _, _, gm = rewrite_and_compare(lambda z: torch.exp(z), torch.randn(3, dtype=torch.complex64))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        abs_1: "f32[3]" = getitem_1.abs()
        le: "b8[3]" = abs_1 <= 1.1754943508222875e-38;  abs_1 = None
        sin: "f32[3]" = torch.sin(getitem_1)
        where: "f32[3]" = torch.where(le, getitem_1, sin);  sin = None
        cos: "f32[3]" = torch.cos(getitem_1)
        where_1: "f32[3]" = torch.where(le, 1.0, cos);  le = cos = None
        gt: "b8[3]" = getitem > 88
        sub: "f32[3]" = getitem - 88
        where_2: "f32[3]" = torch.where(gt, sub, getitem);  sub = None
        mul: "f32[3]" = where * 1.6516362661361307e+38
        where_3: "f32[3]" = torch.where(gt, mul, where);  mul = where = None
        mul_1: "f32[3]" = where_1 * 1.6516362661361307e+38
        where_4: "f32[3]" = torch.where(gt, mul_1, where_1);  gt = mul_1 = where_1 = None
        gt_1: "b8[3]" = where_2 > 88
        sub_1: "f32[3]" = where_2 - 88
        where_5: "f32[3]" = torch.where(gt_1, sub_1, where_2);  sub_1 = where_2 = None
        mul_2: "f32[3]" = where_3 * 1.6516362661361307e+38
        where_6: "f32[3]" = torch.where(gt_1, mul_2, where_3);  mul_2 = where_3 = None
        mul_3: "f32[3]" = where_4 * 1.6516362661361307e+38
        where_7: "f32[3]" = torch.where(gt_1, mul_3, where_4);  gt_1 = mul_3 = where_4 = None
        gt_2: "b8[3]" = where_5 > 88
        where_8: "f32[3]" = torch.where(gt_2, 0.0, where_5);  where_5 = None
        exp_1: "f32[3]" = torch.exp(where_8);  where_8 = None
        mul_4: "f32[3]" = 3.4028234663852886e+38 * where_7
        mul_5: "f32[3]" = exp_1 * where_7;  where_7 = None
        where_9: "f32[3]" = torch.where(gt_2, mul_4, mul_5);  mul_4 = mul_5 = None
        mul_6: "f32[3]" = 3.4028234663852886e+38 * where_6
        mul_7: "f32[3]" = exp_1 * where_6;  exp_1 = where_6 = None
        where_10: "f32[3]" = torch.where(gt_2, mul_6, mul_7);  gt_2 = mul_6 = mul_7 = None
        isinf: "b8[3]" = torch.isinf(getitem)
        isfinite: "b8[3]" = torch.isfinite(getitem_1)
        invert: "b8[3]" = ~isfinite;  isfinite = None
        and_: "b8[3]" = isinf & invert;  isinf = invert = None
        gt_3: "b8[3]" = getitem > 0
        where_11: "f32[3]" = torch.where(gt_3, inf, 0.0)
        where_12: "f32[3]" = torch.where(and_, where_11, where_9);  where_11 = where_9 = None
        zeros_like: "f32[3]" = torch.zeros_like(getitem_1)
        copysign: "f32[3]" = torch.copysign(zeros_like, getitem_1);  zeros_like = None
        where_13: "f32[3]" = torch.where(gt_3, nan, copysign);  gt_3 = copysign = None
        where_14: "f32[3]" = torch.where(and_, where_13, where_10);  and_ = where_13 = where_10 = None
        eq: "b8[3]" = getitem_1 == 0
        isfinite_1: "b8[3]" = torch.isfinite(getitem);  getitem = None
        invert_1: "b8[3]" = ~isfinite_1;  isfinite_1 = None
        and__1: "b8[3]" = eq & invert_1;  eq = invert_1 = None
        where_15: "f32[3]" = torch.where(and__1, getitem_1, where_14);  and__1 = getitem_1 = where_14 = None
        stack: "f32[3, 2]" = torch.stack((where_12, where_15), -1);  where_12 = where_15 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_reduction_dump(self):
        _, _, gm = rewrite_and_compare(lambda z: z.mean(0), torch.randn(3, 2, dtype=torch.complex64))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3, 2]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        sum_1: "f32[2, 2]" = view_as_real.sum([0], keepdim = False);  view_as_real = None
        getitem: "f32[2]" = sum_1[(Ellipsis, 0)]
        getitem_1: "f32[2]" = sum_1[(Ellipsis, 1)];  sum_1 = None
        mul: "f32[2]" = getitem_1 * 0.0
        add: "f32[2]" = getitem + mul;  mul = None
        mul_1: "f32[2]" = add * 0.3333333432674408;  add = None
        mul_2: "f32[2]" = getitem * 0.0;  getitem = None
        sub: "f32[2]" = getitem_1 - mul_2;  getitem_1 = mul_2 = None
        mul_3: "f32[2]" = sub * 0.3333333432674408;  sub = None
        stack: "f32[2, 2]" = torch.stack((mul_1, mul_3), -1);  mul_1 = mul_3 = None
        select: "f32[2]" = torch.select(stack, -1, 0)
        select_1: "f32[2]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[2]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_matmul_dump(self):
        a, b = torch.randn(2, 3, dtype=torch.complex64), torch.randn(3, 2, dtype=torch.complex64)
        _, _, gm = rewrite_and_compare(lambda a, b: a @ b, a, b)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_a_: "c64[2, 3]", L_b_: "c64[3, 2]"):
        l_a_ = L_a_
        l_b_ = L_b_
        view_as_real_1: "f32[3, 2, 2]" = torch.view_as_real(l_b_);  l_b_ = None
        view_as_real: "f32[2, 3, 2]" = torch.view_as_real(l_a_);  l_a_ = None
        getitem_2: "f32[3, 2]" = view_as_real_1[(Ellipsis, 0)]
        getitem_3: "f32[3, 2]" = view_as_real_1[(Ellipsis, 1)];  view_as_real_1 = None
        stack: "f32[3, 2, 2]" = torch.stack((getitem_2, getitem_3), -1)
        neg: "f32[3, 2]" = -getitem_3;  getitem_3 = None
        stack_1: "f32[3, 2, 2]" = torch.stack((neg, getitem_2), -1);  neg = getitem_2 = None
        stack_2: "f32[3, 2, 2, 2]" = torch.stack((stack, stack_1), -3);  stack = stack_1 = None
        flatten: "f32[6, 2, 2]" = stack_2.flatten(-4, -3);  stack_2 = None
        flatten_1: "f32[6, 4]" = flatten.flatten(-2);  flatten = None
        flatten_2: "f32[2, 6]" = view_as_real.flatten(-2);  view_as_real = None
        matmul_1: "f32[2, 4]" = torch.matmul(flatten_2, flatten_1);  flatten_2 = flatten_1 = None
        unflatten: "f32[2, 2, 2]" = matmul_1.unflatten(-1, (-1, 2));  matmul_1 = None
        select: "f32[2, 2]" = torch.select(unflatten, -1, 0)
        select_1: "f32[2, 2]" = torch.select(unflatten, -1, 1);  unflatten = None
        complex_1: "c64[2, 2]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_creation_dump(self):
        _, _, gm = rewrite_and_compare(lambda z: torch.full_like(z, 1 - 1j) * z, torch.randn(3, dtype=torch.complex64))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        full_like_1: "f32[3]" = torch.full_like(getitem, 1.0, dtype = torch.float32, device = device(type='cpu'))
        full_like_2: "f32[3]" = torch.full_like(getitem, -1.0, dtype = torch.float32, device = device(type='cpu'));  getitem = None
        stack: "f32[3, 2]" = torch.stack((full_like_1, full_like_2), -1);  full_like_1 = full_like_2 = None
        getitem_1: "f32[3, 1]" = view_as_real[(Ellipsis, slice(0, 1, None))]
        getitem_2: "f32[3, 1]" = view_as_real[(Ellipsis, slice(1, 2, None))];  view_as_real = None
        mul_1: "f32[3, 2]" = stack * getitem_1;  getitem_1 = None
        flip: "f32[3, 2]" = stack.flip(-1);  stack = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f32[3, 2]" = -flip
        where: "f32[3, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_2: "f32[3, 2]" = where * getitem_2;  where = getitem_2 = None
        add: "f32[3, 2]" = mul_1 + mul_2;  mul_1 = mul_2 = None
        select: "f32[3]" = torch.select(add, -1, 0)
        select_1: "f32[3]" = torch.select(add, -1, 1);  add = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")

    def test_where_dump(self):
        m, z = torch.rand(3) > 0.5, torch.randn(3, dtype=torch.complex64)
        _, _, gm = rewrite_and_compare(lambda m, z: torch.where(m, z, 2j), m, z)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_m_: "b8[3]", L_z_: "c64[3]"):
        l_m_ = L_m_
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        where_1: "f32[3]" = torch.where(l_m_, getitem, 0.0);  getitem = None
        where_2: "f32[3]" = torch.where(l_m_, getitem_1, 2.0);  l_m_ = getitem_1 = None
        stack: "f32[3, 2]" = torch.stack((where_1, where_2), -1);  where_1 = where_2 = None
        select: "f32[3]" = torch.select(stack, -1, 0)
        select_1: "f32[3]" = torch.select(stack, -1, 1);  stack = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")


# ------------------------------------------------------------- hypothesis

CHAIN_OPS = {
    "add": lambda z, w: z + w,
    "sub_number": lambda z, w: z - (0.5 + 1j),
    "mul": lambda z, w: z * w,
    "div": lambda z, w: z / (w + 2),
    "neg": lambda z, w: -z,
    "reciprocal": lambda z, w: (z + 3).reciprocal(),
    "square": lambda z, w: torch.square(z) * 0.1,
    "exp": lambda z, w: torch.exp(z * 0.2),
    "log": lambda z, w: torch.log(z + 4),
    "sqrt": lambda z, w: torch.sqrt(z),
    "sgn": lambda z, w: torch.sgn(z) + z,
    "abs": lambda z, w: z * z.abs(),
    "angle": lambda z, w: z + torch.angle(z),
    "where": lambda z, w: torch.where(z.real > 0, z, w),
    "cumsum": lambda z, w: z.cumsum(-1) * 0.5,
}
# Reductions reassociate sums: with huge values the result is all cancellation,
# so the mean joins only the random-value chains.
COMPILED_CHAIN_OPS = {**CHAIN_OPS, "mean": lambda z, w: z - z.mean(-1, keepdim=True)}
# glibc-formula rules, hundreds of pointwise ops each: too slow to compile in
# every random chain, so they join only the (uncompiled) edge-value chains.
EDGE_CHAIN_OPS = {
    **CHAIN_OPS,
    "pow": lambda z, w: z ** (0.5 - 0.25j),
    "rpow": lambda z, w: 2 ** (z * 0.1),
    "tanh": lambda z, w: torch.tanh(z),
    "asinh": lambda z, w: torch.asinh(z),
    "atan": lambda z, w: torch.atan(z),
    "log1p": lambda z, w: torch.log1p(z),
    "expm1": lambda z, w: torch.expm1(z * 0.1),
}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(st.sampled_from(sorted(COMPILED_CHAIN_OPS)), min_size=3, max_size=6),
    shape=st.sampled_from([(5,), (3, 4), (2, 1, 3)]),
    seed=st.integers(0, 2**16),
)
def test_random_chains_compiled_match_eager(ops, shape, seed):
    torch.manual_seed(seed)

    def fn(x, w):
        z = torch.view_as_complex(x)
        for op in ops:
            z = COMPILED_CHAIN_OPS[op](z, w)
        return torch.view_as_real(z)

    x, w = torch.randn(*shape, 2), torch.randn(shape[-1], dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, x, w, atol=1e-4, rtol=1e-4)
    assert report.count("bridged") == 0, report.format()


@settings(max_examples=40, deadline=None)
@given(
    ops=st.lists(st.sampled_from(sorted(EDGE_CHAIN_OPS)), min_size=3, max_size=6),
    values=st.lists(st.sampled_from(EDGE), min_size=8, max_size=8),
)
def test_random_chains_on_edge_values_rewrite_matches_eager(ops, values):
    def fn(z, w):
        for op in ops:
            z = EDGE_CHAIN_OPS[op](z, w)
        return z

    # 64 elements: eager's vectorized path for all of them. Its scalar tail loop
    # (a length not a multiple of 16) rounds differently at the overflow edge
    # (FMA: (1e30+inf j)*(-1+3e38j) has imaginary part nan vectorized, -inf
    # scalar; sgn of a subnormal), and the rules follow the vectorized path.
    z = torch.tensor([complex(a, b) for a, b in zip(values[:4], values[4:])]).repeat(16)
    w = z.flip(0)
    expected = fn(z, w)
    actual, report, _ = _run_dynamo(fn, (z, w))
    assert report.count("bridged") == 0, report.format()
    # NaN/inf positions must match exactly; finite parts relative to the complex
    # magnitude, since chains amplify last-bit differences (FMA, libm vs Sleef):
    # square(sqrt(3e38j)) has a real part that is all cancellation.
    a, e = _as_real(actual), _as_real(expected)
    assert torch.equal(a.isnan(), e.isnan()) and torch.equal(a.isinf(), e.isinf()), (a, e)
    assert torch.equal(a[a.isinf()], e[e.isinf()])
    finite = a.isfinite() & e.isfinite()
    scale = torch.linalg.vector_norm(torch.nan_to_num(e, nan=0.0, posinf=0.0, neginf=0.0), dim=-1, keepdim=True)
    scale = scale.expand_as(e)
    assert ((a - e).abs() <= 1e-3 * scale + 1e-5)[finite].all(), (a, e)


# ------------------------------------------------------------- gradients

GRAD_OPS = {
    **{name: fn for name, fn in UNARY.items() if not name.startswith(("is", "eq"))},
    **{name: fn for name, fn in BINARY.items() if name not in ("eq", "ne")},
    # (Eager's backward of logaddexp with a real operand raises.)
    **{name: fn for name, fn in WITH_REAL.items() if name not in ("eq_real", "where_real", "logaddexp_real")},
    "mean": lambda z: z.mean(),
    "sum": lambda z: z.sum(),
    "cumsum": lambda z: z.cumsum(0),
    "vector_norm": lambda z: torch.linalg.vector_norm(z),
    "norm1": lambda z: torch.linalg.vector_norm(z, 1),
}


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_gradients_match_eager_including_the_axes(name):
    """Autograd through the rewritten graph (float64) equals eager's complex autograd,
    on points with a zero real or imaginary part too (where a ``where``/``abs``
    spelling could change the derivative without changing the value)."""
    fn = GRAD_OPS[name]

    def backend(gm, example_inputs):
        run_pass(gm)
        return gm.forward

    x = torch.randn(8, 2, dtype=torch.float64)
    y = torch.randn(8, 2, dtype=torch.float64)
    r = torch.randn(8, dtype=torch.float64)
    x[0, 1] = 0.0  # on the real axis
    x[1, 0] = 0.0  # on the imaginary axis
    x[2, 0], x[2, 1] = -2.0, 0.0  # negative real axis (sqrt/log branch cut, +0 side)
    y[3, 1] = 0.0
    pool = {"z": x, "w": y, "r": r, "m": torch.rand(8) > 0.5}
    names = list(inspect.signature(fn).parameters)

    def wrapped(*args):
        args = [torch.view_as_complex(a) if a.dim() == 2 else a for a in args]
        out = fn(*args)
        return torch.view_as_real(out) if out.is_complex() else out

    grads = []
    for compiled in (False, True):
        args = [pool[n].clone().requires_grad_(pool[n].is_floating_point()) for n in names]
        torch._dynamo.reset()
        out = (torch.compile(wrapped, backend=backend, fullgraph=True) if compiled else wrapped)(*args)
        torch.manual_seed(1)
        (out * torch.randn_like(out)).sum().backward()
        grads.append([a.grad for a in args if a.grad is not None])
    for actual, expected in zip(grads[1], grads[0]):
        torch.testing.assert_close(actual, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_symbolic_size_operands_are_eagers_python_numbers(dtype):
    # With dynamic shapes `z / n` takes a SymInt, a Python int in eager: the
    # rewrite computes with it as eager's wrapped number n + 0j (inf·0 terms included).
    def fn(z):
        n = z.shape[0]
        return z / n, z * n, n - z, z / (n * 0.5)

    z = edge_grid(dtype)
    gm = dynamo_graph(fn, z, dynamic=True)
    report = run_pass(gm)
    assert report.count("rewritten") == 4 and not report.count("kept"), report.format()
    for got, want in zip(gm(*gm.example_inputs), fn(z)):
        _compare(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_logical_ops_and_all_any_read_either_part_nonzero(dtype):
    def fn(z, w, r):
        grid = z.reshape(18, 18)
        return (z.logical_not(), torch.logical_and(z, w), torch.logical_or(z, r), torch.logical_xor(z, w),
                z.all(), z.any(), grid.all(dim=1), grid.any(1, keepdim=True), torch.all(grid, dim=(0, 1)))

    z = edge_grid(dtype)
    w, r = z.flip(0), torch.tensor([0.0, 1.0, -0.0] * 108)
    for make in (dynamo_graph, aten_graph):
        gm = make(fn, z, w, r)
        report = run_pass(gm)
        assert report.count("rewritten") >= 9 and not report.count("kept") and not report.count("bridged"), report.format()
        for got, want in zip(gm(z, w, r), fn(z, w, r)):
            assert torch.equal(got, want)


def test_new_factories_fill_and_complex_scalar_tensor_make_eagers_tensors():
    def fn(z):
        filled = z.clone()
        filled.fill_(2 - 1j)
        return (z.new_zeros(2, 3), z.new_ones((3,)), z.new_full((2,), 1.5 - 2j), filled,
                z * torch.scalar_tensor(1.5 - 2.5j, dtype=torch.complex64),
                z.new_zeros(2, dtype=torch.float32), z.new_full((2,), 3, dtype=torch.int64))

    z = torch.randn(3, dtype=torch.complex64)
    for make in (dynamo_graph, aten_graph):
        gm = make(fn, z)
        report = run_pass(gm)
        assert not report.count("kept") and not report.count("bridged"), report.format()
        for got, want in zip(gm(z), fn(z)):
            assert got.dtype == want.dtype and torch.equal(got, want)


@pytest.mark.parametrize(
    "fn",
    [lambda z: torch.isclose(z, z.flip(0), rtol=1e-3, atol=1e-3), lambda z: torch.trapezoid(z.reshape(18, 18)),
     lambda z: torch.diff(z), lambda z: torch.broadcast_to(z, (2, 324)), lambda z: torch.isreal(z),
     lambda z: torch.float_power(z, 2)],
    ids=["isclose", "trapezoid", "diff", "broadcast_to", "isreal", "float_power"],
)
def test_composite_ops_are_inlined_as_the_ops_eager_runs(fn):
    # No rule of their own: eager runs their CompositeImplicitAutograd
    # decomposition, which the pass inlines and rewrites op by op.
    z = edge_grid(torch.complex64)
    gm = dynamo_graph(fn, z)
    report = run_pass(gm)
    assert report.count("inlined") == 1 and not report.count("kept") and not report.count("bridged"), report.format()
    # Returned as it comes, the inlined result is what the graph returns: the
    # op itself is gone, and nothing complex is computed any more (beyond
    # views, of the input as eager's or at the edges, and the new output's own
    # storage, `torch.complex`).
    computing = [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")
                 and isinstance(n.meta.get("example_value"), torch.Tensor) and n.meta["example_value"].is_complex()
                 and n.target not in (torch.view_as_complex, torch.view_as_real, torch.complex)
                 and not getattr(n.target, "is_view", False)]
    assert computing == [], gm.code
    (got,) = gm(*gm.example_inputs)
    want = fn(z)
    assert got.dtype == want.dtype
    _compare(got, want, torch.complex128 if want.dtype in (torch.complex128, torch.float64) else torch.complex64)


def test_inlined_composites_compile_with_eagers_gradients():
    def fn(z):
        return torch.trapezoid(z, dim=0) + torch.diff(z, dim=0).sum(0) * torch.float_power(z[0], 2).to(torch.complex64)

    z = torch.randn(4, 3, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, z, atol=1e-5, rtol=1e-5)
    assert report.count("inlined") == 3 and not report.count("kept") and not report.count("bridged"), report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops


def test_numpy_code_on_complex_arrays_is_inlined():
    # Dynamo runs NumPy calls as wrappers around torch._numpy; a Python number
    # operand becomes a 0-d constant there, inlined as a scalar_tensor.
    np = pytest.importorskip("numpy")

    def fn(a, b):
        return np.abs(a * b + a**2 - np.conj(b) / 2.0).sum() + np.exp(1j * a.real).sum()

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(8) + 1j * rng.standard_normal(8) for _ in range(2))
    complex_pass = ComplexToRealPass(fused_rotary=False)
    compiled = torch.compile(fn, fullgraph=True, options={"pre_grad_custom_pass": complex_pass})
    with count_complex_fallbacks() as fallbacks:
        got = compiled(a, b)
    np.testing.assert_allclose(got, fn(a, b), rtol=1e-13)
    assert fallbacks.beyond_edges == [], fallbacks.ops
    report = complex_pass.last_report
    assert report.count("inlined") >= 8 and not report.count("kept") and not report.count("bridged"), report.format()


def test_composite_with_symbolic_sizes_is_kept():
    # make_fx on symbolic fake values specializes the decomposition to their
    # hints (vander makes `empty([5, 5])`), so with symbolic sizes the op is kept.
    def fn(z):
        return torch.vander(z) * 2

    complex_pass = ComplexToRealPass(fused_rotary=False)
    compiled = torch.compile(fn, dynamic=True, fullgraph=True, backend=lambda gm, ex: complex_pass(gm.graph) or gm.forward)
    for n in (5, 7, 3):
        z = torch.randn(n, dtype=torch.complex64)
        assert_close(compiled(z), fn(z))
    decisions = [d for r in complex_pass.reports for d in r.decisions]
    assert not any(d.action == "inlined" for d in decisions)
    assert any(d.op == "torch.vander" and d.action == "kept" for d in decisions), decisions
