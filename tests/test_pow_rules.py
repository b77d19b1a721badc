"""Complex ``pow`` rules against eager, forward and gradients.

Every exponent family eager distinguishes (0, 1, 0.5, -0.5, -1, 2, 3, -2 and
the general ``cpow``; real, complex, non-finite and almost-special Python
exponents), tensor ** tensor with complex/real mixes, broadcasting and dtype
promotion, and number ** tensor run through the pass on Dynamo's graph and on
torch.export's aten graph, on random values and on grids of edge values (0,
-0, ±1, ±inf, nan, huge, tiny, subnormal, the negative real axis with ±0
imaginary parts), and must equal eager, NaNs and signed zeros included.
Gradients (base and exponent) are compared with eager autograd in float64,
including at base 0 where eager's derivative is 0 or NaN; a chain is compiled
with Inductor forward and backward. Refresh the dump with
``EXPECTTEST_ACCEPT=1 pytest tests/test_pow_rules.py``.
"""

from __future__ import annotations

import math

import expecttest
import pytest
import torch
from complex_testing import (
    aten_graph,
    compile_and_compare,
    dynamo_graph,
    normalize_graph,
    run_pass,
)

inf, nan = math.inf, math.nan
# Base parts: 16 values, so the 256-element grid keeps eager in its vectorized loop.
EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, inf, -inf, nan, 1e30, -1e30, 1e-30, 1e-310, 100.0, -0.7]
# Base parts for tensor ** tensor, where each base meets each exponent (fewer values).
BASE_EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, inf, -inf, nan, 1e30, 1e-310, -0.7]
# Exponent parts for tensor ** tensor. Huge finite exponents are left out: there
# y * log(x) is ~1e30 and the result's phase is decided by the last bit of log(x).
EXP_EDGE = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, inf, -inf, nan]
DTYPES = [torch.complex64, torch.complex128]
TOL = {torch.complex64: {"rtol": 2e-5, "atol": 1e-6}, torch.complex128: {"rtol": 1e-12, "atol": 1e-12}}

# Each Python exponent eager special-cases, the general case (real, complex,
# one that rounds to 2 in complex64 but is not 2 for eager's test), bools and
# non-finite exponents.
SCALAR_EXPONENTS = [
    0, 1.0, True, 2, 3, -1, -2, 0.5, -0.5, 2 + 0j, 2.5, -3, 0.3 + 2j, 1j, 2.0000000001, inf, nan,
]


def _edge_grid(dtype):
    return torch.tensor([complex(a, b) for a in EDGE for b in EDGE], dtype=dtype)


def _random(dtype, n=256):
    return torch.randn(n, dtype=dtype) * 2


def _amplification(base, exponent):
    """``1 + |y log x|`` in float64, by eager: how much pow magnifies the last-bit
    differences between eager's libm (glibc) and the rewrite's log/exp/sin/cos
    (1 where it is not finite: those results are 0, inf or NaN, compared exactly)."""
    base = torch.as_tensor(base).to(torch.complex128)
    exponent = torch.as_tensor(exponent).to(torch.complex128)
    factor = 1 + (exponent * torch.log(base)).abs()
    return torch.where(torch.isfinite(factor), factor, 1.0)


def _check(actual, expected, dtype, amplification=1.0):
    """NaNs, infinities and signed zeros exactly; finite parts within ``TOL``
    relative to the result's modulus, times ``amplification``."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a, e = torch.view_as_real(actual).double(), torch.view_as_real(expected).double()
    assert torch.equal(a.isnan(), e.isnan())
    assert torch.equal(a.isinf(), e.isinf()) and torch.equal(a[e.isinf()], e[e.isinf()])
    finite = torch.isfinite(e)
    modulus = torch.where(finite, e, 0.0).norm(dim=-1, keepdim=True)
    tol = TOL[dtype]["atol"] + TOL[dtype]["rtol"] * torch.as_tensor(amplification).unsqueeze(-1) * modulus
    error = torch.where(finite, a - e, 0.0).abs()
    worst = (error - tol).argmax()
    assert (error <= tol).all(), f"{a.flatten(0, -2)[worst // 2]} != {e.flatten(0, -2)[worst // 2]}"
    zeros = (a == 0) & (e == 0)
    assert torch.equal(torch.signbit(a[zeros]), torch.signbit(e[zeros]))


def _rewritten(fn, *args):
    """``fn`` through the pass on Dynamo's graph and on the aten graph."""
    graphs = [dynamo_graph(fn, *args), aten_graph(fn, *args)]
    for gm in graphs:
        report = run_pass(gm)
        assert report.count("bridged") + report.count("kept") == 0, report.format()
        assert report.count("rewritten") > 0
    return graphs


def _assert_all_match(fn, operands, inputs_list):
    """Each graph form on each set of inputs equals eager, output by output.

    ``operands(*inputs)`` lists each output's (base, exponent) for its tolerance.
    """
    graphs = _rewritten(fn, *inputs_list[0])
    for inputs in inputs_list:
        expected = fn(*inputs)
        for gm in graphs:
            actual = gm(*inputs)
            for index, (a, e, (base, exponent)) in enumerate(zip(actual, expected, operands(*inputs))):
                try:
                    _check(a, e, e.dtype, _amplification(base, exponent))
                except AssertionError as error:
                    raise AssertionError(f"output {index}: {error}") from error


def _scalar_powers(z):
    return tuple(z**e for e in SCALAR_EXPONENTS)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_tensor_to_number_matches_eager(dtype):
    def operands(z):
        return [(z, e) for e in SCALAR_EXPONENTS]

    _assert_all_match(_scalar_powers, operands, [(_random(dtype),), (_edge_grid(dtype),)])


def _tensor_powers(z, w, r, r64, w128, n):
    """Tensor exponents: complex/real mixes, promotion and broadcasting."""
    return (
        torch.pow(z, w),
        z.pow(r),
        r**w,
        z**r64,  # complex64 ** float64 computes in complex128
        r64**z,
        torch.pow(z[:13].unsqueeze(1), w[:7].unsqueeze(0)),  # [13, 1] ** [1, 7]
        torch.pow(z, r64[0]),  # a 0-dim float64 exponent does not promote
        z**w128,  # complex64 ** complex128
        z**n,  # integer exponents
    )


def _tensor_operands(z, w, r, r64, w128, n):
    return [
        (z, w), (z, r), (r, w), (z, r64), (r64, z), (z[:13].unsqueeze(1), w[:7].unsqueeze(0)),
        (z, r64[0]), (z, w128), (z, n),
    ]


def _tensor_inputs(z, w):
    r = w.real.contiguous()
    r64 = (w.real + w.imag).to(torch.float64)
    n = torch.arange(len(z)) % 7 - 3
    return z, w, r, r64, w.to(torch.complex128) * 1.1, n


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_tensor_to_tensor_matches_eager(dtype):
    # Every edge base against every edge exponent; random ones of the same size.
    base = torch.tensor([complex(a, b) for a in BASE_EDGE for b in BASE_EDGE], dtype=dtype)
    exps = torch.tensor([complex(a, b) for a in EXP_EDGE for b in EXP_EDGE], dtype=dtype)
    z, w = base.repeat_interleave(len(exps)), exps.repeat(len(base))
    inputs = [_tensor_inputs(_random(dtype, len(z)), _random(dtype, len(z))), _tensor_inputs(z, w)]
    _assert_all_match(_tensor_powers, _tensor_operands, inputs)


NUMBER_BASES = [2, 0.5, 1.0, 0, -0.0, -2.5, 1j, 0.5 - 1j, 1e30, inf, nan]


def _number_powers(w):
    return tuple(b**w for b in NUMBER_BASES) + (torch.pow(2, w), w.__rpow__(3.5), torch.pow(1 + 1j, w))


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_number_to_tensor_matches_eager(dtype):
    def operands(w):
        return [(b, w) for b in NUMBER_BASES] + [(2, w), (3.5, w), (1 + 1j, w)]

    _assert_all_match(_number_powers, operands, [(_random(dtype),), (_edge_grid(dtype),)])


# ------------------------------------------------------------------ gradients

# Base points: zeros with every sign, both axes, the negative real axis with
# ±0 imaginary parts, generic points, infinite and NaN bases (eager's derivative
# is 0 or NaN there), huge and tiny ones (where the log's phase derivative
# would overflow unscaled).
GRAD_POINTS = [
    (0.0, 0.0), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.5, 0.0), (-2.0, 0.0), (-2.0, -0.0),
    (0.0, 1.25), (-0.0, -0.75), (0.7, -1.1), (-1.3, 2.2), (2.5, 0.4), (-0.4, -0.6), (3.0, 5.0),
    (1e-5, -1e-5), (-0.5, 0.0), (inf, 0.0), (-inf, 1.0), (1.0, -inf), (nan, 0.0),
    (1e100, -1e100), (1e-300, 2e-300), (3e-30, 1e20),
]
# Exponent points: 0, 1, real ones either side of 1 (eager's derivative at base
# 0 is 0 above, NaN below), negative, complex, non-finite.
GRAD_EXPONENTS = [
    (0.0, 0.0), (1.0, 0.0), (2.0, 0.0), (0.5, 0.0), (-1.0, 0.0), (2.0, 1.0),
    (0.0, 1.0), (3.0, 0.0), (1.5, -0.5), (0.5, 2.0), (-0.0, 0.0), (2.5, -0.0),
    (inf, 0.0), (-inf, 0.0), (nan, 0.0), (1.0, inf), (2.0, nan),
]


def _assert_gradients_match_eager(fn, *inputs):
    """float64 input gradients of ``fn`` through the rewritten Dynamo graph vs eager."""
    gm = dynamo_graph(fn, *inputs)
    report = run_pass(gm)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    eager_in = [x.clone().requires_grad_() for x in inputs]
    rewritten_in = [x.clone().requires_grad_() for x in inputs]
    expected = fn(*eager_in)
    seed = torch.randn_like(expected)
    (expected * seed).sum().backward()
    (gm(*rewritten_in)[0] * seed).sum().backward()
    for index, (a, e) in enumerate(zip(rewritten_in, eager_in)):
        # Finite gradients equal eager's; where eager's is inf or NaN (a
        # singular point), ours is inf or NaN as well.
        finite = torch.isfinite(e.grad)
        assert torch.equal(torch.isfinite(a.grad), finite), f"input {index}: finite where eager's is not, or not where it is"
        # Relative to the complex gradient's modulus (a part can be rounding noise).
        modulus = torch.where(finite, e.grad, 0.0).norm(dim=-1, keepdim=True) if e.grad.ndim > 1 else e.grad.abs()
        error = torch.where(finite, a.grad - e.grad, 0.0).abs()
        assert (error <= 1e-10 + 1e-10 * modulus).all(), f"input {index}: {a.grad} != {e.grad}"


GRAD_SCALAR_EXPONENTS = [0, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5, 0.3, -3, 1.0000001, 1.5 + 1j, 0.5 + 1j, 1 + 1j, 1j, inf]


@pytest.mark.parametrize("exponent", GRAD_SCALAR_EXPONENTS, ids=str)
def test_gradients_tensor_to_number(exponent):
    def fn(x):
        return torch.view_as_real(torch.view_as_complex(x) ** exponent)

    _assert_gradients_match_eager(fn, torch.tensor(GRAD_POINTS, dtype=torch.float64))


def _grad_pairs():
    x = torch.tensor(GRAD_POINTS, dtype=torch.float64)
    y = torch.tensor(GRAD_EXPONENTS, dtype=torch.float64)
    return x.repeat_interleave(len(y), 0), y.repeat(len(x), 1)


@pytest.mark.parametrize("kind", ["complex**complex", "complex**real", "real**complex"])
def test_gradients_tensor_to_tensor(kind):
    def fn(x, y):
        base, exponent = torch.view_as_complex(x), torch.view_as_complex(y)
        if kind == "complex**real":
            exponent = y[..., 0]
        elif kind == "real**complex":
            base = x[..., 0]
        return torch.view_as_real(torch.pow(base, exponent))

    _assert_gradients_match_eager(fn, *_grad_pairs())


@pytest.mark.parametrize("number", [2, 0, 1, -1.5, 0.5 - 1j, 0j], ids=str)
def test_gradients_number_to_tensor(number):
    def fn(y):
        return torch.view_as_real(number ** torch.view_as_complex(y))

    _assert_gradients_match_eager(fn, _grad_pairs()[1])


def test_compiled_chain_forward_backward():
    def fn(x, w):
        z = torch.view_as_complex(x)
        # z ** w: the general case; z ** 3: a special one.
        return torch.view_as_real(torch.pow(z, w) * 0.5 + z**3)

    x = torch.randn(8, 2)
    x[:3] = torch.tensor([[0.0, 0.0], [-0.0, 0.0], [0.0, -0.0]])
    # Exponents real and > 1 at the zero bases: eager's derivatives there are 0.
    w = torch.randn(8, dtype=torch.complex64)
    w[:3] = torch.tensor([2.0, 3.5, 1.25])
    report, fallbacks = compile_and_compare(fn, x, w, atol=1e-4, rtol=1e-4)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_pow_three_dump(self):
        # (z * z) * z, the base's derivative pinned at 0 (0) and at inf/NaN (NaN).
        z = torch.randn(3, dtype=torch.complex64)
        gm = dynamo_graph(lambda z: z**3, z)
        run_pass(gm)
        _check(gm(z)[0], z**3, torch.complex64)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[3]"):
        l_z_ = L_z_
        view_as_real: "f32[3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[3]" = view_as_real[(Ellipsis, 0)]
        detach: "f32[3]" = getitem.detach();  getitem = None
        getitem_1: "f32[3]" = view_as_real[(Ellipsis, 1)]
        detach_1: "f32[3]" = getitem_1.detach();  getitem_1 = None
        eq: "b8[3]" = detach == 0
        eq_1: "b8[3]" = detach_1 == 0
        and_: "b8[3]" = eq & eq_1;  eq = eq_1 = None
        isfinite: "b8[3]" = torch.isfinite(detach);  detach = None
        isfinite_1: "b8[3]" = torch.isfinite(detach_1);  detach_1 = None
        and__1: "b8[3]" = isfinite & isfinite_1;  isfinite = isfinite_1 = None
        invert: "b8[3]" = ~and__1;  and__1 = None
        or_: "b8[3]" = and_ | invert;  invert = None
        unsqueeze: "b8[3, 1]" = or_.unsqueeze(-1)
        detach_2: "f32[3, 2]" = view_as_real.detach()
        where: "f32[3, 2]" = torch.where(unsqueeze, detach_2, view_as_real);  unsqueeze = detach_2 = None
        getitem_2: "f32[3, 1]" = where[(Ellipsis, slice(0, 1, None))]
        getitem_3: "f32[3, 1]" = where[(Ellipsis, slice(1, 2, None))]
        mul: "f32[3, 2]" = where * getitem_2;  getitem_2 = None
        flip: "f32[3, 2]" = where.flip(-1)
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_2: "b8[2]" = arange == 0;  arange = None
        neg: "f32[3, 2]" = -flip
        where_1: "f32[3, 2]" = torch.where(eq_2, neg, flip);  eq_2 = neg = flip = None
        mul_1: "f32[3, 2]" = where_1 * getitem_3;  where_1 = getitem_3 = None
        add: "f32[3, 2]" = mul + mul_1;  mul = mul_1 = None
        getitem_4: "f32[3, 1]" = where[(Ellipsis, slice(0, 1, None))]
        getitem_5: "f32[3, 1]" = where[(Ellipsis, slice(1, 2, None))];  where = None
        mul_2: "f32[3, 2]" = add * getitem_4;  getitem_4 = None
        flip_1: "f32[3, 2]" = add.flip(-1);  add = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_3: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[3, 2]" = -flip_1
        where_2: "f32[3, 2]" = torch.where(eq_3, neg_1, flip_1);  eq_3 = neg_1 = flip_1 = None
        mul_3: "f32[3, 2]" = where_2 * getitem_5;  where_2 = getitem_5 = None
        add_1: "f32[3, 2]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        invert_1: "b8[3]" = ~and_;  and_ = None
        and__2: "b8[3]" = or_ & invert_1;  or_ = invert_1 = None
        getitem_6: "f32[3]" = view_as_real[(Ellipsis, 0)]
        getitem_7: "f32[3]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        where_3: "f32[3]" = torch.where(and__2, getitem_6, 0.0);  getitem_6 = None
        nan_to_num: "f32[3]" = torch.nan_to_num(where_3);  where_3 = None
        detach_3: "f32[3]" = nan_to_num.detach()
        sub: "f32[3]" = nan_to_num - detach_3;  nan_to_num = detach_3 = None
        where_4: "f32[3]" = torch.where(and__2, getitem_7, 0.0);  getitem_7 = None
        nan_to_num_1: "f32[3]" = torch.nan_to_num(where_4);  where_4 = None
        detach_4: "f32[3]" = nan_to_num_1.detach()
        sub_1: "f32[3]" = nan_to_num_1 - detach_4;  nan_to_num_1 = detach_4 = None
        hypot: "f32[3]" = torch.hypot(sub, sub_1);  sub = sub_1 = None
        where_5: "f32[3]" = torch.where(and__2, hypot, 0.0);  and__2 = hypot = None
        add_2: "f32[3]" = 1.0 + where_5;  where_5 = None
        unsqueeze_1: "f32[3, 1]" = add_2.unsqueeze(-1);  add_2 = None
        mul_4: "f32[3, 2]" = add_1 * unsqueeze_1;  add_1 = unsqueeze_1 = None
        select: "f32[3]" = torch.select(mul_4, -1, 0)
        select_1: "f32[3]" = torch.select(mul_4, -1, 1);  mul_4 = None
        complex_1: "c64[3]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")
