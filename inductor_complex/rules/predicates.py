"""Comparisons, predicates and selection on complex values."""

from __future__ import annotations

import torch

from ..values import Pair
from .common import fake, is_tensor_proxy
from .pair_math import (
    is_tensor,
    op_dtype,
    operand_shape,
    pack,
    promoted_parts,
    same_shape,
)
from .registry import Unsupported, rule

# ---------------------------------------------------- predicates, selection


def _equal(self, other):
    if not isinstance(self, Pair) and not isinstance(other, Pair):
        raise Unsupported("no complex operand")
    dtype = (self if isinstance(self, Pair) else other).dtype
    if isinstance(self, Pair) and isinstance(other, Pair):
        dtype = torch.promote_types(self.dtype, other.dtype)
    s_re, s_im = promoted_parts(self, dtype)
    o_re, o_im = promoted_parts(other, dtype)
    terms = []
    for x, y in ((s_re, o_re), (s_im, o_im)):
        if is_tensor(x) or is_tensor(y):
            terms.append(x == y)
        elif x != y:
            terms.append(False)
    if any(t is False for t in terms):
        like = next(t for t in (s_re, s_im, o_re, o_im) if is_tensor(t))
        return torch.zeros_like(like, dtype=torch.bool), self, other
    result = terms[0] if len(terms) == 1 else terms[0] & terms[1]
    return result, self, other


@rule("eq")
def eq(self, other, *, out):
    result, _, _ = _equal(self, other)
    _check_bool_shape(result, out, self, other)
    return result


@rule("ne")
def ne(self, other, *, out):
    result, _, _ = _equal(self, other)
    _check_bool_shape(result, out, self, other)
    return ~result


def _check_bool_shape(result, out, self, other):
    if not (isinstance(out, torch.Tensor) and out.dtype == torch.bool):
        raise Unsupported("expected a bool result")
    # x == y with both tensor parts always has the broadcast shape; a real
    # operand's imaginary 0 could leave it short (`z.im == 0`): refuse then.
    for s in map(operand_shape, (self, other)):
        if s is not None and not same_shape(s, tuple(out.shape)):
            if not (isinstance(self, Pair) and isinstance(other, Pair)):
                raise Unsupported("comparison with a broadcast real operand")


@rule("isnan")
def isnan(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("isnan of a real tensor")
    return torch.isnan(z.re) | torch.isnan(z.im)


@rule("isinf")
def isinf(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("isinf of a real tensor")
    return torch.isinf(z.re) | torch.isinf(z.im)


@rule("isfinite")
def isfinite(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("isfinite of a real tensor")
    return torch.isfinite(z.re) & torch.isfinite(z.im)


@rule("where")
def where(condition, self=None, other=None, *, out):
    if self is None or other is None:
        raise Unsupported("where(condition) alone")
    if not is_tensor_proxy(condition) or fake(condition).dtype != torch.bool:
        raise Unsupported("a condition that is not a bool tensor")
    dtype = op_dtype(out)
    s_re, s_im = promoted_parts(self, dtype)
    o_re, o_im = promoted_parts(other, dtype)
    if not (is_tensor(s_re) or is_tensor(o_re)):
        raise Unsupported("two number branches")
    re = torch.where(condition, s_re, o_re)
    im = torch.where(condition, s_im, o_im) if (is_tensor(s_im) or is_tensor(o_im)) else None
    if im is None:
        im = torch.where(condition, torch.full_like(re, s_im), o_im)
    return pack(re, im, out, self, other, condition)


@rule("masked_fill")
def masked_fill(z, mask, value, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("masked_fill of a real tensor")
    dtype = op_dtype(out)
    if is_tensor_proxy(value) and fake(value).ndim != 0:
        raise Unsupported("masked_fill with a non-0-d tensor value")
    v_re, v_im = promoted_parts(value, dtype)
    z_re, z_im = promoted_parts(z, dtype)
    return pack(torch.where(mask, v_re, z_re), torch.where(mask, v_im, z_im), out, z, mask)


# ------------------------------------------------------- truth of a complex value
# A complex value is true when either part is nonzero (NaN counts as nonzero,
# as in eager's `z != 0`); the logical ops and all/any read it so.


def _truth(value):
    if isinstance(value, Pair):
        return (value.re != 0) | (value.im != 0)
    if is_tensor_proxy(value):
        return value != 0
    raise Unsupported(f"logical operand {value!r}")


def _bool_result(result, out):
    if not (isinstance(out, torch.Tensor) and out.dtype == torch.bool):
        raise Unsupported("expected a bool result")
    return result


@rule("logical_not")
def logical_not(z, *, out):
    return _bool_result(~_truth(z), out)


@rule("logical_and")
def logical_and(a, b, *, out):
    return _bool_result(_truth(a) & _truth(b), out)


@rule("logical_or")
def logical_or(a, b, *, out):
    return _bool_result(_truth(a) | _truth(b), out)


@rule("logical_xor")
def logical_xor(a, b, *, out):
    return _bool_result(_truth(a) ^ _truth(b), out)


@rule("all")
def all_(z, *args, out, **kwargs):
    if not isinstance(z, Pair):
        raise Unsupported("all of a real tensor")
    return _bool_result(torch.all(_truth(z), *args, **kwargs), out)


@rule("any")
def any_(z, *args, out, **kwargs):
    if not isinstance(z, Pair):
        raise Unsupported("any of a real tensor")
    return _bool_result(torch.any(_truth(z), *args, **kwargs), out)
