"""Inverse circular and hyperbolic functions, as eager computes them.

Eager's CPU kernels send complex ``asin``, ``acos``, ``atan``, ``atanh``
(``Vectorized<c10::complex<T>>::asin`` etc. are ``map(std::asin)``) and
``asinh``/``acosh`` (scalar loop) element by element to ``std::asin(std::complex)``
etc. (c10/util/complex_math.h), i.e. to glibc's ``casin``, ``cacos``, ``catan``,
``casinh``, ``cacosh``, ``catanh`` (math/s_c*_template.c). One exception:
complex128 ``acos`` is vectorized as ``(pi/2, 0) - asin(z)`` (vec512/vec256
``complex_double``), so its zero imaginary parts are ``0 - (±0) = +0``.

glibc builds four of the six on one kernel, ``__kernel_casinh(z, adj)``
(math/k_casinh_template.c), for finite nonzero ``z``. It folds ``z`` into the
first quadrant (``rx = |x|``, ``ix = |y|``) and picks one of seven formulas
for ``log(w)``, ``w = z + sqrt(1 + z²)``, each avoiding the cancellation of
its region:

* ``rx`` or ``ix >= 1/ε``: ``w ≈ 2z``, so ``log(z) + ln 2``;
* ``rx >= 1/2``, ``ix < ε/8`` (near the real axis): ``log(rx + hypot(1, rx))``
  and the angle ``atan2(ix, hypot(1, rx))``;
* ``rx < ε/8``, ``ix >= 3/2`` (on the cut): ``s = sqrt(ix² - 1)``,
  ``(log(ix + s), atan2(s, rx))``;
* ``1 < ix < 3/2``, ``ix == 1`` and ``ix < 1`` with ``rx < 1/2`` (near the
  branch point ``i``): ``log1p`` of an expansion of ``|w|² - 1`` whose terms
  are all non-negative (``d = sqrt((ix² - 1)² + f)`` and ``f / (d ± (ix² - 1))``
  split the cancelling pair), and ``atan2`` of the matching parts of ``w``;
* otherwise ``clog(csqrt(1 + z²) + z)``;

then gives the parts the signs of ``x`` and ``y``. With ``adj`` it returns
``pi/2 - im`` for the imaginary part instead, as ``atan2`` of the swapped
parts (``cacos``/``cacosh`` use it so that part never cancels). Then:

* ``asinh``: the kernel; ``asin(z) = -i asinh(iz)``: ``asinh(-y + ix) = (p, q)``
  gives ``(q, -p)``;
* ``acosh``: ``kernel(-y + ix, adj)`` with signs fixed by ``y``;
  ``acos``: the same kernel, parts swapped;
* ``atanh``: ``log1p(4x / ((1 - x)² + y²)) / 4`` (or ``log(num / den) / 4``
  when that ratio is below 1/2) and ``atan2(2y, (1 - x²) - y²) / 2``, the
  denominator via glibc's ``__x2y2m1`` near the unit circle; past ``16/ε``
  the asymptotes ``1/x``, ``x / y²`` or ``x / |z|²``, and ``±pi/2``;
  ``atan(x + iy)`` is glibc's mirrored template: ``atanh(y + ix)``, parts swapped;
* C99 Annex G special values (infinite or NaN parts, signed zeros) are glibc's
  classification branches, pinned with ``where`` on detached inputs.

``clog`` is log1p.py's glibc ``clog``; ``csqrt`` is glibc's (only needed with
a positive imaginary part and no scaling here). The parts' ``log``, ``log1p``,
``atan2``, ``hypot`` and ``sqrt`` are torch's kernels, eager's are glibc's
scalar libm: finite results may differ in the last bits (at most 4 ulps
measured against eager, over thresholds, edge values and random regions).

One deliberate departure: for ``ix == 1`` glibc's formulas hold ``ix`` at the
constant 1, so their derivative in ``ix`` would be 0; the rule uses the
``1 < ix < 3/2`` formula there instead (analytic across ``ix = 1``, equal to
glibc's value within ulps) wherever ``rx²`` is a normal number, and glibc's
``sqrt(rx)`` form only closer to ``±i`` than that. glibc's other regions
drop terms whose derivatives are below ε relative, except ``atanh``'s
``|x| == 1, |y| < ε²`` one, within ε² of the branch point ``±1``.

Gradients: where the post-grad companion is installed (``install()``,
``inductor_options()``), a Dynamo graph that needs them gets one call of
:func:`.eager_derivative.with_eager_derivative` per op: the formulas below as
its forward, eager's own derivative formula (``derivatives.yaml``) as its
backward, so the gradient is eager's term for term, on branch cuts too, and
Inductor compiles a backward of a few dozen nodes rather than autograd's
expansion of these. Without the companion, autograd differentiates the
formulas: eager's derivatives at ordinary points; on a branch cut the
derivative of the side the signed zero selects (as the value is), which
eager's formula does not follow, so the two can differ there.

Each formula is evaluated everywhere but, under autograd, on safe stand-ins
(a point of its own region) where another one is taken, so untaken branches
never produce ``0 * inf = NaN`` gradients; signs are restored with ``where``
rather than ``copysign`` so derivatives pass through zeros. Traced for values
alone (no grad, or the Function's forward) those nodes are left out
(``common.differentiated``): the same values, and Inductor compiles the
formulas several times faster; in the Function's forward the most-read values
(the kernel's ``w``, clog's ``|x|`` and ``|y|``) are also computed once
(``common.computed_once``) rather than inlined into each of their readers.
"""

from __future__ import annotations

import math

import torch

from ..values import real_dtype
from .common import computed_once, is_differentiated, magnitude, round_to, stand_in
from .log1p import clog_parts, x2y2m1
from .trig import parts_rule, signed_constant

# ------------------------------------------------------------------ helpers


def _flip(v, negative):
    """``-v`` where ``negative``, else ``v`` (a copysign whose derivative is ±1 everywhere)."""
    return torch.where(negative, -v, v)


def _with_sign_of(v, sign_source):
    """``copysign(v, sign_source)`` for tensors, with a derivative at ``v == 0``."""
    if not is_differentiated():
        return torch.copysign(v, sign_source)
    return _flip(v, torch.signbit(v) != torch.signbit(sign_source))


def _const(value, like):
    """A constant tensor shaped like ``like`` (``where`` over two Python numbers would be float32)."""
    return torch.full_like(like, value)


def _regular(x, y):
    """Finite and not ``0 + 0i``: where glibc's kernels run."""
    xd, yd = x.detach(), y.detach()
    return torch.isfinite(xd) & torch.isfinite(yd) & ~((xd == 0) & (yd == 0))


# ------------------------------------------------------- the casinh kernel


def _csqrt_upper(a, b):
    """glibc ``csqrt(a + ib)`` for finite ``b > 0`` without its scaling (not reached here)."""
    d = torch.hypot(a, b)
    positive = a > 0
    # a > 0: r = sqrt((d + a)/2), s = b/2r; else s = sqrt((d - a)/2), r = |b/2s|.
    big = torch.sqrt(0.5 * (d + magnitude(a)))
    small = 0.5 * (b / big)
    return torch.where(positive, big, magnitude(small)), torch.where(positive, small, big)


def _split(rx, ix, m):
    """The split near ``±i``: ``f = rx²(2 + rx² + 2ix²)``, ``d = sqrt(m² + f)``;
    returns ``(rx², d + m, f / (d + m))`` for ``m = ±(ix² - 1)``."""
    rx2 = rx * rx
    f = rx2 * (2 + rx2 + 2 * ix * ix)
    dp = torch.sqrt(m * m + f) + m
    return rx2, dp, f / dp


def _select(candidates, index):
    """Part ``index`` of the candidate whose mask holds (the last one elsewhere)."""
    value = candidates[-1][index]
    for candidate in reversed(candidates[:-1]):
        value = torch.where(candidate[0], candidate[index], value)
    return value


def _kernel_casinh(x, y, adj, dtype):
    """glibc ``__kernel_casinh(x + iy, adj)`` as (re, im); ``x + iy`` finite and nonzero.

    Each region contributes the argument of the one function that finishes it
    (``log``, ``log1p(·)/2`` or ``clog``) and the two parts whose ``atan2`` is
    the imaginary part; those are selected with ``where`` and evaluated once.
    """
    part = real_dtype(dtype)
    finfo = torch.finfo(part)
    eps = finfo.eps
    neg_y = torch.signbit(y)
    rx, ix = magnitude(x), magnitude(y)

    huge = (rx >= 1 / eps) | (ix >= 1 / eps)
    rest = ~huge
    real_axis = rest & (rx >= 0.5) & (ix < eps / 8)
    cut = rest & (rx < eps / 8) & (ix >= 1.5)
    near = rest & (rx < 0.5)
    above_i = near & (ix > 1) & (ix < 1.5)
    at_i = near & (ix == 1)
    below_i = near & (ix < 1)
    general = rest & ~(real_axis | cut | above_i | at_i | below_i)
    tiny = rx < eps * eps
    flat = ix < eps
    # glibc's ix == 1 formulas hold ix at the constant 1, which loses the
    # derivative in ix. The 1 < ix < 3/2 split is analytic across ix = 1 and
    # equals them to a few ulps: it is used there wherever rx² is normal.
    # (Closer to i than that, glibc's sqrt(rx) form is kept.)
    at_i_split = at_i & (rx * rx >= finfo.tiny)

    def inputs(mask, safe_rx, safe_ix):
        return stand_in(mask, rx, safe_rx), stand_in(mask, ix, safe_ix)

    # log(L); angle parts (N, D).
    logs = []
    r, i = inputs(real_axis, 1.0, 0.0)
    s = torch.hypot(torch.ones_like(r), r)
    logs.append((real_axis, r + s, i, s))
    r, i = inputs(cut, 0.0, 2.0)
    s = torch.sqrt((i + 1) * (i - 1))
    logs.append((cut, i + s, s, r))

    # log1p(A) / 2; angle parts (N, D).
    log1ps = []
    mask = above_i & tiny
    r, i = inputs(mask, 0.0, 1.25)
    ix2m1 = (i + 1) * (i - 1)
    s = torch.sqrt(ix2m1)
    log1ps.append((mask, 2 * (ix2m1 + i * s), s, r))
    mask = (above_i & ~tiny) | at_i_split
    r, i = inputs(mask, 0.25, 1.25)
    rx2, dp, dm = _split(r, i, (i + 1) * (i - 1))
    r1 = torch.sqrt((dm + rx2) / 2)
    r2 = r * i / r1
    log1ps.append((mask, rx2 + dp + 2 * (r * r1 + i * r2), i + r2, r + r1))
    mask = at_i & ~at_i_split
    r, i = inputs(mask, eps / 16, 1.0)
    root = torch.sqrt(r)
    log1ps.append((mask, 2 * (r + root), torch.ones_like(r), root))
    mask = below_i & ~flat & tiny
    r, i = inputs(mask, 0.0, 0.5)
    s = torch.sqrt((1 + i) * (1 - i))
    log1ps.append((mask, 2 * r / s, i, s))
    mask = below_i & ~flat & ~tiny
    r, i = inputs(mask, 0.25, 0.5)
    rx2, dp, dm = _split(r, i, (1 + i) * (1 - i))
    r1 = torch.sqrt((dp + rx2) / 2)
    r2 = r * i / r1
    log1ps.append((mask, rx2 + dm + 2 * (r * r1 + i * r2), i + r2, r + r1))
    mask = below_i & flat
    r, i = inputs(mask, 0.25, 0.0)
    s = torch.hypot(torch.ones_like(r), r)
    log1ps.append((mask, 2 * r * (r + s), i, s))

    # clog(w): w = z past 1/ε (then + ln 2), else w = csqrt(1 + z²) + z;
    # adj: copysign(Im w, y) + i·Re w.
    # (Past 1/ε, w is |z| itself: no stand-in needed; elsewhere it is the csqrt one.)
    rg, ig = inputs(general, 1.0, 1.0)
    sr, si = _csqrt_upper((rg - ig) * (rg + ig) + 1, 2 * rg * ig)
    wr = computed_once(torch.where(huge, rx, sr + rg))
    wi = computed_once(torch.where(huge, ix, si + ig))
    if adj:
        wr, wi = _flip(wi, neg_y), wr
    lr, li = clog_parts(wr, wi, dtype)
    lr = torch.where(huge, lr + round_to(math.log(2.0), part), lr)

    num, den = _select(logs + log1ps, 2), _select(logs + log1ps, 3)
    if adj:  # the complementary angle: atan2(D, copysign(N, y))
        angle = torch.atan2(den, _flip(num, neg_y))
    else:
        angle = torch.atan2(num, den)
    by_log = torch.where(real_axis | cut, torch.log(_select(logs, 1)), torch.log1p(_select(log1ps, 1)) / 2)
    by_clog = huge | general
    re = torch.where(by_clog, lr, by_log)
    im = torch.where(by_clog, li, angle)
    # The signs of the argument (adj: the imaginary part is kept non-negative).
    re = _with_sign_of(re, x)
    im = magnitude(im) if adj else _with_sign_of(im, y)
    return re, im


# ------------------------------------------------------- special values


def _casinh_special(x, y):
    """glibc ``casinh`` for an infinite or NaN part (detached inputs)."""
    x_nan, y_inf = torch.isnan(x), torch.isinf(y)
    x_inf = torch.isinf(x)
    x_finite, y_finite = torch.isfinite(x), torch.isfinite(y)
    # Infinite imaginary part: (±inf, NaN | ±pi/2 | ±pi/4).
    angle = signed_constant(math.pi / 2, y).where(x_finite, signed_constant(math.pi / 4, y))
    re_inf_y = signed_constant(math.inf, x)
    im_inf_y = torch.where(x_nan, math.nan, angle)
    # Infinite or NaN real part: x itself, and ±0 (inf with finite y, or NaN with y == 0) or NaN.
    zero_im = (x_inf & y_finite) | (x_nan & (y == 0))
    im_x = torch.where(zero_im, signed_constant(0.0, y), math.nan)
    re = torch.where(y_inf, re_inf_y, torch.where(~x_finite, x, math.nan))
    im = torch.where(y_inf, im_inf_y, torch.where(~x_finite, im_x, math.nan))
    return re, im


def _casin_special(x, y):
    """glibc ``casin`` for an infinite or NaN part (detached inputs)."""
    p, q = _casinh_special(-y, x)
    any_nan = torch.isnan(x) | torch.isnan(y)
    any_inf = torch.isinf(x) | torch.isinf(y)
    # With a NaN part: z itself if x == 0, (NaN, ±inf) if a part is infinite, else NaN.
    re_nan = torch.where(x == 0, x, math.nan)
    im_nan = torch.where(x == 0, y, torch.where(any_inf, signed_constant(math.inf, y), math.nan))
    return torch.where(any_nan, re_nan, q), torch.where(any_nan, im_nan, -p)


def _cacosh_special(x, y, part):
    """glibc ``cacosh`` for an infinite or NaN part (detached inputs)."""
    x_nan, x_inf = torch.isnan(x), torch.isinf(x)
    y_inf, y_finite = torch.isinf(y), torch.isfinite(y)
    three_quarters = round_to(round_to(math.pi, part) - round_to(math.pi / 4, part), part)
    # Infinite imaginary part: (inf, ±3pi/4 | ±pi/4 | ±pi/2 | NaN).
    angle = torch.where(x_inf, torch.where(x < 0, _const(three_quarters, x), math.pi / 4), math.pi / 2)
    im_inf_y = torch.where(x_nan, math.nan, _with_sign_of(angle, y))
    # Infinite real part: (inf, ±pi | ±0) for finite y, NaN for NaN y.
    im_inf_x = torch.where(y_finite, _with_sign_of(torch.where(torch.signbit(x), _const(math.pi, x), 0.0), y), math.nan)
    # A NaN part (and no infinite one): (NaN, pi/2) if x == 0, else NaN.
    im_nan = torch.where(x == 0, math.pi / 2, _const(math.nan, x))
    re = torch.where(y_inf | x_inf, math.inf, _const(math.nan, x))
    im = torch.where(y_inf, im_inf_y, torch.where(x_inf, im_inf_x, im_nan))
    return re, im


def _catanh_special(x, y):
    """glibc ``catanh`` for an infinite or NaN part (detached inputs)."""
    y_inf, y_finite = torch.isinf(y), torch.isfinite(y)
    x_inf_or_zero = torch.isinf(x) | (x == 0)
    zero_re = signed_constant(0.0, x)
    half_pi = signed_constant(math.pi / 2, y)
    re = torch.where(y_inf | x_inf_or_zero, zero_re, math.nan)
    im = torch.where(y_inf | (x_inf_or_zero & y_finite), half_pi, _const(math.nan, x))
    return re, im


# --------------------------------------------------------- the functions


def _casinh_parts(x, y, dtype):
    """glibc ``casinh(x + iy)``: zero kept, special values, else the kernel."""
    regular = _regular(x, y)
    k_re, k_im = _kernel_casinh(stand_in(regular, x, 0.5), stand_in(regular, y, 0.5), False, dtype)
    s_re, s_im = _casinh_special(x.detach(), y.detach())
    finite = torch.isfinite(x.detach()) & torch.isfinite(y.detach())
    # 0 ± 0i is returned as is (its derivative is the identity, as asinh'(0) = 1).
    return torch.where(regular, k_re, torch.where(finite, x, s_re)), torch.where(
        regular, k_im, torch.where(finite, y, s_im)
    )


def _casin_parts(x, y, dtype):
    """glibc ``casin``: NaN parts first, else ``asinh(-y + ix) = (p, q)`` gives ``(q, -p)``."""
    p, q = _casinh_parts(-y, x, dtype)
    xd, yd = x.detach(), y.detach()
    any_nan = torch.isnan(xd) | torch.isnan(yd)
    s_re, s_im = _casin_special(xd, yd)
    return torch.where(any_nan, s_re, q), torch.where(any_nan, s_im, -p)


def _adj_kernel(x, y, dtype):
    """``__kernel_casinh(-y + ix, adj)`` on safe stand-ins, and where it applies."""
    regular = _regular(x, y)
    xs, ys = stand_in(regular, x, 0.5), stand_in(regular, y, 0.5)
    p, q = _kernel_casinh(-ys, xs, True, dtype)
    return regular, p, q


def _cacosh_parts(x, y, dtype):
    """glibc ``cacosh``: ``kernel(-y + ix, adj) = (p, q)`` gives ``(-p, q)`` or ``(p, -q)`` for negative ``y``."""
    part = real_dtype(dtype)
    regular, p, q = _adj_kernel(x, y, dtype)
    neg_y = torch.signbit(y.detach())
    k_re, k_im = _flip(-p, neg_y), _flip(q, neg_y)
    xd, yd = x.detach(), y.detach()
    s_re, s_im = _cacosh_special(xd, yd, part)
    finite = torch.isfinite(xd) & torch.isfinite(yd)
    # 0 ± 0i: (+0, ±pi/2).
    z_re, z_im = _const(0.0, xd), signed_constant(math.pi / 2, yd)
    re = torch.where(regular, k_re, torch.where(finite, z_re, s_re))
    im = torch.where(regular, k_im, torch.where(finite, z_im, s_im))
    return re, im


def _cacos_parts(x, y, dtype):
    """glibc ``cacos``: ``kernel(-y + ix, adj) = (p, q)`` gives ``(q, p)``; zero and
    special values as ``(pi/2 - Re casin, -Im casin)`` (a zero real part made +0)."""
    regular, p, q = _adj_kernel(x, y, dtype)
    xd, yd = x.detach(), y.detach()
    s_re, s_im = _casin_special(xd, yd)
    s_re = math.pi / 2 - s_re
    s_re = torch.where(s_re == 0, 0.0, s_re)
    finite = torch.isfinite(xd) & torch.isfinite(yd)
    # casin(0 ± 0i) is z itself: pi/2 - x, -y (with their derivatives).
    re = torch.where(regular, q, torch.where(finite, math.pi / 2 - x, s_re))
    im = torch.where(regular, p, torch.where(finite, -y, -s_im))
    return re, im


def _catanh_parts(x, y, dtype):
    """glibc ``catanh(x + iy)`` as (re, im)."""
    part = real_dtype(dtype)
    eps = torch.finfo(part).eps
    regular = _regular(x, y)
    x, y = stand_in(regular, x, 0.5), stand_in(regular, y, 0.5)
    ax, ay = magnitude(x), magnitude(y)

    # Past 16/ε: ±pi/2 and an asymptote for the real part.
    huge = (ax >= 16 / eps) | (ay >= 16 / eps)
    xh, yh = stand_in(huge, x, 2.0), stand_in(huge, y, 2.0)
    axh, ayh = magnitude(xh), magnitude(yh)
    by_x = ayh <= 1  # 1/x
    by_y = ~by_x & (axh <= 1)  # x / y²
    x1, y2 = stand_in(by_x, xh, 2.0), stand_in(by_y, yh, 2.0)
    h = torch.hypot(xh / 2, yh / 2)
    re_huge = torch.where(by_x, 1 / x1, torch.where(by_y, xh / y2 / y2, xh / h / h / 4))
    im_huge = signed_constant(math.pi / 2, y.detach())
    # Below 16/ε (stand-ins past it, where the squares below would overflow).
    x, y = stand_in(~huge, x, 0.5), stand_in(~huge, y, 0.5)
    ax, ay = magnitude(x), magnitude(y)

    # Real part: log(num/den)/4 below 1/2, else log1p(4x/den)/4; ±1 with y below ε² apart.
    unit = ~huge & (ax == 1) & (ay < eps * eps)
    ayu = stand_in(unit, ay, 1.0)
    re_unit = signed_constant(0.5, x.detach()) * (round_to(math.log(2.0), part) - torch.log(ayu))
    xr, yr = stand_in(~unit, x, 0.0), stand_in(~unit, y, 0.0)
    i2 = torch.where(magnitude(yr) >= eps * eps, yr * yr, 0.0)
    num = i2 + (1 + xr) * (1 + xr)
    den = i2 + (1 - xr) * (1 - xr)
    f = num / den
    use_log = f < 0.5
    re_log = 0.25 * torch.log(stand_in(use_log, f, 1.0))
    re_log1p = 0.25 * torch.log1p(stand_in(~use_log, 4 * xr / den, 0.0))
    re = torch.where(unit, re_unit, torch.where(use_log, re_log, re_log1p))

    # Imaginary part: atan2(2y, 1 - x² - y²)/2, the denominator cancellation-free.
    swap = ax < ay
    big, small = torch.where(swap, ay, ax), torch.where(swap, ax, ay)
    one_minus = (1 - big) * (1 + big)
    flat = small < eps / 2
    outside = big >= 1
    circle = ~flat & ~outside & ((big >= 0.75) | (small >= 0.5))
    # (glibc's "den == 0 → +0" is already so: 1 - 1 is +0.)
    den_plain = torch.where(flat, one_minus, one_minus - small * small)
    den_circle = -x2y2m1(stand_in(circle, big, 0.75), stand_in(circle, small, 0.0), part)
    den_im = torch.where(circle, den_circle, den_plain)
    im = 0.5 * torch.atan2(2 * y, den_im)

    re = torch.where(huge, re_huge, re)
    im = torch.where(huge, im_huge, im)
    return re, im, regular


def _catanh(x, y, dtype):
    """``catanh`` with zero and special values."""
    re, im, regular = _catanh_parts(x, y, dtype)
    xd, yd = x.detach(), y.detach()
    s_re, s_im = _catanh_special(xd, yd)
    finite = torch.isfinite(xd) & torch.isfinite(yd)
    # 0 ± 0i is returned as is.
    re = torch.where(regular, re, torch.where(finite, x, s_re))
    im = torch.where(regular, im, torch.where(finite, y, s_im))
    return re, im


def _cacos_or_vectorized(x, y, dtype):
    """complex64: glibc ``cacos``; complex128: eager's vectorized ``(pi/2, 0) - casin(z)``."""
    if dtype == torch.complex128:
        p, q = _casin_parts(x, y, dtype)
        # 0 - q, not -q: a zero imaginary part comes out +0 as in eager.
        return math.pi / 2 - p, 0.0 - q
    return _cacos_parts(x, y, dtype)


def _catan_parts(x, y, dtype):
    """glibc ``catan``, its template the mirror of ``catanh``'s: ``atanh(y + ix) = (p, q)`` gives ``(q, p)``."""
    p, q = _catanh(y, x, dtype)
    return q, p


# ------------------------------------------------------------------ rules

# Eager's derivative formulas (derivatives.yaml), on complex g and z: the
# backward where the companion rewrites it (parts_rule, rules/eager_derivative.py).
_EAGER_DERIVATIVES = {
    "asin": lambda g, z: g * (-z * z + 1).rsqrt().conj(),
    "acos": lambda g, z: g * -((-z * z + 1).rsqrt()).conj(),
    "atan": lambda g, z: g / (z * z + 1).conj(),
    "asinh": lambda g, z: g * (z.pow(2) + 1).rsqrt().conj(),
    "acosh": lambda g, z: g * ((z + 1).rsqrt() * (z - 1).rsqrt()).conj(),
    "atanh": lambda g, z: g * 1 / (1 - z.pow(2)).conj(),
}


asinh = parts_rule("asinh", _casinh_parts, _EAGER_DERIVATIVES["asinh"])
asin = parts_rule("asin", _casin_parts, _EAGER_DERIVATIVES["asin"])
acosh = parts_rule("acosh", _cacosh_parts, _EAGER_DERIVATIVES["acosh"])
acos = parts_rule("acos", _cacos_or_vectorized, _EAGER_DERIVATIVES["acos"])
atanh = parts_rule("atanh", _catanh, _EAGER_DERIVATIVES["atanh"])
atan = parts_rule("atan", _catan_parts, _EAGER_DERIVATIVES["atan"])
