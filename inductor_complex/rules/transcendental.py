"""Magnitude, phase and transcendental functions on eager's principal branches.

abs is ``hypot``; angle ``atan2(im, re)``; sgn the vectorized
``where(|z| == 0, 0, z / |z|)``; exp, log and sqrt follow C99 Annex G (glibc
``cexp``/``clog``/``csqrt``), with the overflow-avoiding scalings glibc uses
and special values pinned with ``where``. ``where`` selections are written so
the branch not taken never divides by zero (its gradient would be
``0 * inf = NaN``), and so the branch taken at finite points is the
differentiated formula itself.
"""

from __future__ import annotations

import math

import torch

from ..values import Pair, real_dtype
from .common import is_differentiated
from .pair_math import op_dtype, pack, require_supported_pair, zero_safe
from .registry import Unsupported, rule

# ----------------------------------------------------- magnitude and phase


@rule("abs")
def abs_(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("abs of a real tensor")
    require_supported_pair(z)
    re, im = z.re, z.im
    zero, s_re, s_im = zero_safe(re, im)
    # |0| is 0 with gradient 0, as eager's abs_backward (grad * sgn(z)).
    return torch.where(zero, 0.0, torch.hypot(s_re, s_im))


def phase(y, x):
    """``atan2(y, x)``, bit for bit, with its derivative taken at ``(x, y) / max(|x|, |y|)``.

    atan2's backward divides by ``x² + y²``, which overflows past |z| ≈ 1e154
    (1e19 in float32) and underflows for tiny |z|; eager's derivatives
    (``grad / conj(z)``) do not. atan2 is scale-invariant, so the scaled
    point has the same derivative without the overflow.
    """
    value = torch.atan2(y, x)
    if not is_differentiated():
        return value
    m = torch.maximum(x.abs(), y.abs()).detach()
    scale = torch.where(torch.isfinite(m) & (m > 0), m, 1.0)
    scaled = torch.atan2(y / scale, x / scale)
    # value - (+0): the value bit for bit, the gradient the scaled one's.
    return value.detach() - (scaled.detach() - scaled)


@rule("angle")
def angle(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("angle of a real tensor")
    require_supported_pair(z)
    re, im = z.re, z.im
    zero, s_re, s_im = zero_safe(re, im)
    # atan2 keeps eager's signed-zero angles at 0 (0, ±pi); eager's
    # angle_backward is 0 there, so that branch carries no gradient.
    at_zero = torch.atan2(im.detach(), re.detach())
    # Plain atan2 (not `phase`): eager's angle_backward divides by |z|² too,
    # and over/underflows where atan2's backward does.
    return torch.where(zero, at_zero, torch.atan2(s_im, s_re))


@rule("sgn")
def sgn(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("sgn of a real tensor")
    op_dtype(out)
    zero, s_re, s_im = zero_safe(z.re, z.im)
    magnitude = torch.hypot(s_re, s_im)
    return pack(torch.where(zero, 0.0, s_re / magnitude), torch.where(zero, 0.0, s_im / magnitude), out)


# ----------------------------------------------------------- transcendental


def _finfo(dtype):
    return torch.finfo(real_dtype(dtype))


def _cexp_scale(part: torch.dtype) -> tuple[int, float]:
    """glibc's ``t = (int) ((MAX_EXP - 1) * ln 2)`` and ``exp(t)``, in the part dtype."""
    max_exp = math.frexp(torch.finfo(part).max)[1]
    t = int((max_exp - 1) * math.log(2))
    return t, torch.tensor(float(t), dtype=part).exp().item()


@rule("exp")
def exp(z, *, out):
    """glibc ``cexp``, step by step: ``exp(a) · (cos b, sin b)``; a real part
    above ``t`` is brought down by ``t`` (up to twice) with ``exp(t)`` folded
    into cos and sin, so a finite result never overflows early; an imaginary
    part below the smallest normal number is its own sine (cosine 1). The
    rounding follows glibc's, which matters where the result underflows."""
    if not isinstance(z, Pair):
        raise Unsupported("exp of a real tensor")
    dtype = op_dtype(out)
    part = real_dtype(dtype)
    t, exp_t = _cexp_scale(part)
    a, b = z.re, z.im
    small = b.abs() <= torch.finfo(part).tiny
    sin_b = torch.where(small, b, torch.sin(b))
    cos_b = torch.where(small, 1.0, torch.cos(b))
    scaled = a
    for _ in range(2):
        big = scaled > t
        scaled = torch.where(big, scaled - t, scaled)
        sin_b = torch.where(big, sin_b * exp_t, sin_b)
        cos_b = torch.where(big, cos_b * exp_t, cos_b)
    # Still above t: the result overflows (glibc multiplies by the largest finite number).
    over = scaled > t
    exp_a = torch.exp(torch.where(over, 0.0, scaled))  # (the branch not taken: a finite derivative)
    largest = torch.finfo(part).max
    re = torch.where(over, largest * cos_b, exp_a * cos_b)
    im = torch.where(over, largest * sin_b, exp_a * sin_b)
    # Infinite real part with an infinite or NaN imaginary part:
    # e^(+inf + i·y) = (inf, nan), e^(-inf + i·y) = (0, ±0).
    special = torch.isinf(a) & ~torch.isfinite(b)
    positive = a > 0
    re = torch.where(special, torch.where(positive, math.inf, 0.0), re)
    im = torch.where(special, torch.where(positive, math.nan, torch.copysign(torch.zeros_like(b), b)), im)
    # A zero imaginary part is kept exactly (e^(±inf+0i) and e^(nan+0i) have it);
    # only at a non-finite real part, so finite points keep the product's derivative.
    im = torch.where((b == 0) & ~torch.isfinite(a), b, im)
    return pack(re, im, out)


@rule("log")
def log(z, *, out):
    """glibc ``clog``: ``log|z|`` computed as ``log(m) + log1p((n/m)²)/2``
    (no overflow for huge parts, accurate near |z| = 1), phase ``atan2(b, a)``."""
    if not isinstance(z, Pair):
        raise Unsupported("log of a real tensor")
    op_dtype(out)
    a, b = z.re, z.im
    abs_a, abs_b = a.abs(), b.abs()
    m = torch.maximum(abs_a, abs_b)
    n = torch.minimum(abs_a, abs_b)
    regular = torch.isfinite(m) & (m > 0)
    safe_m = torch.where(regular, m, 1.0)
    ratio = torch.where(regular, n, 0.0) / safe_m
    scaled = torch.log(safe_m) + 0.5 * torch.log1p(ratio * ratio)
    # 0 → -inf, any infinite part → +inf, NaN (with finite other part) → NaN.
    special = torch.log(torch.hypot(a, b))
    re = torch.where(regular, scaled, special)
    return pack(re, phase(b, a), out)


@rule("sqrt")
def sqrt(z, *, out):
    """Principal square root, Kahan's form (glibc ``csqrt``'s):
    ``t = sqrt((|a| + |z|) / 2)``; a ≥ 0: ``(t, b / 2t)``, a < 0: ``(|b| / 2t, ±t)``.
    Huge inputs are scaled by 1/16 (exact) so ``|a| + |z|`` cannot overflow."""
    if not isinstance(z, Pair):
        raise Unsupported("sqrt of a real tensor")
    dtype = op_dtype(out)
    a, b = z.re, z.im
    big = torch.maximum(a.abs(), b.abs()) > _finfo(dtype).max / 8
    sa = torch.where(big, a * 0.0625, a)
    sb = torch.where(big, b * 0.0625, b)
    unscale = torch.where(big, 4.0, 1.0)
    nonneg = sa >= 0
    # |a| and |b| spelled so their derivatives are one-sided ones, as eager's
    # holomorphic sqrt derivative is (abs'(0) = 0 would zero it on the axes).
    abs_a = torch.where(nonneg, sa, -sa)
    abs_b = sb * torch.copysign(torch.ones_like(sb), sb)
    t = torch.sqrt((abs_a + torch.hypot(sa, sb)) * 2.0) * 0.5
    zero = t == 0
    safe_t = torch.where(zero, 1.0, t)
    q = abs_b / (safe_t * 2.0)
    re = torch.where(nonneg, t, q) * unscale
    im = torch.where(nonneg, sb / (safe_t * 2.0), torch.copysign(t, sb)) * unscale
    # sqrt(±0 ± 0i) = +0 ± 0i; an infinite imaginary part gives (inf, b) for any a.
    re = torch.where(zero, 0.0, re)
    im = torch.where(zero, b, im)
    inf_b = torch.isinf(b)
    return pack(torch.where(inf_b, math.inf, re), torch.where(inf_b, b, im), out)


@rule("sigmoid")
def sigmoid(z, *, out):
    """Eager's vectorized complex sigmoid, step by step: ``reciprocal(1 + exp(0 - z))``."""
    from .arith import add, neg, reciprocal  # (arith's in-place forms import this module's)

    if not isinstance(z, Pair):
        raise Unsupported("sigmoid of a real tensor")
    return reciprocal(add(exp(neg(z, out=out), out=out), 1, out=out), out=out)
