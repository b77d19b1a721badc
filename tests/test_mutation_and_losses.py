"""Losses, inner products, scatters and writes through views of complex tensors,
compiled with the pass vs eager (forward and input gradients)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from complex_testing import assert_close, compile_and_compare

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks
from inductor_complex.rules import RULES

INF, NAN = math.inf, math.nan


def _edge(n, dtype=torch.complex64):
    """Zeros, signed zeros, infinities and NaNs mixed with ordinary values."""
    values = [0, -0.0, 1.5, -2.0, INF, -INF, NAN, 1e-30, 3e30]
    re = torch.tensor([values[i % len(values)] for i in range(n)], dtype=torch.float64)
    im = torch.tensor([values[(3 * i + 1) % len(values)] for i in range(n)], dtype=torch.float64)
    return torch.complex(re, im).to(dtype)


def _clean(report, fallbacks):
    assert report.count("kept") + report.count("bridged") == 0, report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops


# ------------------------------------------------------------------ losses


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_l1_loss(reduction, dtype):
    a, b = torch.randn(3, 5, dtype=dtype), torch.randn(3, 5, dtype=dtype)
    a[0, 0] = b[0, 0]  # |a - b| = 0: eager's abs gradient there is 0
    _clean(*compile_and_compare(lambda x, y: F.l1_loss(x, y, reduction=reduction), a, b))


def test_l1_loss_real_target_and_broadcast():
    a, b = torch.randn(4, 3, dtype=torch.complex64), torch.randn(3)
    with pytest.warns(UserWarning):  # eager warns about the broadcast target
        _clean(*compile_and_compare(lambda x, y: F.l1_loss(x, y, reduction="sum"), a, b))


def test_l1_loss_edge_values():
    a, b = _edge(18), _edge(18).flip(0)
    compile_and_compare(lambda x, y: F.l1_loss(x, y, reduction="none"), a, b, grad=False, equal_nan=True)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_l1_loss_with_weight(reduction):
    # Without the pass, torch.compile gets this wrong for complex input in
    # torch 2.13 (its l1_loss decomposition); the rule follows F.l1_loss.
    a, b, w = torch.randn(4, dtype=torch.complex64), torch.randn(4, dtype=torch.complex64), torch.rand(4)
    _clean(*compile_and_compare(lambda x, y, w: F.l1_loss(x, y, weight=w, reduction=reduction), a, b, w))


def test_mse_loss_has_no_rule():
    # Eager has no complex mse kernel ("mse_cpu" not implemented for
    # 'ComplexFloat'), so the pass leaves the op alone.
    a = torch.randn(4, dtype=torch.complex64)
    with pytest.raises((RuntimeError, NotImplementedError), match="not implemented"):
        F.mse_loss(a, a)
    # (Compiled without the pass, Inductor's decomposition returns a complex
    # mean((a - b) ** 2) where eager raises.)
    assert "mse_loss" not in RULES


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_dot_and_vdot(dtype):
    a, b = torch.randn(7, dtype=dtype), torch.randn(7, dtype=dtype)
    _clean(*compile_and_compare(lambda x, y: (torch.dot(x, y), torch.vdot(x, y), x.dot(y), x.vdot(y)), a, b))


def test_vdot_conjugates_first_argument():
    a, b = torch.tensor([1j], dtype=torch.complex64), torch.tensor([1.0 + 0j], dtype=torch.complex64)
    out = torch.compile(lambda x, y: torch.vdot(x, y), options={"pre_grad_custom_pass": ComplexToRealPass()})(a, b)
    assert out == torch.vdot(a, b) == -1j


# ----------------------------------------------------------------- scatter


def test_scatter_add():
    z, src = torch.randn(4, 3, dtype=torch.complex64), torch.randn(3, 3, dtype=torch.complex64)
    index = torch.tensor([[0, 1, 3], [0, 0, 2], [3, 1, 0]])
    _clean(*compile_and_compare(lambda z, s: z.scatter_add(0, index, s), z, src))
    # An index smaller than src: eager's backward refuses it (gather of the
    # gradient has the index's shape), so forward only.
    _clean(*compile_and_compare(lambda z, s: torch.scatter_add(z, -1, index[:2, :2], s), z, src, grad=False))


def test_scatter_add_edge_values():
    z, src = _edge(12).view(4, 3), _edge(9).view(3, 3).flip(0)
    index = torch.tensor([[0, 1, 3], [0, 0, 2], [3, 1, 0]])
    compile_and_compare(lambda z, s: z.scatter_add(0, index, s), z, src, grad=False, equal_nan=True)


def test_scatter_add_in_place_on_intermediate():
    z, src = torch.randn(4, 3, dtype=torch.complex64), torch.randn(2, 3, dtype=torch.complex64)
    index = torch.tensor([[0, 1, 3], [2, 0, 2]])

    def fn(z, s):
        w = z * 2
        w.scatter_add_(0, index, s)
        return w

    _clean(*compile_and_compare(fn, z, src))


def test_scatter_src_and_value():
    z, src = torch.randn(4, 3, dtype=torch.complex64), torch.randn(2, 3, dtype=torch.complex64)
    index = torch.tensor([[0, 1, 3], [2, 0, 2]])  # no duplicates within a column
    _clean(*compile_and_compare(lambda z, s: z.scatter(0, index, s), z, src))
    _clean(*compile_and_compare(lambda z: z.scatter(1, index[:, :2] % 3, 2 - 1j), z))

    def fn(z, s):
        w = z + 1
        w.scatter_(0, index, s)
        return w

    _clean(*compile_and_compare(fn, z, src))


@pytest.mark.parametrize("value", [1 + 2j, -3.0, complex(0, INF)])
def test_index_fill(value):
    z = torch.randn(3, 4, dtype=torch.complex64)
    index = torch.tensor([0, 2])
    _clean(*compile_and_compare(lambda z: z.index_fill(1, index, value), z, equal_nan=True))
    _clean(*compile_and_compare(lambda z: torch.index_fill(z, -2, index[:1], value), z, equal_nan=True))

    def fn(z):
        w = z.clone()
        w.index_fill_(0, index, value)
        return w

    _clean(*compile_and_compare(fn, z, equal_nan=True))


def test_index_fill_with_0d_tensor_value():
    z, v = torch.randn(3, 4, dtype=torch.complex64), torch.tensor(2 - 1j, dtype=torch.complex64)
    _clean(*compile_and_compare(lambda z, v: z.index_fill(1, torch.tensor([1, 3]), v), z, v))


def test_index_fill_with_a_repeated_index_gives_the_value_eagers_gradient():
    # Each filled position counts once in the value's gradient, however often the
    # index names it (a wrong gradient the full OpInfo backward sweep found).
    z, v = torch.randn(5, 5, dtype=torch.complex64), torch.tensor(-4.3 - 2.4j, dtype=torch.complex64)
    index = torch.tensor([4, 3, 3, 4, 0])
    _clean(*compile_and_compare(lambda z, v: z.index_fill(-1, index, v), z, v))

    def in_place(z, v):
        w = z * 1
        w.index_fill_(0, index, v)
        return w

    _clean(*compile_and_compare(in_place, z, v))


def test_index_add():
    z, src = torch.randn(4, 3, dtype=torch.complex64), torch.randn(3, 3, dtype=torch.complex64)
    index = torch.tensor([1, 3, 1])  # a duplicate: accumulated in order
    _clean(*compile_and_compare(lambda z, s: z.index_add(0, index, s), z, src))

    def fn(z, s):
        w = z.clone()
        w.index_add_(1, index % 3, s)
        return w

    _clean(*compile_and_compare(fn, z, torch.randn(4, 3, dtype=torch.complex64)))


@pytest.mark.parametrize("alpha", [1, 0.5, -2])
def test_index_add_1d(alpha):
    z, src = torch.randn(5, dtype=torch.complex64), torch.randn(3, dtype=torch.complex64)
    _clean(*compile_and_compare(lambda z, s: z.index_add(0, torch.tensor([4, 0, 4]), s, alpha=alpha), z, src))


def test_index_add_edge_values():
    # Rank > 1: eager adds slices plainly, (inf + 0i) stays inf + 0i ...
    z, src = _edge(12).view(4, 3), _edge(9).view(3, 3).flip(1)
    index = torch.tensor([1, 3, 1])
    compile_and_compare(lambda z, s: z.index_add(0, index, s), z, src, grad=False, equal_nan=True)
    # ... rank 1: eager's scalar loop adds source * (1 + 0i), and (inf + 0i) * 1 has a NaN part.
    z, src = _edge(6), _edge(9).flip(0)
    compile_and_compare(lambda z, s: z.index_add(0, torch.tensor([1, 2, 1, 0, 5, 5, 3, 4, 1]), s), z, src,
                        grad=False, equal_nan=True)


def test_index_add_complex_alpha_is_left_to_eager():
    # Eager's index_add backward multiplies by alpha, not conj(alpha): keeping
    # the op keeps eager's (PyTorch's) gradients.
    z, src = torch.randn(4, 3, dtype=torch.complex64), torch.randn(3, 3, dtype=torch.complex64)
    report, _ = compile_and_compare(lambda z, s: z.index_add(0, torch.tensor([1, 3, 1]), s, alpha=2 - 1j), z, src)
    assert report.count("kept") == 1 and "alpha" in report.format(), report.format()


# ------------------------------------------------- writes through real/imag views


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, options={"pre_grad_custom_pass": ComplexToRealPass(fused_rotary=False)})


def test_in_place_on_real_and_imag_views_of_intermediate():
    def fn(z):
        w = z * (1 + 1j)
        w.imag.zero_()
        w.real.mul_(2)
        w.real[0] += 5
        return w

    _clean(*compile_and_compare(fn, torch.randn(3, dtype=torch.complex64)))


def test_writes_through_views_of_graph_inputs():
    def fn(z, s):
        z.imag.zero_()
        z.real.mul_(2)
        z[0] = 3 - 4j
        z.index_fill_(0, torch.tensor([1]), 7j)
        z.scatter_add_(0, torch.tensor([2, 2]), s)
        z.index_add_(0, torch.tensor([3]), s[:1])
        return z.abs()

    z, s = torch.randn(5, dtype=torch.complex64), torch.randn(2, dtype=torch.complex64)
    z_eager, z_compiled = z.clone(), z.clone()
    expected = fn(z_eager, s)
    compiled = _compiled(fn)
    with count_complex_fallbacks() as fallbacks:
        actual = compiled(z_compiled, s)
    assert_close(actual, expected)
    assert_close(z_compiled, z_eager)  # the caller's tensor changed as in eager
    assert not torch.equal(z_compiled, z)
    # The only complex op left: AOTAutograd's write-back of the mutated graph
    # input (``copy_(z, updated)`` on the caller's complex tensor), which
    # Inductor leaves to eager. Everything the model computes is real.
    assert fallbacks.beyond_edges == ["aten.copy_.default"], fallbacks.ops


@pytest.mark.parametrize("write", ["through_conj", "into_input", "into_real_view"])
def test_conj_view_with_writes_keeps_eagers_aliasing(write):
    # Eager's conj is a view: writes through it reach z, and writes to z show
    # through it. The pass holds it as z's storage with the conj bit, so both
    # hold; a write through it is left to eager, on a conj view of the pair.
    def through_conj(z):
        w = z.conj()
        w.mul_(2)
        w[0] = 5j
        return z * 1

    def into_input(z):
        w = z.conj()
        z.mul_(2)
        return w + 1

    def into_real_view(z):
        w = z.conj()
        z.real.mul_(3)
        return w + 1

    fn = {"through_conj": through_conj, "into_input": into_input, "into_real_view": into_real_view}[write]
    z = torch.randn(3, dtype=torch.complex64)
    z_eager, z_compiled = z.clone(), z.clone()
    expected = fn(z_eager)
    complex_pass = ComplexToRealPass()
    actual = torch.compile(fn, options={"pre_grad_custom_pass": complex_pass}, fullgraph=True)(z_compiled)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(z_compiled, z_eager)
    report = complex_pass.last_report
    assert [d.action for d in report.decisions if d.op == "Tensor.conj"] == ["rewritten"], report.format()
    kept = [d for d in report.decisions if d.action in ("kept", "bridged")]
    if write == "through_conj":  # mul_ and setitem write through the lazy view
        assert {d.op for d in kept} == {"Tensor.mul_", "operator.setitem"}, report.format()
        assert all("lazy conj/neg view" in d.reason for d in kept)
    else:
        assert kept == [], report.format()


def test_conj_is_rewritten_when_only_real_tensors_are_written():
    # An in-place ReLU elsewhere cannot touch complex storage: conj stays rewritten.
    def fn(x, z):
        h = torch.relu_(x * 2)
        return z.conj() * h

    x, z = torch.randn(3), torch.randn(3, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, x, z)
    assert report.count("kept") + report.count("bridged") == 0, report.format()
    assert fallbacks.beyond_edges == []


def test_masked_scatter_fills_masked_elements_in_order():
    row_mask = torch.tensor([True, False, True])  # broadcast over the rows
    mask = torch.tensor([[True, False, True], [False, True, True]])
    cases = [lambda z, s: z.masked_scatter(row_mask, s), lambda z, s: z.masked_scatter(mask, s.reshape(7, 1)[:5]),
             lambda z, s: (z * 2).masked_scatter_(mask, s)]
    for fn in cases:
        _clean(*compile_and_compare(fn, _edge(6).view(2, 3), _edge(7).flip(0), grad=False, equal_nan=True))
        _clean(*compile_and_compare(fn, torch.randn(2, 3, dtype=torch.complex64), torch.randn(7, dtype=torch.complex64)))


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_reductions_of_a_0d_complex_tensor(reduce):
    # Eager sums from 0 (the sum of one -0.0 is +0.0); mean divides by 1 with
    # Smith's division (an infinite part makes the other NaN).
    for value in (complex(-0.0, -0.0), complex(math.nan, -0.0), complex(math.inf, 1.0), complex(1.5, -2.0)):
        z = torch.tensor(value, dtype=torch.complex64)
        for dim in (None, 0, -1):
            def fn(z):
                op = getattr(z, reduce)
                return op() if dim is None else op(dim, keepdim=True)
            _clean(*compile_and_compare(fn, z, grad=False, equal_nan=True))


def test_index_select_and_index_add_of_a_0d_complex_tensor():
    # Eager runs a scalar as one element along dim 0 (or -1), index_add in its
    # 1-d loop (source * alpha); backward included (an accumulating index_put).
    for value in (complex(-0.0, 2.0), complex(math.inf, 1.0), complex(1.5, -2.0)):
        z, s = torch.tensor(value, dtype=torch.complex64), torch.tensor(0.5 - 3j, dtype=torch.complex64)
        both = dict(equal_nan=True, post_grad=True)
        _clean(*compile_and_compare(lambda z: torch.index_select(z * 1, 0, torch.tensor([0])), z, **both))
        _clean(*compile_and_compare(lambda z: torch.index_select(z * 1, -1, torch.tensor(0)) * 2, z, **both))
        _clean(*compile_and_compare(lambda z, s: (z * 1).index_add(0, torch.tensor([0]), s), z, s, **both))
        _clean(*compile_and_compare(lambda z, s: (z * 1).index_add(-1, torch.tensor(0), s, alpha=2.5), z, s, **both))

    def inplace(z, s):
        w = z * 1
        w.index_add_(0, torch.tensor([0]), s)
        return w

    _clean(*compile_and_compare(inplace, torch.tensor(1 + 2j), torch.tensor(-1j), post_grad=True))


def test_gradients_of_gathers_accumulate_in_pairs():
    # The gradient of an index with repeated positions is an accumulating
    # index_put, rewritten on the pair tensor after autograd.
    z = torch.randn(4, 5, dtype=torch.complex64)
    cases = [lambda z: z[torch.tensor([0, 0, 3])] * 2, lambda z: torch.index_select(z, 1, torch.tensor([1, 1, 2])),
             lambda z: torch.gather(z, 1, torch.tensor([[0, 0, 1]] * 4)).exp()]
    for fn in cases:
        _clean(*compile_and_compare(fn, z, post_grad=True))


def test_accumulating_index_put_matches_eager():
    z, v = torch.randn(5, 3, dtype=torch.complex128), torch.randn(4, 3, dtype=torch.complex128)
    index = torch.tensor([1, 4, 1, 1])
    _clean(*compile_and_compare(lambda z, v: torch.index_put(z, (index,), v, accumulate=True), z, v, post_grad=True))

    def inplace(z, v):
        w = z.clone()
        w.index_put_((index,), v, accumulate=True)
        return w

    _clean(*compile_and_compare(inplace, z, v, post_grad=True))


def test_empty_complex_tensors_are_pairs():
    # What an uninitialized tensor holds is unspecified: only its use counts.
    def fn(z, w):
        return torch.empty_like(z).copy_(w) * z + z.new_empty(4, 6).fill_(1j) + torch.empty(6, dtype=z.dtype).fill_(2)

    z, w = torch.randn(4, 6, dtype=torch.complex64), torch.randn(4, 6, dtype=torch.complex64)
    _clean(*compile_and_compare(fn, z, w, post_grad=True))
