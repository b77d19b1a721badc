"""Elementwise complex math as real-pair math, term for term what eager computes.

Every formula here follows the CPU kernel eager runs for that op, including
the terms that only matter for non-finite values (``x * 0`` is NaN for an
infinite ``x``, ``-0.0 + 0.0`` is ``+0.0``), because a later branch-cut op
(``log``, ``sqrt``) or an ``isnan`` turns those differences into different
numbers. Where eager's vectorized and scalar paths disagree with each other,
the docstring says which one is followed. Sources:

* add/sub/rsub: ``self + alpha * other`` with ``alpha`` a complex scalar
  (``ufunc`` add kernel), so even ``alpha == 1`` multiplies: ``(1+0j)*(1+inf j)``
  has a NaN real part, and eager's ``(1+1j) + (1+inf j)`` is ``nan+inf j``.
* div/reciprocal/mean: c10 ``complex::operator/=``, Smith's scaled division
  (numpy's algorithm), both for complex and real divisors (a real divisor is
  promoted to ``(c, 0)`` first). ``2 / z`` is ``z.reciprocal() * 2``
  (``Tensor.__rtruediv__``).
* abs: ``std::abs`` / Sleef ``hypot``; angle: ``atan2(im, re)``;
  sgn: the vectorized ``where(|z| == 0, 0, z / |z|)``.
* exp, log, sqrt: C99 Annex G (glibc ``cexp``/``clog``/``csqrt``), with the
  overflow-avoiding scalings glibc uses, special values pinned with ``where``.
* square / ``pow(z, 2)``: ``z * z`` with the naive product (eager's vectorized
  path; its scalar path goes through ``cpow`` and differs in the last bits).

Python-number operands are rounded to the part dtype first, as eager casts
wrapped numbers to the op's ``complex<float>``/``complex<double>``.

``where`` selections are written so the branch not taken never divides by
zero (its gradient would be ``0 * inf = NaN``), and so that the branch taken
at finite points is the differentiated formula itself: a ``where`` that only
re-selects an equal value (``b`` for ``e^a·sin(b)`` at ``b = 0``) would change
the derivative. In-place forms (``add_``, ``mul_``, ...) compute out of place
and ``copy_`` into the pair, which views the complex storage.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..values import Pair, real_dtype
from .common import cast, fake, is_scalar, is_tensor_proxy, require_complex_out
from .registry import RULES, Unsupported, rule

Proxy = torch.fx.Proxy
_SUPPORTED = (torch.complex64, torch.complex128)


# ----------------------------------------------------------------- helpers


def _dtype(out) -> torch.dtype:
    require_complex_out(out)
    if out.dtype not in _SUPPORTED:
        raise Unsupported(f"{out.dtype} (eager computes it in a wider opmath type)")
    return out.dtype


def _round(x: float, part: torch.dtype) -> float:
    """A Python float rounded to ``part`` (C cast semantics: overflow gives inf)."""
    if part == torch.float32:
        return ctypes.c_float(x).value
    if part == torch.float64:
        return float(x)
    raise Unsupported(f"scalar math in {part}")


def _is_tensor(x) -> bool:
    return isinstance(x, (Proxy, torch.Tensor))


def _py_div(x: float, y: float) -> float:
    if y != 0:
        return x / y
    if x != x or x == 0 or y != y:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


class _Ops:
    """IEEE arithmetic on tensors/proxies and Python floats rounded to ``part``.

    Only exact identities are simplified away (``x * 1``, ``x - (+0)``,
    ``x + (-0)``); everything else is emitted so non-finite values and signed
    zeros come out as eager's.
    """

    def __init__(self, part: torch.dtype):
        self.part = part

    def r(self, x):
        return x if _is_tensor(x) else _round(float(x), self.part)

    def mul(self, x, y):
        if not _is_tensor(x) and not _is_tensor(y):
            return self.r(x * y)
        if not _is_tensor(y) and y == 1.0:
            return x
        if not _is_tensor(x) and x == 1.0:
            return y
        return x * y

    def add(self, x, y):
        if not _is_tensor(x) and not _is_tensor(y):
            return self.r(x + y)
        if not _is_tensor(y) and y == 0 and math.copysign(1.0, y) < 0:
            return x
        if not _is_tensor(x) and x == 0 and math.copysign(1.0, x) < 0:
            return y
        return x + y

    def sub(self, x, y):
        if not _is_tensor(x) and not _is_tensor(y):
            return self.r(x - y)
        if not _is_tensor(y) and y == 0 and math.copysign(1.0, y) > 0:
            return x
        return x - y

    def div(self, x, y):
        if not _is_tensor(x) and not _is_tensor(y):
            return self.r(_py_div(x, y))
        return x / y


def _parts(value, dtype):
    """(re, im) promoted to ``dtype``'s parts; numbers rounded, real tensors with im 0."""
    part = real_dtype(dtype)
    if isinstance(value, Pair):
        if value.dtype not in _SUPPORTED:
            raise Unsupported(f"{value.dtype} operand")
        data = cast(value.data, value.part_dtype, part)
        return data[..., 0], data[..., 1]
    if is_scalar(value):
        value = complex(value)
        return _round(value.real, part), _round(value.imag, part)
    if is_tensor_proxy(value):
        return cast(value, fake(value).dtype, part), 0.0
    raise Unsupported(f"operand {value!r} is neither complex, real tensor nor number")


def _shape(value):
    if isinstance(value, Pair):
        return tuple(fake(value.data).shape[:-1])
    if is_tensor_proxy(value):
        return tuple(fake(value).shape)
    return None


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


def _pack(re, im, out, *operands) -> Pair:
    """The result pair from its parts, broadcast to ``out``'s shape if needed."""
    if not _is_tensor(re) and not _is_tensor(im):
        raise Unsupported("no tensor operand")
    if not _is_tensor(im):
        im = torch.full_like(re, im)
    if not _is_tensor(re):
        re = torch.full_like(im, re)
    shapes = [s for s in map(_shape, operands) if s is not None]
    if any(not _same_shape(s, tuple(out.shape)) for s in shapes):
        re, im = torch.broadcast_tensors(re, im)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


def _complex_operand(*values) -> Pair:
    for v in values:
        if isinstance(v, Pair):
            return v
    raise Unsupported("no complex tensor operand")


# ------------------------------------------------------- add / sub / neg


def _scaled_sum(self, other, alpha, out):
    """``self + alpha * other`` as eager's add kernel computes it."""
    dtype = _dtype(out)
    ops = _Ops(real_dtype(dtype))
    if not is_scalar(alpha) and not isinstance(alpha, bool):
        raise Unsupported(f"alpha {alpha!r} is not a number")
    s_re, s_im = _parts(self, dtype)
    o_re, o_im = _parts(other, dtype)
    alpha = complex(alpha)
    a_re, a_im = ops.r(alpha.real), ops.r(alpha.imag)
    t_re = ops.sub(ops.mul(a_re, o_re), ops.mul(a_im, o_im))
    t_im = ops.add(ops.mul(a_re, o_im), ops.mul(a_im, o_re))
    return _pack(ops.add(s_re, t_re), ops.add(s_im, t_im), out, self, other)


@rule("add")
def add(self, other, *, alpha=1, out):
    if is_scalar(self):
        # `2 + z` is `z.__radd__(2)`, i.e. `z.add(2)`: the number is `other`.
        if alpha != 1:
            raise Unsupported("a number as self with alpha")
        self, other = other, self
    return _scaled_sum(self, other, alpha, out)


@rule("sub")
def sub(self, other, *, alpha=1, out):
    # sub(a, b, alpha) is add(a, b, -alpha); `2 - z` (rsub) is the same sum.
    return _scaled_sum(self, other, -alpha, out)


@rule("rsub")
def rsub(self, other, *, alpha=1, out):
    return _scaled_sum(other, self, -alpha, out)


@rule("neg")
def neg(z, *, out):
    """Eager's vectorized complex ``neg`` is ``0 - z``: a zero part comes out +0
    (its scalar tail loop's ``-z`` gives -0; the vectorized path is followed)."""
    _dtype(out)
    return z.with_data(0.0 - z.data)


@rule("positive")
def positive(z, *, out):
    _dtype(out)
    return z


# ---------------------------------------------------------------- division


def _smith(a, b, c, d, ops: _Ops):
    """(a + bi) / (c + di), c10's ``operator/=`` (Smith's algorithm) term for term.

    ``c``/``d`` are both tensors (complex divisor), a tensor and the number 0
    (real divisor), or both numbers (a number divisor, branch chosen here).
    """
    if not _is_tensor(c) and not _is_tensor(d):
        abs_c, abs_d = abs(c), abs(d)
        if abs_c >= abs_d:
            if abs_c == 0 and abs_d == 0:
                return ops.div(a, abs_c), ops.div(b, abs_d)
            rat = ops.div(d, c)
            scl = ops.div(1.0, ops.add(c, ops.mul(d, rat)))
            return ops.mul(ops.add(a, ops.mul(b, rat)), scl), ops.mul(ops.sub(b, ops.mul(a, rat)), scl)
        rat = ops.div(c, d)
        scl = ops.div(1.0, ops.add(d, ops.mul(c, rat)))
        return ops.mul(ops.add(ops.mul(a, rat), b), scl), ops.mul(ops.sub(ops.mul(b, rat), a), scl)
    abs_c = c.abs() if _is_tensor(c) else abs(c)
    abs_d = d.abs() if _is_tensor(d) else abs(d)
    first = abs_c >= abs_d
    both_zero = (abs_c == 0) & (abs_d == 0) if _is_tensor(d) else abs_c == 0
    p = torch.where(first, c, d)
    q = torch.where(first, d, c)
    rat = q / p
    scl = 1.0 / (p + q * rat)
    a_rat, b_rat = ops.mul(a, rat), ops.mul(b, rat)
    re = torch.where(first, ops.add(a, b_rat), ops.add(a_rat, b)) * scl
    im = torch.where(first, ops.sub(b, a_rat), ops.sub(b_rat, a)) * scl
    # Division by 0: a / |c| and b / |d| (|d| is +0), complex inf or NaN. The
    # denominators are 1 elsewhere so the unused branch has no inf/NaN gradient.
    zero_re = ops.div(a, torch.where(both_zero, abs_c, 1.0))
    safe_d = torch.where(both_zero, abs_d, torch.ones_like(abs_c))
    zero_im = b / safe_d if _is_tensor(b) or _is_tensor(safe_d) else ops.div(b, safe_d)
    return torch.where(both_zero, zero_re, re), torch.where(both_zero, zero_im, im)


def _divide(self, other, out) -> Pair:
    dtype = _dtype(out)
    ops = _Ops(real_dtype(dtype))
    a, b = _parts(self, dtype)
    c, d = _parts(other, dtype)
    re, im = _smith(a, b, c, d, ops)
    return _pack(re, im, out, self, other)


def _reciprocal_pair(z: Pair, out) -> Pair:
    dtype = _dtype(out)
    ops = _Ops(real_dtype(dtype))
    c, d = _parts(z, dtype)
    re, im = _smith(1.0, 0.0, c, d, ops)
    return _pack(re, im, out, z)


def _number_over(number, z, out) -> Pair:
    """``number / z`` as ``Tensor.__rtruediv__``: ``z.reciprocal() * number``."""
    from .arith import complex_mul

    if not isinstance(z, Pair):
        raise Unsupported("a number divided by a real tensor")
    if z.dtype != out.dtype:
        raise Unsupported("a complex number over a real-dtype-promoted tensor")
    recip = _reciprocal_pair(z, out)
    number = complex(number)
    part = real_dtype(out.dtype)
    number = complex(_round(number.real, part), _round(number.imag, part))
    return Pair(complex_mul(recip, number, out.dtype), out.dtype, out.ndim)


@rule("div")
def div(self, other, *, rounding_mode=None, out):
    if rounding_mode is not None:
        raise Unsupported(f"rounding_mode={rounding_mode!r}")
    if is_scalar(self):
        return _number_over(self, other, out)
    return _divide(self, other, out)


@rule("rdiv")
def rdiv(self, other, *, out):
    if not is_scalar(other):
        raise Unsupported("rdiv by a tensor")
    return _number_over(other, self, out)


@rule("reciprocal")
def reciprocal(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("reciprocal of a real tensor")
    return _reciprocal_pair(z, out)


# ------------------------------------------------------- products and powers


def _product(a, b, out) -> Pair:
    from .arith import complex_mul

    return Pair(complex_mul(a, b, _dtype(out)), out.dtype, out.ndim)


@rule("square")
def square(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("square of a real tensor")
    return _product(z, z, out)


@rule("pow")
def pow_(z, exponent, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("a real base")
    if not is_scalar(exponent) or complex(exponent) != 2:
        raise Unsupported(f"exponent {exponent!r}: only 2 (z * z) matches eager exactly")
    return _product(z, z, out)


# ----------------------------------------------------- magnitude and phase


def _zero_safe(re, im):
    """(zero mask, re, im with 0+0j replaced by 1+0j) so gradients at 0 stay finite."""
    zero = (re == 0) & (im == 0)
    return zero, torch.where(zero, 1.0, re), torch.where(zero, 0.0, im)


@rule("abs")
def abs_(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("abs of a real tensor")
    _dtype_of_pair(z)
    re, im = z.re, z.im
    zero, s_re, s_im = _zero_safe(re, im)
    # |0| is 0 with gradient 0, as eager's abs_backward (grad * sgn(z)).
    return torch.where(zero, 0.0, torch.hypot(s_re, s_im))


def _dtype_of_pair(z: Pair) -> None:
    if z.dtype not in _SUPPORTED:
        raise Unsupported(f"{z.dtype}")


@rule("angle")
def angle(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("angle of a real tensor")
    _dtype_of_pair(z)
    re, im = z.re, z.im
    zero, s_re, s_im = _zero_safe(re, im)
    # atan2 keeps eager's signed-zero angles at 0 (0, ±pi); eager's
    # angle_backward is 0 there, so that branch carries no gradient.
    at_zero = torch.atan2(im.detach(), re.detach())
    return torch.where(zero, at_zero, torch.atan2(s_im, s_re))


@rule("sgn")
def sgn(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("sgn of a real tensor")
    _dtype(out)
    zero, s_re, s_im = _zero_safe(z.re, z.im)
    magnitude = torch.hypot(s_re, s_im)
    return _pack(torch.where(zero, 0.0, s_re / magnitude), torch.where(zero, 0.0, s_im / magnitude), out)


# ----------------------------------------------------------- transcendental


def _finfo(dtype):
    return torch.finfo(real_dtype(dtype))


@rule("exp")
def exp(z, *, out):
    """glibc ``cexp``: ``e^a (cos b, sin b)`` with ``e^a`` split as ``e^(a/2)²``
    so a finite result never overflows early, plus C99's special values."""
    if not isinstance(z, Pair):
        raise Unsupported("exp of a real tensor")
    _dtype(out)
    a, b = z.re, z.im
    half = torch.exp(a * 0.5)
    re = half * torch.cos(b) * half
    im = half * torch.sin(b) * half
    # Infinite real part with an infinite or NaN imaginary part:
    # e^(+inf + i·y) = (inf, nan), e^(-inf + i·y) = (0, ±0).
    special = torch.isinf(a) & ~torch.isfinite(b)
    positive = a > 0
    re = torch.where(special, torch.where(positive, math.inf, 0.0), re)
    im = torch.where(special, torch.where(positive, math.nan, torch.copysign(torch.zeros_like(b), b)), im)
    # A zero imaginary part is kept exactly (e^(inf+0i) = inf+0i, e^(nan+0i) = nan+0i).
    # Only where the product above is not already that ±0 (e^(a/2) inf or NaN),
    # so finite points keep the product's derivative.
    im = torch.where((b == 0) & ~torch.isfinite(half), b, im)
    return _pack(re, im, out)


@rule("log")
def log(z, *, out):
    """glibc ``clog``: ``log|z|`` computed as ``log(m) + log1p((n/m)²)/2``
    (no overflow for huge parts, accurate near |z| = 1), phase ``atan2(b, a)``."""
    if not isinstance(z, Pair):
        raise Unsupported("log of a real tensor")
    _dtype(out)
    a, b = z.re, z.im
    abs_a, abs_b = a.abs(), b.abs()
    m = torch.maximum(abs_a, abs_b)
    n = torch.minimum(abs_a, abs_b)
    regular = torch.isfinite(m) & (m > 0)
    safe_m = torch.where(regular, m, 1.0)
    ratio = torch.where(regular, n, 0.0) / safe_m
    scaled = torch.log(safe_m) + 0.5 * torch.log1p(ratio * ratio)
    # 0 → -inf, any infinite part → +inf, NaN (with finite other part) → NaN.
    special = torch.log(torch.hypot(a, b).detach())
    re = torch.where(regular, scaled, special)
    return _pack(re, torch.atan2(b, a), out)


@rule("sqrt")
def sqrt(z, *, out):
    """Principal square root, Kahan's form (glibc ``csqrt``'s):
    ``t = sqrt((|a| + |z|) / 2)``; a ≥ 0: ``(t, b / 2t)``, a < 0: ``(|b| / 2t, ±t)``.
    Huge inputs are scaled by 1/16 (exact) so ``|a| + |z|`` cannot overflow."""
    if not isinstance(z, Pair):
        raise Unsupported("sqrt of a real tensor")
    dtype = _dtype(out)
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
    return _pack(torch.where(inf_b, math.inf, re), torch.where(inf_b, b, im), out)


# ---------------------------------------------------- predicates, selection


def _equal(self, other):
    if not isinstance(self, Pair) and not isinstance(other, Pair):
        raise Unsupported("no complex operand")
    dtype = (self if isinstance(self, Pair) else other).dtype
    if isinstance(self, Pair) and isinstance(other, Pair):
        dtype = torch.promote_types(self.dtype, other.dtype)
    s_re, s_im = _parts(self, dtype)
    o_re, o_im = _parts(other, dtype)
    terms = []
    for x, y in ((s_re, o_re), (s_im, o_im)):
        if _is_tensor(x) or _is_tensor(y):
            terms.append(x == y)
        elif x != y:
            terms.append(False)
    if any(t is False for t in terms):
        like = next(t for t in (s_re, s_im, o_re, o_im) if _is_tensor(t))
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
    for s in map(_shape, (self, other)):
        if s is not None and not _same_shape(s, tuple(out.shape)):
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
    dtype = _dtype(out)
    s_re, s_im = _parts(self, dtype)
    o_re, o_im = _parts(other, dtype)
    if not (_is_tensor(s_re) or _is_tensor(o_re)):
        raise Unsupported("two number branches")
    re = torch.where(condition, s_re, o_re)
    im = torch.where(condition, s_im, o_im) if (_is_tensor(s_im) or _is_tensor(o_im)) else None
    if im is None:
        im = torch.where(condition, torch.full_like(re, s_im), o_im)
    return _pack(re, im, out, self, other, condition)


@rule("masked_fill")
def masked_fill(z, mask, value, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("masked_fill of a real tensor")
    dtype = _dtype(out)
    if is_tensor_proxy(value) and fake(value).ndim != 0:
        raise Unsupported("masked_fill with a non-0-d tensor value")
    v_re, v_im = _parts(value, dtype)
    z_re, z_im = _parts(z, dtype)
    return _pack(torch.where(mask, v_re, z_re), torch.where(mask, v_im, z_im), out, z, mask)


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
        result = compute(z, *args, out=out, **kwargs)
        z.data.copy_(result.data)
        return z

    in_place.__name__ = f"{compute.__name__}_"
    return in_place


def _mul(z, other, *, out):
    return _product(z, other, out)


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
}
for _name, _compute in _IN_PLACE.items():
    if _name not in RULES:  # arith.py may own some of these
        rule(_name)(_in_place(_compute))
