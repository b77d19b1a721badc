"""prod / cumprod rules against eager.

Random tensors with reduced dims of 1, 2, 3, 5, 8 and 13 go through the pass
on Dynamo's graph and on torch.export's aten graph (dim, negative dims,
keepdim, a strided input, full reduction, dtype=complex128 from complex64)
and must equal eager up to rounding order: values are compared as complex
numbers (tolerance relative to the modulus, as a complex product's error is;
eager's own scalar loop is compiled with FMA). The non-finite cases the
module docstring says agree are checked bit for bit; gradients are compared
with eager autograd in float64, zeros in the reduced dim included; a chain
is compiled with Inductor forward and backward. Refresh the dump with
``EXPECTTEST_ACCEPT=1 pytest tests/test_product_rules.py``.
"""

from __future__ import annotations

import math

import expecttest
import pytest
import torch
from complex_testing import (
    TOLERANCES,
    aten_graph,
    compile_and_compare,
    dynamo_graph,
    normalize_graph,
    run_pass,
)

inf, nan = math.inf, math.nan
DTYPES = [torch.complex64, torch.complex128]
SIZES = [1, 2, 3, 5, 8, 13]


def _variants(z):
    """Every supported spelling, reducing a dim of size n of ``z: [2, n, 3]``."""
    strided = z.transpose(1, 2)  # [2, 3, n], n last and not contiguous
    return (
        torch.prod(z, 1),
        torch.prod(z, -2, keepdim=True),
        strided.prod(-1),
        torch.prod(z, dim=0),
        z.prod(),
        torch.prod(z, 1, dtype=torch.complex128),
        torch.cumprod(z, 1),
        strided.cumprod(dim=-1),
        torch.cumprod(z, -2, dtype=torch.complex128),
        torch.cumprod(z, 0),
    )


def _assert_rewritten(report):
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert report.count("rewritten") > 0


def _assert_close(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, **TOLERANCES[expected.dtype])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_matches_eager(dtype, n):
    z = torch.randn(2, n, 3, dtype=dtype)
    expected = _variants(z)
    for capture in (dynamo_graph, aten_graph):
        gm = capture(_variants, z)
        _assert_rewritten(run_pass(gm))
        for actual, want in zip(gm(z), expected, strict=True):
            _assert_close(actual, want)


def _edge_rows(count, n, dtype, seed=0):
    """``count`` rows of ``n`` values drawn from exact edge values (no rounding, no overflow)."""
    parts = [0.0, -0.0, 1.0, -2.0, 0.5, inf, -inf, nan]
    values = torch.tensor([complex(a, b) for a in parts for b in parts], dtype=dtype)
    generator = torch.Generator().manual_seed(seed)
    return values[torch.randint(len(values), (count, n), generator=generator)]


def _rewritten(fn, z):
    gm = dynamo_graph(fn, z)
    _assert_rewritten(run_pass(gm))
    return gm(z)[0]


def _assert_identical(actual, expected):
    """Same bits up to NaN payloads: values, NaN places and signs of zeros."""
    a, e = torch.view_as_real(actual), torch.view_as_real(expected)
    assert torch.equal(torch.isnan(a), torch.isnan(e))
    keep = ~torch.isnan(e)
    assert torch.equal(a[keep], e[keep])
    assert torch.equal(torch.signbit(a[keep]), torch.signbit(e[keep]))


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_non_finite_cases_that_agree(dtype):
    # n <= 3: the tree is eager's sequential ((1·x0)·x1)·x2, so inf, NaN and ±0 come out as in eager.
    for n in (1, 2, 3):
        z = _edge_rows(3000, n, dtype, seed=n)
        _assert_identical(_rewritten(lambda z: torch.prod(z, 1), z), torch.prod(z, 1))
    # cumprod: its first two outputs are eager's 1·x0 and (1·x0)·x1 in any length.
    z = _edge_rows(3000, 6, dtype)
    actual, expected = _rewritten(lambda z: torch.cumprod(z, 1), z), torch.cumprod(z, 1)
    _assert_identical(actual[:, :2], expected[:, :2])
    # A NaN part anywhere makes prod, and cumprod from there on, nan+nanj in both.
    for n in (5, 8, 13):
        z = _edge_rows(2000, n, dtype, seed=n)
        has_nan = torch.isnan(torch.view_as_real(z)).any(-1)
        rows, after_nan = has_nan.any(1), has_nan.cummax(1).values
        for prod in (_rewritten(lambda z: torch.prod(z, 1), z), torch.prod(z, 1)):
            assert torch.isnan(torch.view_as_real(prod)).all(-1)[rows].all()
        for cum in (_rewritten(lambda z: torch.cumprod(z, 1), z), torch.cumprod(z, 1)):
            assert torch.isnan(torch.view_as_real(cum)).all(-1)[after_nan].all()


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_zero_dim_inputs(dtype):
    # prod of a 0-d tensor is eager's 1·z (inf+0j → inf+nanj); cumprod copies it (inf+0j stays).
    z = torch.tensor([complex(inf, 0.0), complex(-0.0, -0.0), complex(nan, 1.0), complex(2.5, -0.0)], dtype=dtype)

    def fn(z):
        return tuple(torch.prod(z[i]) for i in range(4)) + tuple(torch.cumprod(z[i], 0) for i in range(4))

    gm = dynamo_graph(fn, z)
    _assert_rewritten(run_pass(gm))
    for actual, expected in zip(gm(z), fn(z), strict=True):
        _assert_identical(actual, expected)


def _with_zeros(n, zeros, generator):
    """float64 pairs [4, n, 2], ``zeros`` exact zeros per row at different places."""
    x = torch.randn(4, n, 2, dtype=torch.float64, generator=generator)
    for row in range(4):
        for k in range(min(zeros, n)):
            x[row, (row + 2 * k) % n] = 0.0
    return x


@pytest.mark.parametrize("zeros", [0, 1, 2], ids=["no_zero", "one_zero", "two_zeros"])
def test_gradients_match_eager(zeros):
    def fn(x):
        z = torch.view_as_complex(x)
        outs = (torch.prod(z, 1), torch.prod(z, -1, keepdim=True), z.prod(), torch.cumprod(z, 1))
        return tuple(torch.view_as_real(o) for o in outs)

    generator = torch.Generator().manual_seed(zeros)
    for n in (1, 2, 3, 5, 8):
        x = _with_zeros(n, zeros, generator)
        gm = dynamo_graph(fn, x)
        _assert_rewritten(run_pass(gm))
        seeds = [torch.randn(o.shape, dtype=torch.float64, generator=generator) for o in fn(x)]
        eager_x, rewritten_x = x.clone().requires_grad_(), x.clone().requires_grad_()
        sum((o * s).sum() for o, s in zip(fn(eager_x), seeds)).backward()
        sum((o * s).sum() for o, s in zip(gm(rewritten_x), seeds)).backward()
        assert torch.isfinite(rewritten_x.grad).all()
        torch.testing.assert_close(rewritten_x.grad, eager_x.grad, rtol=1e-10, atol=1e-10)


def test_refusals_keep_eager_numbers():
    def fn(z, long, empty):
        return torch.prod(long, 0), torch.cumprod(long, 0), torch.prod(empty, 1), z.prod(1)

    z = torch.randn(2, 5, dtype=torch.complex64)
    long = torch.randn(4097, dtype=torch.complex64) * 0.01 + 1
    empty = torch.randn(3, 0, dtype=torch.complex64)
    gm = dynamo_graph(fn, z, long, empty)
    report = run_pass(gm)
    reasons = " ".join(d.reason for d in report.decisions if d.action in ("kept", "bridged"))
    assert "4097 elements" in reasons and "empty dim" in reasons, report.format()
    for actual, expected in zip(gm(*gm.example_inputs), fn(z, long, empty), strict=True):
        _assert_close(actual, expected)


def test_dynamic_shapes_refused():
    def fn(z):
        return torch.prod(z, 1), torch.cumprod(z, -1)

    z = torch.randn(3, 5, dtype=torch.complex64)
    gm = dynamo_graph(fn, z, dynamic=True)
    report = run_pass(gm)
    refused = [d for d in report.decisions if d.op.endswith(("prod", "cumprod"))]
    assert refused and all(d.action in ("kept", "bridged") and "symbolic" in d.reason for d in refused), report.format()
    for actual, expected in zip(gm(*gm.example_inputs), fn(z), strict=True):
        _assert_close(actual, expected)


def test_compiled_chain_forward_backward():
    def fn(x, w):
        z = torch.view_as_complex(x) * w
        p = torch.prod(z, 1, keepdim=True)
        c = torch.cumprod(z * 0.5, -1)
        y = c * p + torch.prod(z, 0, dtype=torch.complex128).to(torch.complex64)
        return torch.view_as_real(y), z.prod().abs()

    x, w = torch.randn(3, 5, 2), torch.randn(5, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, x, w, atol=1e-4, rtol=1e-4)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_prod_dim_dump(self):
        z = torch.randn(2, 3, dtype=torch.complex64)
        gm = dynamo_graph(lambda z: torch.prod(z, 1), z)
        run_pass(gm)
        _assert_close(gm(z)[0], torch.prod(z, 1))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[2, 3]"):
        l_z_ = L_z_
        view_as_real: "f32[2, 3, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        getitem: "f32[2, 1, 2]" = view_as_real[(slice(None, None, None), slice(0, 1, None))]
        mul: "f32[2, 1, 2]" = getitem * 1.0
        flip: "f32[2, 1, 2]" = getitem.flip(-1);  getitem = None
        arange: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq: "b8[2]" = arange == 0;  arange = None
        neg: "f32[2, 1, 2]" = -flip
        where: "f32[2, 1, 2]" = torch.where(eq, neg, flip);  eq = neg = flip = None
        mul_1: "f32[2, 1, 2]" = where * 0.0;  where = None
        add: "f32[2, 1, 2]" = mul + mul_1;  mul = mul_1 = None
        getitem_1: "f32[2, 2, 2]" = view_as_real[(slice(None, None, None), slice(1, 3, None))];  view_as_real = None
        cat: "f32[2, 3, 2]" = torch.cat((add, getitem_1), 1);  add = getitem_1 = None
        getitem_2: "f32[2, 1, 2]" = cat[(slice(None, None, None), slice(0, 2, 2))]
        getitem_3: "f32[2, 1, 2]" = cat[(slice(None, None, None), slice(1, 2, 2))]
        getitem_4: "f32[2, 1, 1]" = getitem_3[(Ellipsis, slice(0, 1, None))]
        getitem_5: "f32[2, 1, 1]" = getitem_3[(Ellipsis, slice(1, 2, None))];  getitem_3 = None
        mul_2: "f32[2, 1, 2]" = getitem_2 * getitem_4;  getitem_4 = None
        flip_1: "f32[2, 1, 2]" = getitem_2.flip(-1);  getitem_2 = None
        arange_1: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_1: "b8[2]" = arange_1 == 0;  arange_1 = None
        neg_1: "f32[2, 1, 2]" = -flip_1
        where_1: "f32[2, 1, 2]" = torch.where(eq_1, neg_1, flip_1);  eq_1 = neg_1 = flip_1 = None
        mul_3: "f32[2, 1, 2]" = where_1 * getitem_5;  where_1 = getitem_5 = None
        add_1: "f32[2, 1, 2]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        getitem_6: "f32[2, 1, 2]" = cat[(slice(None, None, None), slice(2, 3, None))];  cat = None
        cat_1: "f32[2, 2, 2]" = torch.cat((add_1, getitem_6), 1);  add_1 = getitem_6 = None
        getitem_7: "f32[2, 1, 2]" = cat_1[(slice(None, None, None), slice(0, 2, 2))]
        getitem_8: "f32[2, 1, 2]" = cat_1[(slice(None, None, None), slice(1, 2, 2))];  cat_1 = None
        getitem_9: "f32[2, 1, 1]" = getitem_8[(Ellipsis, slice(0, 1, None))]
        getitem_10: "f32[2, 1, 1]" = getitem_8[(Ellipsis, slice(1, 2, None))];  getitem_8 = None
        mul_4: "f32[2, 1, 2]" = getitem_7 * getitem_9;  getitem_9 = None
        flip_2: "f32[2, 1, 2]" = getitem_7.flip(-1);  getitem_7 = None
        arange_2: "i32[2]" = torch.arange(2, dtype = torch.int32, device = device(type='cpu'))
        eq_2: "b8[2]" = arange_2 == 0;  arange_2 = None
        neg_2: "f32[2, 1, 2]" = -flip_2
        where_2: "f32[2, 1, 2]" = torch.where(eq_2, neg_2, flip_2);  eq_2 = neg_2 = flip_2 = None
        mul_5: "f32[2, 1, 2]" = where_2 * getitem_10;  where_2 = getitem_10 = None
        add_2: "f32[2, 1, 2]" = mul_4 + mul_5;  mul_4 = mul_5 = None
        squeeze: "f32[2, 2]" = add_2.squeeze(1);  add_2 = None
        select: "f32[2]" = torch.select(squeeze, -1, 0)
        select_1: "f32[2]" = torch.select(squeeze, -1, 1);  squeeze = None
        complex_1: "c64[2]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1,)""")
