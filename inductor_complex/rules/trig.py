"""Circular and hyperbolic functions, and the log/exp variants, as eager computes them.

Eager's CPU kernels (vectorized and scalar alike) map complex ``sin``, ``cos``,
``tan``, ``sinh``, ``cosh`` and ``tanh`` element by element onto
``std::sin(std::complex)`` etc. (``Vectorized<c10::complex<T>>::sin`` is
``map(std::sin)``, c10/util/complex_math.h casts to ``std::complex``), i.e.
onto glibc's ``csinh``/``ccosh``/``ctanh`` family. The rules below are those
glibc routines (sysdeps/ieee754/{s_csinh,s_ccosh,s_ctanh}_template.c) term for
term:

* ``sinh(a+ib) = (sinh|a|·±cos b, cosh|a|·sin b)``; for ``|a| > t``
  (``t = ⌊(MAX_EXP-1)·ln 2⌋``: 88 / 709) ``e^|a|`` is applied as
  ``e^t/2 · [e^t] · e^(|a|-kt)`` (or ``MAX`` past ``3t``) so finite results
  never overflow early; ``cosh`` likewise.
* ``tanh(a+ib) = (sinh a cosh a, sin b cos b) / (sinh² a + cos² b)``; for
  ``|a| > t`` (``t = ⌊(MAX_EXP-1)·ln 2 / 2⌋``: 44 / 354) the real part is
  ``±1`` and the imaginary part ``4 sin b cos b / e^2t / e^(2(|a|-t))``.
* ``sin z = -i sinh(iz)``, ``cos z = cosh(iz)``, ``tan z = -i tanh(iz)``
  (C99 Annex G's definitions; glibc's ``ccos`` calls ``ccosh(iz)`` and its
  ``csin``/``ctan`` templates are the mirrored ``csinh``/``ctanh`` code).
* C99's special values (infinite or NaN parts) are pinned with ``where`` on
  detached inputs, as glibc's classification branches return them.

``log2``/``log10`` are the vectorized ``log() / ln 2`` (``ln 10``) with the
constant rounded to the part dtype; ``exp2`` is the vectorized
``exp(z · ln 2)`` (both parts scaled); ``rsqrt`` the vectorized
``sqrt().reciprocal()``. ``log1p``/``expm1`` are c10's formulas
(complex_math.h): ``log1p = (log1p(x(2+x)+y²)/2 or log hypot(1+x, y),
atan2(y, 1+x))``, ``expm1 = (expm1 x cos y - 2 sin²(y/2), e^x sin y)``.

Untaken ``where`` branches are fed safe inputs (0 where the other branch is
taken) so their gradients never turn into ``0 * inf = NaN``.
"""

from __future__ import annotations

import math

import torch

from ..values import real_dtype
from . import eager_derivative
from .arith import smith_divide
from .common import differentiated, emit, round_to
from .pair_math import ScalarOps, pack, unary_dtype
from .registry import rule
from .transcendental import exp as _exp_rule
from .transcendental import log as _log_rule
from .transcendental import sqrt as _sqrt_rule


def _consts(dtype):
    part = real_dtype(dtype)
    finfo = torch.finfo(part)
    max_exp = 128 if part == torch.float32 else 1024
    return part, finfo, max_exp


def signed_constant(value, sign):
    """``copysign(value, sign)`` as a tensor shaped like ``sign``."""
    return torch.copysign(torch.full_like(sign, value), sign)


def _abs_one_sided(a, neg):
    # |a| whose derivative is ±1 on both sides of 0 (abs'(0) = 0 would lose it).
    return torch.where(neg, -a, a)


def _exp_threshold(dtype) -> int:
    """glibc's ``t = ⌊(MAX_EXP - 1)·ln 2⌋`` (88 / 709): past it ``e^t`` is applied in steps."""
    _, _, max_exp = _consts(dtype)
    return int((max_exp - 1) * math.log(2))


def _past_threshold(rx, big, sin_b, cos_b, dtype):
    """glibc's products for ``|a| > t``: ``e^|a|/2 · (cos b, sin b)``, with
    ``e^|a|`` applied in steps of ``e^t`` and capped at the largest finite
    value past ``3t``, so a finite result never overflows early."""
    part, finfo, _ = _consts(dtype)
    t = _exp_threshold(dtype)
    exp_t = round_to(math.exp(t), part)
    half_exp_t = exp_t / 2
    rx1 = torch.where(big, rx, t + 1.0) - t
    s1, c1 = sin_b * half_exp_t, cos_b * half_exp_t
    big2 = rx1 > t
    rx2 = torch.where(big2, rx1 - t, rx1)
    s2 = torch.where(big2, s1 * exp_t, s1)
    c2 = torch.where(big2, c1 * exp_t, c1)
    big3 = rx2 > t
    ev = torch.where(big3, finfo.max, torch.exp(torch.where(big3, 0.0, rx2)))
    return ev * c2, ev * s2


def _sinh_parts(a, b, dtype):
    """glibc ``csinh(a + ib)`` as (re, im)."""
    t = _exp_threshold(dtype)
    neg = torch.signbit(a)
    rx = _abs_one_sided(a, neg)
    s, c = torch.sin(b), torch.cos(b)
    c = torch.where(neg, -c, c)
    big = rx > t
    # |a| <= t: sinh|a| · cos b, cosh|a| · sin b.
    rx_small = torch.where(big, 0.0, rx)
    re_small = torch.sinh(rx_small) * c
    im_small = torch.cosh(rx_small) * s
    # |a| > t: e^|a| applied in steps of e^t.
    large_re, large_im = _past_threshold(rx, big, s, c, dtype)
    re = torch.where(big, large_re, re_small)
    im = torch.where(big, large_im, im_small)
    # Special values (glibc's classification branches), on detached inputs.
    ad, bd, cd, sd = a.detach(), b.detach(), c.detach(), s.detach()
    a_fin, b_fin = torch.isfinite(ad), torch.isfinite(bd)
    a_inf = torch.isinf(ad)
    re_sp = torch.where(
        a_fin,
        torch.where(ad == 0, ad, math.nan),
        torch.where(a_inf, torch.where(b_fin, signed_constant(math.inf, cd), math.inf), math.nan),
    )
    im_sp = torch.where(
        a_inf & b_fin,
        torch.where(bd == 0, bd, signed_constant(math.inf, sd)),
        torch.where(torch.isnan(ad) & (bd == 0), bd, math.nan),
    )
    finite = a_fin & b_fin
    return torch.where(finite, re, re_sp), torch.where(finite, im, im_sp)


def _cosh_parts(a, b, dtype):
    """glibc ``ccosh(a + ib)`` as (re, im)."""
    t = _exp_threshold(dtype)
    neg = torch.signbit(a)
    rx = _abs_one_sided(a, neg)
    s, c = torch.sin(b), torch.cos(b)
    big = rx > t
    # |a| <= t: cosh a · cos b, sinh a · sin b.
    a_small = torch.where(big, 0.0, a)
    re_small = torch.cosh(a_small) * c
    im_small = torch.sinh(a_small) * s
    # |a| > t: e^|a| applied in steps of e^t, sin b carrying the sign of a.
    sn = torch.where(neg, -s, s)
    large_re, large_im = _past_threshold(rx, big, sn, c, dtype)
    re = torch.where(big, large_re, re_small)
    im = torch.where(big, large_im, im_small)
    ad, bd, cd, sd = a.detach(), b.detach(), c.detach(), s.detach()
    a_fin, b_fin = torch.isfinite(ad), torch.isfinite(bd)
    a_inf = torch.isinf(ad)
    sign_a = signed_constant(1.0, ad)
    re_sp = torch.where(a_inf, torch.where(b_fin, signed_constant(math.inf, cd), math.inf), math.nan)
    im_sp = torch.where(
        a_fin,
        torch.where(ad == 0, torch.zeros_like(ad), math.nan),
        torch.where(
            a_inf & b_fin,
            torch.where(bd == 0, bd * sign_a, signed_constant(math.inf, sd) * sign_a),
            torch.where(torch.isnan(ad) & (bd == 0), bd, math.nan),
        ),
    )
    finite = a_fin & b_fin
    return torch.where(finite, re, re_sp), torch.where(finite, im, im_sp)


def _tanh_parts(a, b, dtype):
    """glibc ``ctanh(a + ib)`` as (re, im)."""
    part, _, max_exp = _consts(dtype)
    t = int((max_exp - 1) * math.log(2) / 2)
    exp_2t = round_to(math.exp(2 * t), part)
    neg = torch.signbit(a)
    rx = _abs_one_sided(a, neg)
    s, c = torch.sin(b), torch.cos(b)
    big = rx > t
    # |a| <= t: (sinh a cosh a, sin b cos b) / (sinh² a + cos² b).
    a_small = torch.where(big, 0.0, a)
    sh, ch = torch.sinh(a_small), torch.cosh(a_small)
    den = sh * sh + c * c
    re_small = sh * ch / den
    im_small = s * c / den
    # |a| > t: ±1 and 4 sin b cos b / e^2t / e^(2(|a| - t)) (or / e^2t again past 2t).
    rx1 = torch.where(big, rx, t + 1.0) - t
    im_big = 4.0 * s * c / exp_2t
    big2 = rx1 > t
    im_big = torch.where(big2, im_big / exp_2t, im_big / torch.exp(2.0 * torch.where(big2, 0.0, rx1)))
    re = torch.where(big, signed_constant(1.0, a.detach()), re_small)
    im = torch.where(big, im_big, im_small)
    ad, bd, cd, sd = a.detach(), b.detach(), c.detach(), s.detach()
    a_inf = torch.isinf(ad)
    b_fin = torch.isfinite(bd)
    # Otherwise (NaN real part, or non-finite imaginary part): z itself when
    # b == 0; ±0 + i NaN when a == ±0 (C2x's ctanh(±0 + i inf)); else NaN + i NaN.
    re_sp = torch.where(a_inf, signed_constant(1.0, ad), torch.where((bd == 0) | (ad == 0), ad, math.nan))
    im_sp = torch.where(
        a_inf,
        torch.where(b_fin & (bd.abs() > 1), signed_constant(0.0, sd * cd), signed_constant(0.0, bd)),
        torch.where(bd == 0, bd, math.nan),
    )
    finite = torch.isfinite(ad) & b_fin
    return torch.where(finite, re, re_sp), torch.where(finite, im, im_sp)


def parts_rule(name: str, parts, derivative=None):
    """Register ``name`` as the unary rule ``pack(parts(z.re, z.im, dtype))``.

    With ``derivative`` (eager's, ``derivative(g, z)`` on complex tensors), a
    graph that needs gradients and whose backward the companion rewrites gets
    :func:`.eager_derivative.with_eager_derivative` instead, and elsewhere
    ``parts`` is traced for autograd only where the result requires grad."""
    if derivative is not None:
        def values_only(x, y, dtype):
            with differentiated(False):
                return parts(x, y, dtype)

        eager_derivative.register(name, values_only, derivative)

    def unary(z, *, out):
        dtype = unary_dtype(z, out, name)
        if derivative is None:
            return pack(*parts(z.re, z.im, dtype), out)
        if out.requires_grad and eager_derivative.backward_is_rewritten():
            return z.with_data(emit(eager_derivative.with_eager_derivative, z.data, name, dtype))
        with differentiated(out.requires_grad):
            return pack(*parts(z.re, z.im, dtype), out)

    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = parts.__doc__
    return rule(name)(unary)


sinh = parts_rule("sinh", _sinh_parts)
cosh = parts_rule("cosh", _cosh_parts)
tanh = parts_rule("tanh", _tanh_parts)


@rule("sin")
def sin(z, *, out):
    """glibc ``csin``: ``-i sinh(iz)``, i.e. ``sinh(-b + ia) = (p, q)`` gives ``(q, -p)``."""
    dtype = unary_dtype(z, out, "sin")
    a, b = z.re, z.im
    p, q = _sinh_parts(-b, a, dtype)
    # glibc's own csin differs from the identity in one corner: an infinite
    # imaginary part with a non-finite real part gives NaN + i·(+inf).
    corner = torch.isinf(b.detach()) & ~torch.isfinite(a.detach())
    return pack(q, torch.where(corner, math.inf, -p), out)


@rule("cos")
def cos(z, *, out):
    """glibc ``ccos``: ``ccosh(-b + ia)``."""
    dtype = unary_dtype(z, out, "cos")
    return pack(*_cosh_parts(-z.im, z.re, dtype), out)


@rule("tan")
def tan(z, *, out):
    """glibc ``ctan``: ``-i tanh(iz)``, i.e. ``tanh(-b + ia) = (p, q)`` gives ``(q, -p)``."""
    dtype = unary_dtype(z, out, "tan")
    p, q = _tanh_parts(-z.im, z.re, dtype)
    return pack(q, -p, out)


# ------------------------------------------------------- log and exp variants



@rule("log2")
def log2(z, *, out):
    """Vectorized ``log2``: ``log(z) / ln 2`` (``_mm512_set1_ps(std::log(2))``),
    both parts divided by the constant rounded to the part dtype."""
    dtype = unary_dtype(z, out, "log2")
    pair = _log_rule(z, out=out)
    return pair.with_data(pair.data / round_to(math.log(2.0), real_dtype(dtype)))


@rule("log10")
def log10(z, *, out):
    """Vectorized ``log10``: ``log(z) / ln 10`` (constant rounded to the part dtype)."""
    dtype = unary_dtype(z, out, "log10")
    pair = _log_rule(z, out=out)
    return pair.with_data(pair.data / round_to(math.log(10.0), real_dtype(dtype)))


@rule("exp2")
def exp2(z, *, out):
    """Vectorized ``exp2``: ``exp(z · c10::ln_2<T>)``, both parts scaled."""
    dtype = unary_dtype(z, out, "exp2")
    scaled = z.with_data(z.data * round_to(math.log(2.0), real_dtype(dtype)))
    return _exp_rule(scaled, out=out)


@rule("rsqrt")
def rsqrt(z, *, out):
    """Vectorized ``rsqrt``: ``sqrt().reciprocal()``."""
    dtype = unary_dtype(z, out, "rsqrt")
    root = _sqrt_rule(z, out=out)
    # arith's reciprocal (c10's Smith division of 1 + 0i), on the traced root.
    re, im = smith_divide(1.0, 0.0, root.re, root.im, ScalarOps(real_dtype(dtype)))
    return pack(re, im, out)


@rule("expm1")
def expm1(z, *, out):
    """c10's ``expm1``: ``(expm1 x · cos y - 2 sin²(y/2), e^x · sin y)``."""
    dtype = unary_dtype(z, out, "expm1")
    x, y = z.re, z.im
    h = torch.sin(y * 0.5)
    # GCC fuses the first product with the subtraction, as in log1p.
    er = ScalarOps(real_dtype(dtype)).fmsub(torch.expm1(x), torch.cos(y), 2.0 * h * h)
    ei = torch.exp(x) * torch.sin(y)
    return pack(er, ei, out)
