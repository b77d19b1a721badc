"""``complex_blas_on_cpu``: complex matrix products on CPU under torch.compile
go to eager's complex BLAS through an opaque op on the real pairs (``True``:
all of them; ``None``, the default: the large ones); the real GEMM form
otherwise and wherever a runtime cannot call the op (exported programs,
AOTInductor)."""

from __future__ import annotations

import pytest
import torch
from complex_testing import aten_graph, assert_close, dynamo_graph

from inductor_complex import ComplexToRealPass, rewrite_exported_program
from inductor_complex.eager_kernels import MIN_MACS_PER_THREAD, REASON
from inductor_complex.fallbacks import count_complex_fallbacks


def _product(a, b):
    return torch.view_as_real((a @ b) * 2j)


def _matmuls(report):
    return [d for d in report.decisions if d.op in ("operator.matmul", "aten.mm.default", "aten.matmul.default")]


def _pair():
    return (torch.randn(4, 6, dtype=torch.complex64), torch.randn(6, 3, dtype=torch.complex64))


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_product_on_cpu_runs_eagers_complex_blas_forward_and_backward(dynamic):
    a, b = _pair()
    complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=True)
    compiled = torch.compile(_product, dynamic=dynamic, options=complex_pass.inductor_options())
    inputs = [t.clone().requires_grad_() for t in (a, b)]
    expected_inputs = [t.clone().requires_grad_() for t in (a, b)]
    with count_complex_fallbacks() as fallbacks:
        actual = compiled(*inputs)
        actual.sum().backward()
    expected = _product(*expected_inputs)
    expected.sum().backward()
    # The same BLAS call on the same values: eager's bits, forward and backward.
    assert torch.equal(actual, expected)
    assert_close([t.grad for t in inputs], [t.grad for t in expected_inputs], atol=0, rtol=0)
    forward = complex_pass.reports[0]
    assert [(d.action, d.reason) for d in _matmuls(forward)] == [("rewritten", REASON)], forward.format()
    # Inductor is left nothing complex: the op takes and returns real pairs.
    assert fallbacks.beyond_edges == [], fallbacks.ops


@pytest.mark.parametrize("shapes", [((3, 4, 6), (3, 6, 5)), ((4, 6), (2, 6, 5)), ((2, 1, 4, 6), (3, 6, 5))])
def test_batched_and_broadcast_products_train_like_eager(shapes):
    a, b = (torch.randn(s, dtype=torch.complex128) for s in shapes)
    complex_pass = ComplexToRealPass(complex_blas_on_cpu=True)
    compiled = torch.compile(lambda a, b: (a.mH.mH @ b.conj()).abs(), options=complex_pass.inductor_options())
    inputs = [t.clone().requires_grad_() for t in (a, b)]
    expected_inputs = [t.clone().requires_grad_() for t in (a, b)]
    compiled(*inputs).sum().backward()
    (expected_inputs[0].mH.mH @ expected_inputs[1].conj()).abs().sum().backward()
    assert_close([t.grad for t in inputs], [t.grad for t in expected_inputs])
    forward = complex_pass.reports[0]
    assert [d.reason for d in _matmuls(forward)] == [REASON], forward.format()  # the op ran, not the real form


def test_the_op_has_a_double_backward():
    op = torch.ops.inductor_complex.complex_matmul_cpu
    a = torch.randn(3, 4, 2, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 2, 2, dtype=torch.float64, requires_grad=True)
    for adjoint_a, adjoint_b in [(False, False), (True, False), (False, True), (True, True)]:
        x = a if not adjoint_a else a.transpose(0, 1).detach().requires_grad_()
        y = b if not adjoint_b else b.transpose(0, 1).detach().requires_grad_()
        assert torch.autograd.gradgradcheck(lambda x, y: op(x, y, adjoint_a, adjoint_b), (x, y))


@pytest.mark.parametrize("batch", [(), (3,)])
def test_the_ops_adjoint_products_are_eagers_bits_and_copy_no_more_than_eager(batch):
    # Gradients are products with an adjoint operand. Called below the op's autograd
    # kernel, matmul copied a conjugated operand first, where eager's mm takes it as a flag.
    from torch.profiler import profile

    op = torch.ops.inductor_complex.complex_matmul_cpu
    a = torch.randn(*batch, 5, 5, dtype=torch.complex64, requires_grad=True)
    b = torch.randn(*batch, 5, 5, dtype=torch.complex64, requires_grad=True)
    for adjoint_a, adjoint_b in [(False, False), (True, False), (False, True), (True, True)]:
        left, right = (a.mH if adjoint_a else a), (b.mH if adjoint_b else b)
        with torch.no_grad():  # compiled code calls the op without grad
            pairs = torch.view_as_real(a), torch.view_as_real(b)
            with profile() as ours:
                result = op(*pairs, adjoint_a, adjoint_b)
            with profile() as eagers:
                expected = torch.view_as_real(left @ right)
        assert torch.equal(result, expected), (adjoint_a, adjoint_b)
        # No copy beyond eager's own (its bmm resolves a conjugated operand; its mm does not).
        assert _copies(ours) == _copies(eagers), (adjoint_a, adjoint_b)


def _copies(prof) -> list[str]:
    return [e.name for e in prof.events() if e.name in ("aten::clone", "aten::copy_")]


def test_by_default_a_small_product_is_rewritten_as_a_real_gemm():
    a, b = _pair()
    gm = dynamo_graph(_product, a, b)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    complex_pass(gm.graph)
    assert [(d.action, d.reason) for d in _matmuls(complex_pass.last_report)] == [("rewritten", "")]
    assert "complex_matmul_cpu" not in str(gm.graph)
    gm.recompile()
    assert_close(gm(a, b), (_product(a, b),))  # (a Dynamo graph returns a tuple)


@pytest.mark.parametrize("dynamic", [False, True])
def test_by_default_a_product_from_the_threshold_on_runs_eagers_blas(dynamic):
    # Rows so that rows x 32 x 32 multiply-adds sit at the threshold, and one row fewer.
    threshold = MIN_MACS_PER_THREAD * torch.get_num_threads()
    rows = threshold // (32 * 32)
    for m, expect_op in ((rows, True), (rows - 1, dynamic)):
        a, b = torch.randn(m, 32, dtype=torch.complex64), torch.randn(32, 32, dtype=torch.complex64)
        gm = dynamo_graph(_product, a, b, dynamic=dynamic)
        complex_pass = ComplexToRealPass(fused_rotary=False)
        complex_pass(gm.graph)
        (decision,) = _matmuls(complex_pass.last_report)
        assert decision.action == "rewritten"
        # A symbolic size is not known to stay small: the op serves it (one compile, any size).
        assert decision.reason.startswith(REASON) == expect_op, (m, decision.reason)
        assert ("complex_matmul_cpu" in str(gm.graph)) == expect_op
        if expect_op:
            gm.recompile()
            assert torch.equal(gm(*gm.example_inputs)[0], _product(a, b))  # the same BLAS call: eager's bits


def test_aten_graph_of_aotinductor_rewrites_the_product():
    a, b = _pair()
    gm = aten_graph(_product, a, b)
    complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=True)  # torch.compile's choice only
    complex_pass(gm.graph)
    decisions = _matmuls(complex_pass.last_report)
    assert decisions and all((d.action, d.reason) == ("rewritten", "") for d in decisions), complex_pass.last_report.format()


def test_exported_program_rewrites_the_product():
    a, b = _pair()
    ep = rewrite_exported_program(torch.export.export(_Product(), (a, b)))
    assert not any(isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].is_complex()
                   for n in ep.graph.nodes if n.op == "call_function")
    result = ep.module()(a, b)
    assert_close(result, (_product(a, b),) if isinstance(result, tuple) else _product(a, b))


class _Product(torch.nn.Module):
    def forward(self, a, b):
        return _product(a, b)


def test_option_must_be_none_or_a_bool():
    with pytest.raises(TypeError, match="complex_blas_on_cpu"):
        ComplexToRealPass(complex_blas_on_cpu=1)
