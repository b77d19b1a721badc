"""Complex ``pow`` as eager CPU computes it, forward and gradients.

What eager does (ATen Pow.cpp, cpu/PowKernel.cpp, c10/util/complex_math.h):

* ``pow(tensor, number)``: exponent 0 fills ones and 1 copies the base (the
  op level, before any kernel; a NaN base too). Otherwise the kernel special-
  cases 0.5 (``sqrt``), -0.5 (``rsqrt`` = ``sqrt().reciprocal()``), -1
  (``reciprocal``), 2 (``z * z``), 3 (``z * z * z``) and -2
  (``(z * z).reciprocal()``), comparing the Python number exactly; any other
  exponent is rounded to the op's complex dtype and goes to ``std::pow``.
* ``pow(tensor, tensor)`` (any mix of complex and real, broadcast, computed in
  the result dtype) has no special cases: ``std::pow`` for every element.
* ``pow(number, tensor)`` fills ones when the number is 1, else it is
  ``pow(tensor, tensor)`` with the number rounded to the result dtype.

``std::pow(complex, complex)`` is libstdc++'s ``__builtin_cpow``, glibc's
``cpow(x, y) = cexp(y * clog(x))`` (checked bit for bit on this machine for a
grid of signed zeros, infinities and NaNs). The product ``y * clog(x)`` is C's
complex multiplication: the naive ``(ac - bd, ad + bc)``, and only where both
parts come out NaN, libgcc's recovery (``__muldc3``: infinite factors are
"boxed" to ±1/±0, NaNs in the other factor become signed zeros, and the
product is recomputed times infinity). The general rule is exactly that: the
log rule's ``clog``, that product, the exp rule's ``cexp``.

Gradients (tools/autograd ``pow_backward*``) are ``grad * conj(y x^(y-1))``
for the base (0 where ``y == 0``) and ``grad * conj(x^y log x)`` for the
exponent (0 at base 0 for a real ``y >= 0``); autograd through the formulas
gives those at finite nonzero bases and finite exponents (the log rule's
``phase`` takes its derivative on a rescaled base, so it does not overflow).
At a zero, infinite or NaN base and for a non-finite exponent eager's value is 0 or NaN
(``0 * inf``), decided by the exponent (e.g. the base derivative at 0 is 0
for a finite ``y`` with ``Re y > 1``, at an infinite base for ``Re y < 1``);
the rules cut autograd there and pin it: 0, or NaN from a zero-valued "probe"
whose derivative is NaN. Not reproduced: where eager's derivative is infinite
rather than NaN (the rules give NaN), and where ``x^y`` overflows while eager's
``y x^(y-1)`` does not (the rules' derivative goes through the overflowed
value and is inf or NaN).
"""

from __future__ import annotations

import math

import torch

from ..values import Pair
from .arith import product, smith_divide
from .common import is_scalar, is_tensor_proxy, pair_data, parts
from .pair_math import SUPPORTED_DTYPES, ScalarOps, is_tensor, op_dtype, pack
from .registry import Unsupported, rule
from .transcendental import exp as _exp_rule
from .transcendental import log as _log_rule
from .transcendental import sqrt as _sqrt_rule
from .trig import rsqrt as _rsqrt_rule

# ------------------------------------------------------------ operands


def _is_number(value) -> bool:
    return is_scalar(value) or isinstance(value, bool)


def _as_pair(value, out) -> Pair:
    """A complex or real tensor operand as a pair of the result dtype (eager's
    ``base.to(common_dtype)``: a real tensor gets an imaginary part of 0)."""
    if isinstance(value, Pair) and value.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{value.dtype} operand")
    if not (isinstance(value, Pair) or is_tensor_proxy(value)):
        raise Unsupported(f"operand {value!r} is not a tensor")
    return Pair(pair_data(value, out.dtype), out.dtype, out.ndim)


def _exponent_parts(exponent, out):
    """(re, im) of the exponent in the result's part dtype: tensors, or Python
    floats rounded as eager casts the scalar to ``complex<float/double>``."""
    if isinstance(exponent, Pair) and exponent.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{exponent.dtype} exponent")
    return parts(complex(exponent) if _is_number(exponent) else exponent, out.dtype)


def _ones(like, out) -> Pair:
    """1 + 0i everywhere, still a function of ``like`` (gradient 0) so the
    result requires grad exactly when eager's does."""
    everywhere = torch.ones_like(like, dtype=torch.bool)
    re = torch.where(everywhere, 1.0, like)
    return pack(re, torch.zeros_like(re), out)


# ------------------------------------------ gradients at special points


def _with_nan_gradient(pair: Pair, mask, *values) -> Pair:
    """``pair`` unchanged, with a NaN derivative w.r.t. ``values`` where ``mask``.

    ``h = hypot(v - v.detach())`` is exactly +0 with derivative ``0/0``, and
    ``pair * (1 + h)`` is ``pair * 1``, bit for bit. ``nan_to_num`` keeps
    infinite or NaN values finite in ``h`` (its derivative, 0 or 1, keeps the
    NaN); ``where`` keeps the NaN away from points outside ``mask``.
    """
    drift = []
    for value in values:
        picked = torch.nan_to_num(torch.where(mask, value, 0.0))
        drift.append(picked - picked.detach())
    if len(drift) == 1:
        drift.append(drift[0])
    probe = torch.where(mask, torch.hypot(*drift), 0.0)
    return pair.with_data(pair.data * (1.0 + probe).unsqueeze(-1))


def _mask_and(mask, condition):
    """``mask & condition`` for a mask or a Python bool ``condition`` (None for False)."""
    if isinstance(condition, bool):
        return mask if condition else None
    return mask & condition


def _any(masks):
    """The union of the masks that are not None (None if there are none)."""
    union = None
    for mask in masks:
        if mask is not None:
            union = mask if union is None else union | mask
    return union


def _special_bases(z: Pair):
    """(zero, non-finite) masks of the base, without gradient."""
    a, b = z.re.detach(), z.im.detach()
    return (a == 0) & (b == 0), ~(torch.isfinite(a) & torch.isfinite(b))


def _pin_base_gradient(compute, z: Pair, at_zero, at_infinity, anywhere=False) -> Pair:
    """``compute(z)`` with eager's base derivative at a zero, infinite or NaN
    base: 0 where the condition for that kind of base holds (a bool or a
    mask), else NaN; ``anywhere`` marks points where it is 0 whatever the base.

    ``compute`` gets a base detached at those points, so autograd through the
    rule (which may meet ``0 * inf`` there) never reaches them.
    """
    zero, nonfinite = _special_bases(z)
    special = zero | nonfinite
    infinite = None
    if at_infinity is not False:
        infinite = nonfinite & ~torch.isnan(z.re.detach()) & ~torch.isnan(z.im.detach())
    quiet = _any((_mask_and(zero, at_zero), _mask_and(infinite, at_infinity), _mask_and(special, anywhere)))
    result = compute(z.with_data(torch.where(special.unsqueeze(-1), z.data.detach(), z.data)))
    return _with_nan_gradient(result, special if quiet is None else special & ~quiet, z.re, z.im)


def _all_finite(values):
    finite = torch.isfinite(values[0].detach())
    for value in values[1:]:
        finite = finite & torch.isfinite(value.detach())
    return finite


# ------------------------------------------------ cpow = cexp(y * clog x)


def _box(v):
    """libgcc: an infinite factor part becomes ±1, a finite (or NaN) one ±0."""
    return torch.copysign(torch.isinf(v).to(v.dtype), v)


def _nan_to_signed_zero(v):
    return torch.where(torch.isnan(v), torch.copysign(torch.zeros_like(v), v), v)


def _c_complex_mul(a, b, c, d, ops: ScalarOps):
    """``(a + ib)(c + id)`` as C computes it (GCC inline + libgcc ``__muldc3``).

    ``c``/``d`` are tensors, ``a``/``b`` tensors or Python floats. The naive
    parts carry the gradient; the recovery runs only where both are NaN, on
    detached values (it produces only infinities, zeros and NaNs).
    """
    ac, bd, ad, bc = ops.mul(a, c), ops.mul(b, d), ops.mul(a, d), ops.mul(b, c)
    x, y = ops.sub(ac, bd), ops.add(ad, bc)

    def detached(v):
        return v.detach() if is_tensor(v) else torch.full_like(c.detach(), v)

    a_, b_, c_, d_ = map(detached, (a, b, c, d))
    inf_ab = torch.isinf(a_) | torch.isinf(b_)
    inf_cd = torch.isinf(c_) | torch.isinf(d_)
    overflowed = torch.isinf(ac) | torch.isinf(bd) | torch.isinf(ad) | torch.isinf(bc)
    # First factor infinite: box it, NaNs of the second become signed zeros.
    a1 = torch.where(inf_ab, _box(a_), a_)
    b1 = torch.where(inf_ab, _box(b_), b_)
    c1 = torch.where(inf_ab, _nan_to_signed_zero(c_), c_)
    d1 = torch.where(inf_ab, _nan_to_signed_zero(d_), d_)
    # Second factor infinite: the same the other way round (on the updated values).
    c2 = torch.where(inf_cd, _box(c1), c1)
    d2 = torch.where(inf_cd, _box(d1), d1)
    a2 = torch.where(inf_cd, _nan_to_signed_zero(a1), a1)
    b2 = torch.where(inf_cd, _nan_to_signed_zero(b1), b1)
    # Neither infinite but a partial product overflowed: all NaNs become zeros.
    overflow_only = ~inf_ab & ~inf_cd & overflowed
    a3, b3, c3, d3 = (torch.where(overflow_only, _nan_to_signed_zero(v), v) for v in (a2, b2, c2, d2))
    recalc = torch.isnan(x.detach()) & torch.isnan(y.detach()) & (inf_ab | inf_cd | overflow_only)
    x_rec = math.inf * (a3 * c3 - b3 * d3)
    y_rec = math.inf * (a3 * d3 + b3 * c3)
    return torch.where(recalc, x_rec, x), torch.where(recalc, y_rec, y)


def _clog(z: Pair, out):
    """The log rule's ``clog`` with a finite derivative at finite nonzero bases.

    Its forward values are the rule's. Autograd runs on a base whose zeros,
    infinities and NaNs are replaced by 1 (there clog is pinned: the rule's
    special values ``log hypot``, ``atan2``); the log rule's phase already takes
    its derivative on the base scaled to |z| ~ 1 (``transcendental.phase``).
    """
    a, b = z.re.detach(), z.im.detach()
    zero, nonfinite = _special_bases(z)
    special = zero | nonfinite
    safe_re, safe_im = torch.where(special, 1.0, z.re), torch.where(special, 0.0, z.im)
    log_safe = _log_rule(z.with_data(torch.stack((safe_re, safe_im), -1)), out=out)
    l_re = torch.where(special, torch.log(torch.hypot(a, b)), log_safe.re)
    l_im = torch.where(special, torch.atan2(b, a), log_safe.im)
    return l_re, l_im


def _cpow(z: Pair, exponent, out) -> Pair:
    """glibc ``cpow(z, y) = cexp(y * clog z)``; gradients as eager's at finite
    nonzero bases and finite exponents, the exponent's pinned elsewhere (the
    caller pins the base's)."""
    y_re, y_im = _exponent_parts(exponent, out)
    y_parts = [v for v in (y_re, y_im) if is_tensor(v)]
    l_re, l_im = _clog(z, out)
    zero, nonfinite = _special_bases(z)
    pinned = zero | nonfinite
    if y_parts:
        pinned = pinned | ~_all_finite(y_parts)
        y_re, y_im = (torch.where(pinned, v.detach(), v) if is_tensor(v) else v for v in (y_re, y_im))
    p_re, p_im = _c_complex_mul(y_re, y_im, l_re, l_im, ScalarOps(z.part_dtype))
    result = _exp_rule(Pair(torch.stack((p_re, p_im), -1), out.dtype, out.ndim), out=out)
    if not y_parts:
        return result
    # Eager's exponent derivative grad * conj(x^y log x): at base 0 masked to 0
    # for a real y >= 0, else NaN; NaN at an infinite or NaN base (log x is);
    # for a non-finite y, 0 where x^y is 0, else NaN.
    y_re, y_im = (v.detach() if is_tensor(v) else v for v in (y_re, y_im))
    real_nonneg = (y_re >= 0) & (y_im == 0) if is_tensor(y_im) else y_re >= 0
    vanishing = ((result.re == 0) & (result.im == 0)).detach()
    noisy = torch.where(zero, ~real_nonneg, nonfinite | (pinned & ~vanishing))
    return _with_nan_gradient(result, noisy, *y_parts)


# ----------------------------------------------------------------- rules


def _tensor_to_number(base, exponent, out) -> Pair:
    """``pow(tensor, number)``: the op-level shortcuts, the kernel's special
    exponents (compared before rounding, as eager does), else ``cpow``.

    Base derivative at special bases (eager's ``e * z^(e-1)``, with ``z^(e-1)``
    itself through the kernel's special cases): 0 at base 0 for 2, 3 and a
    finite ``e`` with ``Re e > 1``; 0 at an infinite base for -0.5, -2, a
    finite ``e`` with ``Re e < 1`` and 0.5 unless the imaginary part is
    infinite (-1's ``(z*z).reciprocal()`` is NaN there); NaN otherwise.
    """
    e = complex(exponent)
    if e == 0:
        return _ones(_as_pair(base, out).re, out)
    z = _as_pair(base, out)
    if e == 1:
        return z.with_data(z.data.clone())  # a new tensor, as eager's
    if e == 2:
        return _pin_base_gradient(lambda z: product(z, z, out), z, True, False)
    if e == 3:
        return _pin_base_gradient(lambda z: product(product(z, z, out), z, out), z, True, False)
    if e == 0.5:
        # 0.5 * rsqrt(z) at an infinite base: 0, but NaN when sqrt(z) is (inf, ±inf).
        finite_im = torch.isfinite(z.im.detach())
        return _pin_base_gradient(lambda z: _sqrt_rule(z, out=out), z, False, finite_im)
    if e == -0.5:
        return _pin_base_gradient(lambda z: _rsqrt_rule(z, out=out), z, False, True)
    if e == -1:
        return _pin_base_gradient(lambda z: _reciprocal(z, out), z, False, False)
    if e == -2:
        return _pin_base_gradient(lambda z: _reciprocal(product(z, z, out), out), z, False, True)
    finite = math.isfinite(e.real) and math.isfinite(e.imag)
    return _pin_base_gradient(lambda z: _cpow(z, e, out), z, finite and e.real > 1, finite and e.real < 1)


def _reciprocal(z: Pair, out) -> Pair:
    """``z.reciprocal()``: c10's (Smith's) division of 1 + 0i by ``z``, as arith's rule."""
    re, im = smith_divide(1.0, 0.0, z.re, z.im, ScalarOps(z.part_dtype))
    return pack(re, im, out)


def _number_to_tensor(base, exponent, out) -> Pair:
    """``pow(number, tensor)``: ones for base 1, else ``cpow`` of the rounded number."""
    if not (isinstance(exponent, Pair) or is_tensor_proxy(exponent)):
        raise Unsupported("neither operand is a tensor")
    y_re, _ = _exponent_parts(exponent, out)
    if complex(base) == 1:
        return _ones(y_re, out)
    b_re, b_im = parts(complex(base), out.dtype)
    z = Pair(torch.stack((torch.full_like(y_re, b_re), torch.full_like(y_re, b_im)), -1), out.dtype, out.ndim)
    return _cpow(z, exponent, out)


def _tensor_to_tensor(base, exponent, out) -> Pair:
    """``pow(tensor, tensor)``: ``cpow``. Base derivative at special bases: 0
    where ``y == 0``; at 0 for a finite ``y`` with ``Re y > 1``; at an infinite
    base for a finite ``y`` with ``Re y < 1``."""
    z = _as_pair(base, out)
    y_re, y_im = (v.detach() if is_tensor(v) else v for v in _exponent_parts(exponent, out))
    y_parts = [v for v in (y_re, y_im) if is_tensor(v)]
    finite = _all_finite(y_parts)
    is_zero = (y_re == 0) & (y_im == 0) if is_tensor(y_im) else y_re == 0
    return _pin_base_gradient(
        lambda z: _cpow(z, exponent, out), z, finite & (y_re > 1), finite & (y_re < 1), anywhere=is_zero
    )


@rule("pow")
def pow_(base, exponent, *, out):
    op_dtype(out)
    if _is_number(exponent):
        return _tensor_to_number(base, exponent, out)
    if _is_number(base):
        return _number_to_tensor(base, exponent, out)
    return _tensor_to_tensor(base, exponent, out)


@rule("rpow")
def rpow(self, other, *, out):
    """``z.__rpow__(n)`` is ``n ** z``."""
    return pow_(other, self, out=out)
