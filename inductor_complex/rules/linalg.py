"""Complex matrix products as real ones: the 4-multiplication form, in one GEMM.

``(A + iB)(C + iD) = (AC - BD) + i(AD + BC)``. When ``b`` is a matrix (or a
batch of them) and both operands are complex, the product is one real GEMM
in the pair layout itself: ``a``'s ``[.., M, K, 2]`` read as ``[.., M, 2K]``
times an interleaved block of ``b``'s parts (``[.., 2K, 2N]``) is the result's
``[.., M, N, 2]``, with no copy of ``a`` or of the result. With one real
operand the two products come from one GEMM of stacked parts
(``[A; B] @ C`` or ``A @ [C | D]``). ``einsum`` gets all four products from one
call with a label for each operand's pair dim. A 1-d ``b`` uses four calls.

Measured (perf/bench_complex_matmul.py, perf/results/matmul_forms_*, CPU):
the 3-multiplication Gauss form ``(A+B)(C+D) - AC - BD`` saves a GEMM, but on
nearly-real inputs its imaginary part is off by 5e-3 (complex64) where
eager's is off by 5e-7, so it is not used. Of the 4-multiplication forms the
interleaved GEMM was the fastest in 15 of 16 shape/dtype/mode rows and tied
in the last (0.55 to 0.90 of the time of four separate GEMMs; eager's complex
BLAS, which reads the interleaved layout natively, took 0.39 to 0.78), with
errors within 2x of four GEMMs'.

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
from .common import (
    cast,
    fake,
    is_scalar,
    is_tensor_proxy,
    require_complex_out,
    round_to,
)
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
    if stack and ai is not None and bi is not None:
        data = _interleaved_product(product, cast(a.data, a.part_dtype, part), br, bi)
        return Pair(data, out.dtype, out.ndim)
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


def _interleaved_product(product, a_data, br, bi):
    """``a · b`` in the pair layout itself: one GEMM, no copy of ``a`` or the result.

    ``a``'s pair data ``[.., M, K, 2]`` read as ``[.., M, 2K]`` (re and im of
    each k side by side) times the interleaved block ``[.., 2K, 2N]`` whose
    rows ``2k``/``2k+1`` are ``(re, im)`` of ``b[k, n]`` and ``(-im, re)``
    gives ``[.., M, 2N]``, i.e. ``(re, im)`` of each ``n`` side by side.
    """
    even = torch.stack((br, bi), -1)  # [.., K, N, 2]: row 2k
    odd = torch.stack((-bi, br), -1)  # row 2k + 1
    block = torch.stack((even, odd), -3).flatten(-4, -3).flatten(-2)
    return product(a_data.flatten(-2), block).unflatten(-1, (-1, 2))


def _stacked_products(product, ar, ai, br, bi):
    """(re, im) with one real operand, from one GEMM: ``[A; B] @ C`` or ``A @ [C | D]``."""
    if bi is None:
        ac, bc = product(torch.cat((ar, ai), -2), br).chunk(2, -2)
        return ac, bc
    ac, ad = product(ar, torch.cat((br, bi), -1)).chunk(2, -1)
    return ac, ad


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


# ----------------------------------------------- addmm, addmv, baddbmm, addbmm
#
# ``beta * input + alpha * (a @ b)``. Eager's CPU kernels copy ``input`` into
# the result and let the complex BLAS call scale it by ``beta`` and add
# ``alpha`` times the product: with ``beta == 0`` the input is never read
# (NaNs in it do not show), and with ``alpha == 0`` the product is never
# computed (NaNs in a/b do not show either; refused here, eager's gradient for
# a/b would still multiply by them). Scalars are rounded to the part dtype
# first, as eager's ``Scalar.to<complex<float>>()`` does.


def _scaled(data, scalar, part):
    """``scalar * pair data`` with complex-scalar arithmetic (1 is exact and skipped)."""
    s = complex(scalar)
    if s == 1:
        return data
    re, im = round_to(s.real, part), round_to(s.imag, part)
    if im == 0:
        return data * re  # a real scalar scales both parts
    d_re, d_im = data[..., 0], data[..., 1]
    return torch.stack((d_re * re - d_im * im, d_re * im + d_im * re), -1)


def _add_scaled_product(input, product: Pair, beta, alpha, out) -> Pair:
    for name, value in (("beta", beta), ("alpha", alpha)):
        if not is_scalar(value):
            raise Unsupported(f"{name}={value!r}")
    if complex(alpha) == 0:
        raise Unsupported("alpha=0: eager skips the product, NaNs in the operands included")
    if not isinstance(input, Pair) or input.dtype != out.dtype:
        raise Unsupported("an input that is not complex of the result's dtype (eager refuses mixed dtypes)")
    part = real_dtype(out.dtype)
    scaled_product = _scaled(product.data, alpha, part)
    if complex(beta) == 0:
        # The input is ignored, as in eager, yet gets eager's zero gradient.
        ignored = torch.zeros_like(scaled_product, dtype=torch.bool)
        return product.with_data(torch.where(ignored, input.data, scaled_product))
    return product.with_data(_scaled(input.data, beta, part) + scaled_product)


def _complex_operands(*operands):
    if not all(isinstance(x, Pair) for x in operands):
        raise Unsupported("a real matrix operand (eager refuses mixed dtypes)")


@rule("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out):
    _complex_operands(mat1, mat2)
    return _add_scaled_product(input, mm(mat1, mat2, out=out), beta, alpha, out)


@rule("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out):
    _complex_operands(batch1, batch2)
    return _add_scaled_product(input, bmm(batch1, batch2, out=out), beta, alpha, out)


@rule("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1, out):
    _complex_operands(mat, vec)
    return _add_scaled_product(input, _combine(torch.mv, mat, vec, out), beta, alpha, out)


@rule("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out):
    # The sum over the batch of [n, m] @ [m, p] is one [n, B*m] @ [B*m, p] product.
    _complex_operands(batch1, batch2)
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise Unsupported("addbmm of other than 3-d batches")
    rows = Pair(batch1.data.transpose(0, 1).flatten(1, 2), batch1.dtype, 2)
    columns = Pair(batch2.data.flatten(0, 1), batch2.dtype, 2)
    return _add_scaled_product(input, mm(rows, columns, out=out), beta, alpha, out)
