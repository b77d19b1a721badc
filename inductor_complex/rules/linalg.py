"""Complex matrix products as real ones: the 4-multiplication form.

``(A + iB)(C + iD) = (AC - BD) + i(AD + BC)``: four real products of the
parts (two when one operand is real). The 3-multiplication Gauss form saves
a product but loses accuracy through cancellation (``(A+B)(C+D) - AC - BD``),
so it is not used. Every call is the same op on the parts (``matmul`` stays
``matmul`` with its own broadcasting and 1-d rules, ``einsum`` keeps its
equation), so shapes follow eager. Results agree with eager's complex BLAS
up to summation order; with infinite/NaN entries they can differ, as two BLAS
libraries do, since eager's ``cgemm`` does not specify its product formula.
"""

from __future__ import annotations

import torch

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


def _combine(product, a, b, out):
    require_complex_out(out)
    if out.dtype not in _SUPPORTED:
        raise Unsupported(f"{out.dtype} result")
    part = real_dtype(out.dtype)
    ar, ai = _operand_parts(a, part)
    br, bi = _operand_parts(b, part)
    if ai is None and bi is None:
        raise Unsupported("no complex operand")
    if bi is None:
        re, im = product(ar, br), product(ai, br)
    elif ai is None:
        re, im = product(ar, br), product(ar, bi)
    else:
        re = product(ar, br) - product(ai, bi)
        im = product(ar, bi) + product(ai, br)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


@rule("matmul")
def matmul(a, b, *, out):
    return _combine(torch.matmul, a, b, out)


@rule("mm")
def mm(a, b, *, out):
    return _combine(torch.mm, a, b, out)


@rule("bmm")
def bmm(a, b, *, out):
    return _combine(torch.bmm, a, b, out)


@rule("einsum")
def einsum(equation, *operands, path=None, out):
    if path is not None:
        raise Unsupported("einsum with a contraction path")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or len(operands) != 2:
        raise Unsupported("einsum of other than two operands")
    return _combine(lambda x, y: torch.einsum(equation, x, y), *operands, out)


@rule("linear")
def linear(x, weight, bias=None, *, out):
    result = _combine(lambda a, w: torch.nn.functional.linear(a, w), x, weight, out)
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
