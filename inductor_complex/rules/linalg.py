"""Complex matrix products as real ones: the 4-multiplication form, in one GEMM.

``(A + iB)(C + iD) = (AC - BD) + i(AD + BC)``. When both operands are
matrices (or batches of them) the four products come from one real GEMM of
the stacked parts, ``[A; B] @ [C | D] = [[AC, AD], [BC, BD]]``: the same
products (the same numbers as four separate GEMMs), one launch, and each part
copied to a contiguous operand once. A real operand gives two products, also
stacked into one GEMM. ``einsum`` gets the same from one call with a label
for each operand's pair dim. 1-d operands use four separate calls.

Measured (perf/bench_complex_matmul.py, perf/results/matmul_forms_*): the
3-multiplication Gauss form ``(A+B)(C+D) - AC - BD`` saves a GEMM, but on
nearly-real inputs its imaginary part is off by 5e-3 (complex64) where
eager's is off by 5e-7, so it is not used; the stacked form was faster than
four separate GEMMs on the CPU in every shape but one, where they tied.

Every call is the same op on the parts (``matmul`` stays ``matmul`` with its
own broadcasting, ``einsum`` keeps its equation), so shapes follow eager.
Results agree with eager's complex BLAS up to summation order; with
infinite/NaN entries they can differ, as two BLAS libraries do, since eager's
``cgemm`` does not specify its product formula.
"""

from __future__ import annotations

import string

import torch
import torch.nn.functional as F

from ..values import Pair, real_dtype
from .common import cast, fake, is_tensor_proxy, require_complex_out
from .registry import Unsupported, rule

_SUPPORTED = (torch.complex64, torch.complex128)


def _operand_parts(x, part):
    if isinstance(x, Pair):
        if x.dtype not in _SUPPORTED:
            raise Unsupported(f"{x.dtype} operand")
        data = cast(x.data, x.part_dtype, part)
        return data[..., 0], data[..., 1]
    if is_tensor_proxy(x):
        if fake(x).dtype != part:
            raise Unsupported("a real operand of another dtype (eager refuses mixed matmul)")
        return x, None
    raise Unsupported(f"operand {x!r}")


def _combine(product, a, b, out, *, stack=False):
    """``a · b`` for complex or real operands; ``stack`` when both are (batches of)
    matrices, so the products can share one GEMM (rows of ``a`` on dim -2,
    columns of ``b`` on dim -1)."""
    require_complex_out(out)
    if out.dtype not in _SUPPORTED:
        raise Unsupported(f"{out.dtype} result")
    part = real_dtype(out.dtype)
    ar, ai = _operand_parts(a, part)
    br, bi = _operand_parts(b, part)
    if ai is None and bi is None:
        raise Unsupported("no complex operand")
    if stack:
        re, im = _stacked_products(product, ar, ai, br, bi)
    elif bi is None:
        re, im = product(ar, br), product(ai, br)
    elif ai is None:
        re, im = product(ar, br), product(ar, bi)
    else:
        re = product(ar, br) - product(ai, bi)
        im = product(ar, bi) + product(ai, br)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


def _stacked_products(product, ar, ai, br, bi):
    """(re, im) from one GEMM of stacked parts: ``[A; B]`` rows, ``[C | D]`` columns."""
    if bi is None:
        ac, bc = product(torch.cat((ar, ai), -2), br).chunk(2, -2)
        return ac, bc
    if ai is None:
        ac, ad = product(ar, torch.cat((br, bi), -1)).chunk(2, -1)
        return ac, ad
    top, bottom = product(torch.cat((ar, ai), -2), torch.cat((br, bi), -1)).chunk(2, -2)
    ac, ad = top.chunk(2, -1)
    bc, bd = bottom.chunk(2, -1)
    return ac - bd, ad + bc


def _ndim(x) -> int:
    return x.ndim if isinstance(x, Pair) else fake(x).ndim


@rule("matmul")
def matmul(a, b, *, out):
    return _combine(torch.matmul, a, b, out, stack=_ndim(a) >= 2 and _ndim(b) >= 2)


@rule("mm")
def mm(a, b, *, out):
    return _combine(torch.mm, a, b, out, stack=True)


@rule("bmm")
def bmm(a, b, *, out):
    return _combine(torch.bmm, a, b, out, stack=True)


@rule("einsum")
def einsum(equation, *operands, path=None, out):
    if path is not None:
        raise Unsupported("einsum with a contraction path")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or len(operands) != 2:
        raise Unsupported("einsum of other than two operands")
    stacked = _einsum_with_part_labels(equation, *operands, out)
    if stacked is not None:
        return stacked
    return _combine(lambda x, y: torch.einsum(equation, x, y), *operands, out)


def _einsum_with_part_labels(equation: str, a, b, out) -> Pair | None:
    """All products of the parts from one einsum over the pair data, or None.

    The pair dim of each complex operand gets a label of its own, kept in the
    output: ``ij,jk->ik`` becomes ``ijP,jkQ->ikPQ``, whose ``[..., p, q]`` is
    part p of ``a`` times part q of ``b``. A real operand adds no label, and
    the result is the pair itself. (The stacked GEMM of matmul, for any
    equation; explicit ``->`` equations only.)
    """
    if "->" not in equation:
        return None
    inputs, output = equation.replace(" ", "").split("->")
    terms = inputs.split(",")
    free = [c for c in string.ascii_letters if c not in equation][:2]
    if len(terms) != 2 or len(free) < 2:
        return None
    require_complex_out(out)
    if out.dtype not in _SUPPORTED:
        raise Unsupported(f"{out.dtype} result")
    part = real_dtype(out.dtype)
    operands, labels = [], ""
    for term, x, label in zip(terms, (a, b), free):
        if isinstance(x, Pair):
            _operand_parts(x, part)  # dtype checks
            operands.append(cast(x.data, x.part_dtype, part))
            terms[len(operands) - 1] = term + label
            labels += label
        else:
            operands.append(_operand_parts(x, part)[0])
    if not labels:
        raise Unsupported("no complex operand")
    result = torch.einsum(f"{terms[0]},{terms[1]}->{output}{labels}", *operands)
    if len(labels) == 1:
        return Pair(result, out.dtype, out.ndim)
    re = result[..., 0, 0] - result[..., 1, 1]
    im = result[..., 0, 1] + result[..., 1, 0]
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


def _transposed(weight):
    """``weight.mT`` (pair data: the two matrix dims sit before the pair dim)."""
    if isinstance(weight, Pair):
        return weight.with_data(weight.data.transpose(-3, -2))
    return weight.mT


@rule("linear")
def linear(x, weight, bias=None, *, out):
    # linear(x, W) = x @ Wᵀ: the weight's rows are the output columns, so they
    # stack on dim 0 (transposed in and out of the stacked helper's convention).
    if _ndim(x) >= 2 and _ndim(weight) == 2:
        result = _combine(lambda a, w: F.linear(a, w.mT), x, _transposed(weight), out, stack=True)
    else:
        result = _combine(F.linear, x, weight, out)
    if bias is None:
        return result
    part = real_dtype(out.dtype)
    if isinstance(bias, Pair):
        b_data = cast(bias.data, bias.part_dtype, part)
        return result.with_data(result.data + b_data)
    if is_tensor_proxy(bias):
        # A real bias adds to the real part only: (re + b, im + 0).
        re, im = result.data[..., 0], result.data[..., 1]
        return result.with_data(torch.stack((re + cast(bias, fake(bias).dtype, part), im + 0.0), -1))
    raise Unsupported(f"bias {bias!r}")
