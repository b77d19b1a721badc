"""New complex results as dtype views of their pair buffers (``inductor_complex/complex_outputs.py``).

The claim: where a graph past autograd copied a pair into a new complex tensor
(``aten.complex``), the result is now a ``view.dtype`` of the pair buffer, with
eager's values (bit for bit), sizes and strides, no ``_base``, and it takes
eager code's in-place writes with grad; wherever the copy is needed (the pair is
read or returned elsewhere, its pairs are not adjacent) it stays.
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass, pair_planes

COPY = "torch.ops.aten.complex.default("
VIEW = "torch.ops.aten.view.dtype("


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compiled_run(fn, *args, dynamic=None):
    """(outputs, generated code) of ``fn`` under the pass, pairs left as pairs (no planes)."""
    options = ComplexToRealPass(planes_on_cpu=False).inductor_options()
    outs, codes = run_and_get_code(torch.compile(fn, dynamic=dynamic, options=options), *args)
    return outs, "\n".join(codes)


def _product_of_a_negation(a, b):
    # (a product of the inputs alone, or of a double, stays eager's on scalar pair loops:
    # lone_products.py; a negation folds into the product's signs)
    return (-a) * b


def _same_bits(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    assert torch.equal(torch.view_as_real(actual), torch.view_as_real(expected))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(4096,), (4, 8, 16)])
def test_returned_product_is_a_view_of_its_pairs_that_takes_writes_with_grad(dtype, shape):
    a, b = (torch.randn(shape, dtype=dtype) for _ in range(2))
    out, code = _compiled_run(_product_of_a_negation, a, b)
    _same_bits(out, _product_of_a_negation(a, b))
    assert COPY not in code and VIEW in code, code
    assert out._base is None
    w = torch.randn(shape, dtype=dtype, requires_grad=True)
    out.mul_(w)  # raises for a view made under the inference graph's no_grad
    out.abs().sum().backward()
    assert w.grad is not None


def test_dynamic_sizes_view_their_pairs_too():
    a, b = (torch.randn(3, 5, 8, dtype=torch.complex64) for _ in range(2))
    out, code = _compiled_run(lambda a, b: (a * b).exp(), a, b, dynamic=True)
    torch.testing.assert_close(out, (a * b).exp())
    assert out.stride() == (a * b).exp().stride()
    assert COPY not in code and VIEW in code, code


def test_training_outputs_and_gradients_are_eagers():
    a, b = (torch.randn(6, 10, dtype=torch.complex64, requires_grad=True) for _ in range(2))
    out, code = _compiled_run(lambda a, b: a * b + a, a, b)
    # (not bit for bit: Inductor's C++ may contract the fused product and sum, test_fma_contraction.py)
    torch.testing.assert_close(out, a * b + a)
    assert out.stride() == (a * b + a).stride()
    assert COPY not in code, code
    grads = torch.autograd.grad(out.abs().sum(), (a, b))
    expected = torch.autograd.grad((a * b + a).abs().sum(), (a, b))
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want)


def test_a_pair_returned_as_a_real_view_too_still_shares_its_storage():
    # view_as_real(z) is z's storage in eager: both outputs must stay one buffer.
    a, b = (torch.randn(64, dtype=torch.complex64) for _ in range(2))
    (z, real), _ = _compiled_run(lambda a, b: ((a * b), torch.view_as_real(a * b)), a, b)
    _same_bits(z, a * b)
    eager_z = a * b
    assert torch.equal(real, torch.view_as_real(eager_z))

    def fn(a, b):
        z = a * b
        return z, torch.view_as_real(z)

    (z, real), _ = _compiled_run(fn, a, b)
    assert real.untyped_storage().data_ptr() == z.untyped_storage().data_ptr()
    z[0] = 7
    assert real[0, 0] == 7


def test_transposed_result_keeps_eagers_strides():
    # Eager's product of transposed inputs is laid out like them: its pairs are not
    # adjacent along the last dim, so no view of [..., 2n] gives it; the copy stays.
    a, b = (torch.randn(8, 16, dtype=torch.complex64).t() for _ in range(2))
    out, code = _compiled_run(_product_of_a_negation, a, b)
    _same_bits(out, _product_of_a_negation(a, b))
    assert COPY in code, code


@pytest.mark.parametrize("verdict, planes, scalar", [
    (None, None, False), ("avx2", None, True), (None, False, True), ("avx2", True, False)])
def test_scalar_pair_loops_follow_the_planes_choice(monkeypatch, verdict, planes, scalar):
    monkeypatch.undo()  # (conftest pins the form for graph dumps)
    monkeypatch.setattr(pair_planes, "words_unvectorized_reason", lambda: verdict)
    assert ComplexToRealPass(planes_on_cpu=planes).scalar_pair_loops_on_cpu() is scalar
