"""A complex product with nothing to fuse stays eager's where Inductor's pair loop is scalar.

Rewritten, ``a * b`` of two graph inputs that is only returned is one loop that
reads both inputs' pairs and writes the result's: the same memory traffic as
eager's complex kernel, with nothing else fused in. Where Inductor's loops over
pairs stay scalar (CPUs without AVX-512, see :mod:`.pair_planes`) that loop is
slower than eager's vectorized, shuffling kernel: a complex64 product of 2^20
elements, one thread, AVX2, took 2.12 ms against stock compile's 1.08 and 1.95
against 1.52 in a rerun (``perf/results/avx2_host/returned_by_parts/``), the
best of the rewritten forms measured (``rules/arith.py``). Such a product is
left as it was, so it runs as stock runs it; the report says why.

The same holds one op further up: an operand computed from complex graph
inputs by a conjugate, a difference or a product with a number, that only the
product reads. Rewritten, the pair loop does both ops in one scalar pass; kept,
eager does two vector passes (2^20 complex64, one thread, medians of 9, ms,
``perf/short_chains_cpu.py``, two AVX2 hosts): ``a.conj() * b`` 2.54 rewritten
against stock's 1.41 (kept: 1.41), 2.82 against 1.46 on the earlier host;
``(a - b) * b`` 2.50 against 1.75 (kept: 1.79), 2.40 against 1.45. A product
with a number measured mixed, so it runs as stock runs it: ``(a * 2) * b`` 1.71
rewritten against stock's 1.88, but 2.75 against 2.16 on the earlier host;
``(a * 1j) * b`` 1.69 against 1.93, and 1.53 against 1.42. Other operands stay
rewritten, by the same measurements: a negation folds into the product's signs
(``(-a) * b`` 1.29 against 1.60); a costly op or a second product gains from
the fusion (``a.exp() * b`` 24.8 against 44.7, ``(a * b.real) * b`` 1.79
against 5.32, ``(a * b) * a`` 1.75 against 1.91); a sum is real arithmetic on
the words in stock too (Inductor's own decomposition). Anything whose product
or operand something else reads stays rewritten.

Where pair loops vectorize (planes, AVX-512) only complex128 products of graph
inputs stay: float64 parts move as no word, so their loop is scalar there too,
and a product of two such inputs took 1.30 ms rewritten against stock's 1.12
(2^20 elements, one thread, AVX-512, medians of 21; 1.58 against 1.42 in
``perf/results/avx512_short_chains.txt``). Their cheap operands gain from the
fusion there (``a.conj() * b`` 1.92 against 3.68, ``(a - b) * b`` 1.56 against
2.74, same file), and complex64 products in planes ran level with stock's
(0.92x to 1.05x of its speed over seven runs), so those are rewritten.

Only torch.compile's own graphs take this choice (the pass's option): exported
programs and AOTInductor, whose runtimes must not see complex, always get the
rewrite.
"""

from __future__ import annotations

import torch
import torch.fx

from .targets import normalize
from .values import fake_value

PRODUCTS = frozenset({"mul"})
# Which products stay (ComplexToRealPass.lone_products_kept): with one cheap op of
# their inputs as an operand, where pair loops are scalar; or only products of
# complex128 graph inputs, where they vectorize.
WITH_CHEAP_OPERANDS = "with cheap operands"
OF_FLOAT64_INPUTS = "of complex128 inputs"
# Operand ops that, as eager's own vector pass, measured faster than fused into a
# scalar pair loop, or mixed (a product with a number): kept, they run as stock runs them.
CHEAP_OPERAND_OPS = frozenset({"sub", "conj", "conj_physical", "mul"})
REASON = ("a product of graph inputs (or of one cheap op of them) that is only returned: nothing to fuse, "
          "and Inductor's scalar pair loop is slower than eager's complex kernel (2.12 ms against stock's 1.08, "
          "2^20 complex64, AVX2, perf/results/avx2_host/returned_by_parts/; 1.30 against 1.12 for complex128 "
          "on AVX-512, whose float64 parts no plane takes)")
OPERAND_REASON = ("computes, from graph inputs, an operand of a product that stays eager's: two vector passes in "
                  "eager measured faster than one scalar pair loop on this CPU (lone_products.py)")


def _is_input(node: torch.fx.Node) -> bool:
    return node.op in ("placeholder", "get_attr")


def _complex_on_cpu(node: torch.fx.Node) -> bool:
    value = fake_value(node)
    return isinstance(value, torch.Tensor) and value.is_complex() and value.device.type == "cpu"


def _tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    return [arg for arg in (*node.args, *node.kwargs.values()) if isinstance(arg, torch.fx.Node)]


def _cheap_op_of_inputs(node: torch.fx.Node) -> bool:
    """``node`` is one op in :data:`CHEAP_OPERAND_OPS` of complex graph inputs (and
    numbers), a product only with a number, that gives a complex CPU tensor. (A
    real tensor operand is left out: eager first widens it to a complex copy.)"""
    call = normalize(node) if node.op in ("call_function", "call_method") else None
    if call is None or call.name not in CHEAP_OPERAND_OPS:
        return False
    operands = _tensor_args(node)
    if not operands or not all(_is_input(operand) and _complex_on_cpu(operand) for operand in operands):
        return False
    if call.name == "mul" and len(operands) != 1:
        return False
    return _complex_on_cpu(node)


def _complex128_input(node: torch.fx.Node) -> bool:
    return _is_input(node) and _complex_on_cpu(node) and fake_value(node).dtype == torch.complex128


def _lone_product(node: torch.fx.Node, which: str) -> bool:
    """``node`` is a complex CPU product that is only returned, and each operand is a
    graph input, or (``which`` is :data:`WITH_CHEAP_OPERANDS`) a cheap op of graph
    inputs that only this product reads, or (:data:`OF_FLOAT64_INPUTS`) a complex128
    graph input."""
    if not node.users or any(user.op != "output" for user in node.users) or not _complex_on_cpu(node):
        return False
    call = normalize(node)
    if call is None or call.name not in PRODUCTS:
        return False
    operands = _tensor_args(node)
    if which == OF_FLOAT64_INPUTS:
        return bool(operands) and all(_complex128_input(operand) for operand in operands)
    return bool(operands) and all(
        _is_input(operand) or (_cheap_op_of_inputs(operand) and set(operand.users) == {node})
        for operand in operands)


def faster_in_eager(name: str, node: torch.fx.Node, which: str) -> str | None:
    """Why ``node`` (an op named ``name``) should stay as it was, or None: a lone
    product of the kind ``which`` names, or the cheap op that computes one of its
    operands."""
    if name in PRODUCTS and _lone_product(node, which):
        return REASON
    users = list(node.users)
    if (which == WITH_CHEAP_OPERANDS and name in CHEAP_OPERAND_OPS and len(users) == 1
            and _cheap_op_of_inputs(node) and _lone_product(users[0], which)):
        return OPERAND_REASON
    return None
