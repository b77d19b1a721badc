"""Real-pair math that matches eager's complex kernels term for term.

Shared by the arithmetic, transcendental, predicate and reduction rules:
promotion of operands to the op's complex dtype (Python numbers rounded to the
part dtype, as eager casts wrapped numbers), IEEE arithmetic that folds only
exact identities, and packing parts back into a pair.

Why term for term: eager's formulas keep terms that only matter for
non-finite values (``x * 0`` is NaN for an infinite ``x``; ``-0.0 + 0.0`` is
``+0.0``), and a later branch-cut op (``log``, ``sqrt``) or ``isnan`` turns
those differences into different numbers. Where eager's vectorized and
scalar CPU loops disagree with each other, the rules follow the vectorized one.
"""

from __future__ import annotations

import math

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..values import Pair
from .common import fake, is_tensor_proxy, parts, require_complex_out, round_to
from .fused import fused_multiply_add
from .registry import Unsupported

Proxy = torch.fx.Proxy
SUPPORTED_DTYPES = (torch.complex64, torch.complex128)


def op_dtype(out) -> torch.dtype:
    require_complex_out(out)
    if out.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{out.dtype} (eager computes it in a wider opmath type)")
    return out.dtype


def is_tensor(x) -> bool:
    return isinstance(x, (Proxy, torch.Tensor))


def scalar_div(x: float, y: float) -> float:
    if y != 0:
        return x / y
    if x != x or x == 0 or y != y:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


class ScalarOps:
    """IEEE arithmetic on tensors/proxies and Python floats rounded to ``part``.

    Only exact identities are simplified away (``x * 1``, ``x - (+0)``,
    ``x + (-0)``); everything else is emitted so non-finite values and signed
    zeros come out as eager's.
    """

    def __init__(self, part: torch.dtype):
        self.part = part

    def r(self, x):
        return x if is_tensor(x) else round_to(float(x), self.part)

    def mul(self, x, y):
        if not is_tensor(x) and not is_tensor(y):
            return self.r(x * y)
        if not is_tensor(y) and y == 1.0:
            return x
        if not is_tensor(x) and x == 1.0:
            return y
        return x * y

    def add(self, x, y):
        if not is_tensor(x) and not is_tensor(y):
            return self.r(x + y)
        if not is_tensor(y) and y == 0 and math.copysign(1.0, y) < 0:
            return x
        if not is_tensor(x) and x == 0 and math.copysign(1.0, x) < 0:
            return y
        return x + y

    def sub(self, x, y):
        if not is_tensor(x) and not is_tensor(y):
            return self.r(x - y)
        if not is_tensor(y) and y == 0 and math.copysign(1.0, y) > 0:
            return x
        return x - y

    def div(self, x, y):
        if not is_tensor(x) and not is_tensor(y):
            return self.r(scalar_div(x, y))
        return x / y

    # Multiply-adds as eager's kernels compute them: fused (rules/fused.py),
    # as GCC contracts them in c10's complex division, log1p and expm1.

    def fma(self, x, y, z):
        """``x·y + z``."""
        return fused_multiply_add(x, y, z, self.part)

    def fms(self, x, y, z):
        """``z - x·y``."""
        return fused_multiply_add(-x, y, z, self.part)

    def fmsub(self, x, y, z):
        """``x·y - z``."""
        return fused_multiply_add(x, y, -z, self.part)


def promoted_parts(value, dtype):
    """:func:`~.common.parts`, refusing complex operands eager computes in a wider type."""
    if isinstance(value, Pair) and value.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{value.dtype} operand")
    return parts(value, dtype)


def operand_shape(value):
    if isinstance(value, Pair):
        return tuple(fake(value.data).shape[:-1])
    if is_tensor_proxy(value):
        return tuple(fake(value).shape)
    return None


def same_shape(a, b) -> bool:
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


def pack(re, im, out, *operands) -> Pair:
    """The result pair from its parts, broadcast to ``out``'s shape if needed."""
    if not is_tensor(re) and not is_tensor(im):
        raise Unsupported("no tensor operand")
    if not is_tensor(im):
        im = torch.full_like(re, im)
    if not is_tensor(re):
        re = torch.full_like(im, re)
    shapes = [s for s in map(operand_shape, operands) if s is not None]
    if any(not same_shape(s, tuple(out.shape)) for s in shapes):
        re, im = torch.broadcast_tensors(re, im)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


def zero_safe(re, im):
    """(zero mask, re, im with 0+0j replaced by 1+0j) so gradients at 0 stay finite."""
    zero = (re == 0) & (im == 0)
    return zero, torch.where(zero, 1.0, re), torch.where(zero, 0.0, im)


def require_supported_pair(z: Pair) -> None:
    if z.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{z.dtype}")


def unary_dtype(z, out, name) -> torch.dtype:
    """The complex dtype of a unary op on ``z``; refuses a real or promoted operand."""
    if not isinstance(z, Pair):
        raise Unsupported(f"{name} of a real tensor")
    dtype = op_dtype(out)
    if z.dtype != dtype:
        raise Unsupported("operand dtype differs from the result's")
    return dtype
