"""In-place forms (``add_``, ``mul_``, ...): computed out of place, then copied
into the pair, which views the complex storage, so the write lands.

Under autograd the out-of-place math reads a clone of the pair: autograd
saves what that math needs, and the copy back would overwrite it (eager's
in-place kernels save what they need themselves). The clone is free once
AOTAutograd has functionalized the graph."""

from __future__ import annotations

import torch

from ..values import Pair, real_dtype
from .arith import add, div, neg, product, reciprocal, square, sub
from .common import fake, is_tensor_proxy
from .power import pow_ as power
from .registry import RULES, Unsupported, rule
from .transcendental import exp, log, sgn, sqrt

# ------------------------------------------------------------- in place


def _same_dtype_in_place(z, other) -> None:
    if not isinstance(z, Pair):
        raise Unsupported("in-place op on a real tensor")
    if isinstance(other, Pair) and other.dtype != z.dtype:
        raise Unsupported("in-place op with a complex operand of another dtype")
    if is_tensor_proxy(other):
        value = fake(other)
        if torch.promote_types(real_dtype(z.dtype), value.dtype) != real_dtype(z.dtype) and value.ndim != 0:
            raise Unsupported("in-place op computing in a wider dtype")


def _in_place(compute):
    def in_place(z, *args, out, **kwargs):
        other = args[0] if args else None
        _same_dtype_in_place(z, other)
        source = z.with_data(z.data.clone()) if out.requires_grad else z
        result = compute(source, *args, out=out, **kwargs)
        z.data.copy_(result.data)
        return z

    in_place.__name__ = f"{compute.__name__}_"
    return in_place


def _mul(z, other, *, out):
    return product(z, other, out)


def _neg(z, *, out):
    return neg(z, out=out)


_IN_PLACE = {
    "add_": add,
    "sub_": sub,
    "mul_": _mul,
    "div_": div,
    "neg_": _neg,
    "reciprocal_": reciprocal,
    "square_": square,
    "sqrt_": sqrt,
    "exp_": exp,
    "log_": log,
    "sgn_": sgn,
    "pow_": power,
}
for _name, _compute in _IN_PLACE.items():
    if _name not in RULES:  # arith.py may own some of these
        rule(_name)(_in_place(_compute))


@rule("zero_")
def zero_(z, *, out):
    # Zeroing the pair tensor zeroes both parts in the complex storage it views.
    if not isinstance(z, Pair):
        raise Unsupported("zero_ of a real tensor")
    z.data.zero_()
    return z
