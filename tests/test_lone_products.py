"""A complex product with nothing to fuse stays eager's where its pair loop is scalar
(``lone_products.py``), and only there: anything fused with it, complex64 on a CPU
whose pair loops vectorize, and graphs for runtimes that must not see complex get
the rewrite."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass, lone_products
from inductor_complex.exported import rewrite_exported_program


def _compile(fn, *args, planes_on_cpu=False):
    complex_pass = ComplexToRealPass(planes_on_cpu=planes_on_cpu)
    out, codes = run_and_get_code(torch.compile(fn, options=complex_pass.inductor_options()), *args)
    return out, "\n".join(codes), complex_pass


def _actions(complex_pass) -> set[tuple[str, bool]]:
    """(action, whether the reason is the lone-product one) of every decision."""
    return {(d.action, d.reason == lone_products.REASON) for r in complex_pass.reports for d in r.decisions}


def _product(a, b):
    return a * b


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_product_of_inputs_only_returned_runs_as_stock_runs_it(dtype):
    a, b = (torch.randn(4, 64, dtype=dtype) for _ in range(2))
    out, code, complex_pass = _compile(_product, a, b)
    assert torch.equal(out, a * b) and out.stride() == (a * b).stride()
    assert "torch.ops.aten.mul.Tensor(arg0_1, arg1_1)" in code, code
    assert ("kept", True) in _actions(complex_pass)


def test_kept_product_trains_like_eager():
    a, b = (torch.randn(3, 8, dtype=torch.complex64, requires_grad=True) for _ in range(2))
    out, _, complex_pass = _compile(_product, a, b)
    assert torch.equal(out, a * b)
    assert ("kept", True) in _actions(complex_pass)
    grads = torch.autograd.grad(out.abs().sum(), (a, b))
    expected = torch.autograd.grad((a * b).abs().sum(), (a, b))
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got, want)


def test_scalar_operand_and_real_input_count_as_nothing_to_fuse():
    z, r = torch.randn(16, dtype=torch.complex64), torch.randn(16)
    out, _, complex_pass = _compile(lambda z, r: (z * 2j, z * r), z, r)
    assert torch.equal(out[0], z * 2j) and torch.equal(out[1], z * r)
    assert _actions(complex_pass) == {("kept", True)}


def _returned_and_read(a, b):
    product = a * b
    return product, product.abs()


def _operand_returned_too(a, b):
    difference = a - b
    return difference * b, difference


@pytest.mark.parametrize("fn", [
    lambda a, b: a * b + a,  # the product is read by more math
    lambda a, b: a.exp() * b,  # an operand's op is costly
    lambda a, b: (a * b) * a,  # a second complex product
    lambda a, b: (-a) * b,  # a negation folds into the product's signs
    lambda a, b: (a + b) * b,  # a sum (Inductor's own decomposition makes it real arithmetic)
    lambda a, b: (a * b.real) * b,  # a product with a real tensor (eager widens it first)
    _returned_and_read,
    _operand_returned_too,
], ids=["read_by_a_sum", "costly_operand", "two_products", "negated_operand", "summed_operand", "real_tensor_operand",
        "returned_and_read", "operand_returned_too"])
def test_anything_to_fuse_gets_the_rewrite(fn):
    a, b = (torch.randn(32, dtype=torch.complex64) for _ in range(2))
    out, code, complex_pass = _compile(fn, a, b)
    torch.testing.assert_close(out, fn(a, b))
    assert ("kept", True) not in _actions(complex_pass)
    assert all(d.reason != lone_products.OPERAND_REASON for r in complex_pass.reports for d in r.decisions)
    assert "aten.mul.Tensor(" not in code, code


@pytest.mark.parametrize("fn, operand_op", [
    (lambda a, b: a.conj() * b, "aten._conj"),
    (lambda a, b: (a - b) * b, "aten.sub.Tensor"),
    (lambda a, b: (a * 2) * b, "aten.mul.Tensor(arg0_1, 2"),
    (lambda a, b: (a * 1j) * b, "aten.mul.Tensor(arg0_1, 1j"),
], ids=["conj", "difference", "double", "times_i"])
def test_one_cheap_op_of_inputs_under_a_lone_product_stays_eagers_too(fn, operand_op):
    # Two vector passes in eager measured faster than one scalar pair loop (lone_products.py).
    a, b = (torch.randn(4, 64, dtype=torch.complex64) for _ in range(2))
    out, code, complex_pass = _compile(fn, a, b)
    expected = fn(a, b)
    assert torch.equal(out, expected) and out.stride() == expected.stride()
    assert operand_op in code and "aten.mul.Tensor(" in code, code
    reasons = [d.reason for r in complex_pass.reports for d in r.decisions]
    assert lone_products.OPERAND_REASON in reasons and lone_products.REASON in reasons, reasons


def test_vectorized_pair_loops_get_the_rewrite():
    # (conftest pins the default to vectorized pair loops on every host)
    a, b = (torch.randn(64, dtype=torch.complex64) for _ in range(2))
    out, code, complex_pass = _compile(_product, a, b, planes_on_cpu=None)
    assert torch.equal(out, a * b)
    assert ("kept", True) not in _actions(complex_pass)
    assert "aten.mul.Tensor(" not in code, code


def test_where_pair_loops_vectorize_only_complex128_inputs_products_stay():
    # (conftest pins the default to vectorized pair loops; float64 parts take no plane)
    a, b = (torch.randn(64, dtype=torch.complex128) for _ in range(2))
    out, code, complex_pass = _compile(_product, a, b, planes_on_cpu=None)
    assert torch.equal(out, a * b) and ("kept", True) in _actions(complex_pass)
    assert "torch.ops.aten.mul.Tensor(arg0_1, arg1_1)" in code, code
    r = torch.randn(64, dtype=torch.float64)
    for fn, args in [(lambda a, b: a.conj() * b, (a, b)),  # its cheap operand gains from the fusion there
                     (lambda a, r: a * r, (a, r)),  # eager widens the real input first
                     (_product, (a.to(torch.complex64), b.to(torch.complex64)))]:  # planes
        torch._dynamo.reset()
        out, code, complex_pass = _compile(fn, *args, planes_on_cpu=None)
        torch.testing.assert_close(out, fn(*args))
        assert ("kept", True) not in _actions(complex_pass) and "aten.mul.Tensor(" not in code, code


def test_planes_asked_for_everywhere_rewrite_complex128_products_too():
    a, b = (torch.randn(64, dtype=torch.complex128) for _ in range(2))
    out, code, complex_pass = _compile(_product, a, b, planes_on_cpu=True)
    assert torch.equal(out, a * b)
    assert ("kept", True) not in _actions(complex_pass) and "aten.mul.Tensor(" not in code, code


class _Product(torch.nn.Module):
    def forward(self, a, b):
        return a * b


def _scalar_pair_loops_everywhere(monkeypatch):
    monkeypatch.setattr(ComplexToRealPass, "scalar_pair_loops_on_cpu", lambda self: True)


def test_an_aten_graph_at_the_pre_grad_hook_gets_the_rewrite(monkeypatch):
    # (AOTInductor hands the hook an exported program's aten graph)
    _scalar_pair_loops_everywhere(monkeypatch)
    a, b = (torch.randn(8, dtype=torch.complex64) for _ in range(2))
    graph = torch.export.export(_Product(), (a, b)).graph_module.graph
    complex_pass = ComplexToRealPass()
    complex_pass(graph)
    assert ("rewritten", False) in _actions(complex_pass)
    assert ("kept", True) not in _actions(complex_pass)


def test_a_rewritten_exported_program_holds_no_complex_product(monkeypatch):
    _scalar_pair_loops_everywhere(monkeypatch)
    a, b = (torch.randn(8, dtype=torch.complex64) for _ in range(2))
    program = rewrite_exported_program(torch.export.export(_Product(), (a, b)))
    products = [n for n in program.graph.nodes if n.op == "call_function" and "mul" in str(n.target)]
    assert products and all(not n.meta["val"].is_complex() for n in products)
    assert torch.equal(program.module()(a, b), a * b)


@pytest.mark.parametrize("fn", [lambda a, b: a.conj() * b, lambda a, b: (a - b) * b, lambda a, b: (a * 2) * b],
                         ids=["conj", "difference", "double"])
def test_kept_operand_and_product_train_like_eager(fn):
    a, b = (torch.randn(3, 8, dtype=torch.complex64, requires_grad=True) for _ in range(2))
    out, _, complex_pass = _compile(fn, a, b)
    expected = fn(a, b)
    torch.testing.assert_close(out, expected)
    reasons = [d.reason for r in complex_pass.reports for d in r.decisions]
    assert lone_products.OPERAND_REASON in reasons, reasons
    grads = torch.autograd.grad(out.abs().sum(), (a, b))
    want = torch.autograd.grad(expected.abs().sum(), (a, b))
    for got, wanted in zip(grads, want):
        torch.testing.assert_close(got, wanted)
