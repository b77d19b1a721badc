"""Fused multiply-add, ``x·y + z`` rounded once, as eager's compiled kernels compute it.

Eager's CPU kernels are built with ``-mfma`` and GCC contracts ``x * y + z``
in c10's complex arithmetic (Smith's division, log1p, expm1) into fused
multiply-adds, for float and double alike. Where the sum cancels, one rounding
instead of two changes many bits of the result, so the rules that mirror
those formulas fuse the same terms. torch has no fma op; the emulations:

* float32: the product of two float32 values is exact in float64; the sum is
  rounded to float64, then to float32. That differs from one rounding only
  when the float64 sum lands exactly halfway between two float32 values.
* float64: Dekker's exact product (Veltkamp's split into 26-bit halves) gives
  ``x·y = p + e`` exactly; ``p + z`` is summed exactly as ``s + t`` (Knuth's
  two-sum), and the result is ``s + (t + e)``: the exact sum rounded twice at
  worst, which almost always is the correctly rounded fma. Where the split
  would overflow (|x| or |y| above 2^995) or the product or the sum is not
  finite, the plain ``x * y + z`` is used; there the fused and plain results
  agree unless the product alone overflows.

Python numbers are fused exactly (with fractions) when finite.
"""

from __future__ import annotations

from fractions import Fraction

import torch
import torch.fx

from .common import round_to

_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's constant for float64
_SPLIT_LIMIT = 2.0**995  # above this the split's product overflows


def _is_tensor(x) -> bool:
    return isinstance(x, (torch.Tensor, torch.fx.Proxy))


def fused_multiply_add(x, y, z, part: torch.dtype):
    """``x·y + z`` rounded once to ``part`` (float32 or float64); tensors or numbers."""
    if not any(map(_is_tensor, (x, y, z))):
        if all(_finite_number(v) for v in (x, y, z)):
            return round_to(float(Fraction(x) * Fraction(y) + Fraction(z)), part)
        return round_to(x * y + z, part)
    if part == torch.float32:
        x, y, z = (v.double() if _is_tensor(v) else v for v in (x, y, z))
        return (x * y + z).float()
    return _fma_float64(x, y, z)


def _finite_number(v) -> bool:
    return v == v and abs(v) != float("inf")


def _split(a):
    t = a * _SPLIT
    high = t - (t - a)
    return high, a - high


def _two_product(x, y):
    """``(p, e)`` with ``p = fl(x·y)`` and ``x·y = p + e`` exactly, and where that holds."""
    p = x * y
    if not _is_tensor(x) and not _is_tensor(y):
        if _finite_number(p):
            return p, float(Fraction(x) * Fraction(y) - Fraction(p)), None
        return p, 0.0, None
    xh, xl = _split(x)
    yh, yl = _split(y)
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    exact = torch.isfinite(p)
    for v in (x, y):
        if _is_tensor(v):
            exact = exact & (v.abs() < _SPLIT_LIMIT)
        elif not abs(v) < _SPLIT_LIMIT:
            return p, 0.0, None  # a number too large to split: plain product
    return p, e, exact


def _fma_float64(x, y, z):
    p, e, exact = _two_product(x, y)
    s = p + z
    b = s - p
    t = (p - (s - b)) + (z - b)  # p + z - s, exactly
    error = t + e
    # s is the fma when the error is zero (adding a zero error could flip s's
    # sign of zero) and when z or the sum is infinite (the error terms are
    # then inf - inf).
    use_error = (error != 0) & torch.isfinite(s)
    if exact is not None:
        use_error = use_error & exact
    return torch.where(use_error, s + error, s)
