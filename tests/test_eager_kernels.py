"""``complex_blas_on_cpu=True``: complex matrix products on CPU under
torch.compile are left to eager's complex BLAS, measured faster than every
real GEMM form; rewritten by default and wherever a runtime must not see
complex (exported programs, AOTInductor)."""

from __future__ import annotations

import pytest
import torch
from complex_testing import aten_graph, assert_close, dynamo_graph

from inductor_complex import ComplexToRealPass, rewrite_exported_program
from inductor_complex.eager_kernels import REASON
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
    assert_close(actual, expected)
    assert_close([t.grad for t in inputs], [t.grad for t in expected_inputs])
    forward = complex_pass.reports[0]
    assert [(d.action, d.reason) for d in _matmuls(forward)] == [("kept", REASON)], forward.format()
    assert forward.count("rewritten") >= 1  # the product's neighbours are still real math
    backward = complex_pass.post_grad.reports[-1]
    assert [d.reason for d in _matmuls(backward) if d.action == "bridged"] == [REASON, REASON], backward.format()
    # Inductor runs the three products (forward, two gradients) as eager's, and nothing else complex but views.
    assert fallbacks.beyond_edges == ["aten.mm.default"] * 3, fallbacks.ops


def test_by_default_the_product_is_rewritten():
    a, b = _pair()
    gm = dynamo_graph(_product, a, b)
    complex_pass = ComplexToRealPass(fused_rotary=False)  # leaves Inductor nothing complex
    complex_pass(gm.graph)
    assert [d.action for d in _matmuls(complex_pass.last_report)] == ["rewritten"]
    gm.recompile()
    assert_close(gm(a, b), (_product(a, b),))  # (a Dynamo graph returns a tuple)


def test_aten_graph_of_aotinductor_rewrites_the_product():
    a, b = _pair()
    gm = aten_graph(_product, a, b)
    complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=True)  # torch.compile's choice only
    complex_pass(gm.graph)
    decisions = _matmuls(complex_pass.last_report)
    assert decisions and all(d.action == "rewritten" for d in decisions), complex_pass.last_report.format()


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


def test_option_must_be_a_bool():
    with pytest.raises(TypeError, match="complex_blas_on_cpu"):
        ComplexToRealPass(complex_blas_on_cpu=1)
