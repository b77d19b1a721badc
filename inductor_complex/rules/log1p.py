"""``log1p`` as eager's CPU kernel computes it.

Eager's CPU kernels (vectorized ``map(std::log1p)`` and scalar alike) call
c10's ``log1p`` (c10/util/complex_math.h, the non-Apple CPU branch, after
numpy#22611)::

    u = z + 1
    if u == 1:            return z            # (re(u) == 1 and im(u) == 0)
    log_u = log(u)                            # std::log → glibc clog
    if u - 1 == z:        return log_u        # (compares both parts; NaN ≠ NaN)
    return log_u * (z / (u - 1))              # c10's Smith division, plain product

The kernels are compiled with ``-mfma`` and GCC contracts the multiply-adds of
that division and product into fused multiply-adds; the rule does the same
(rules/fused.py), which matters near
``|1 + z| = 1`` where the real part is a small difference. Checked against
eager: with the contractions, 1010 of 1024 near-zero points are bitwise equal
and the rest differ in the last bits of glibc's ``clogf`` (without them, 184
points differ beyond 1e-5 relative).

``u - 1`` subtracts from the real part only. ``log(u)`` is glibc's ``clog``
(sysdeps/ieee754/s_clog_template.c) with its accuracy branches, which matter
here because ``|u|`` is near 1 whenever ``z`` is near 0:

* ``|x| == 1``: ``log1p(y²)/2``;
* ``1 < |x| < 2, |y| < 1``: ``log1p((|x|-1)(|x|+1) + y²)/2`` (``y²`` dropped
  below epsilon);
* ``1/2 ≤ |x| < 1``, ``|y| < ε/2``: ``log1p((|x|-1)(|x|+1))/2``;
* ``1/2 ≤ |x| < 1``, ``x² + y² ≥ 1/2``: ``log1p(x² + y² - 1)/2`` with glibc's
  ``__x2y2m1`` (float: evaluated in double, as glibc's ``__x2y2m1f``; double:
  glibc sums Dekker-split squares exactly, the rule sums them compensated,
  which can differ in the last bit);
* otherwise ``log(hypot(|x|, |y|))`` with glibc's 2^-1 / 2^MANT_DIG scaling
  for huge / doubly-subnormal parts (|x| ≥ |y| after swapping);

and phase ``atan2(y, x)``; ``clog(±0 ± 0i) = (-inf, ±0 or ±pi)``, a NaN part
gives NaN (``+inf`` real part if the other part is infinite).

The parts' ``log``/``log1p``/``hypot``/``atan2`` come from torch's kernels,
eager's from glibc's scalar libm: finite results may differ in the last bits.
Under autograd, untaken ``where`` branches are fed safe inputs so their
gradients stay finite (``common.stand_in``).
"""

from __future__ import annotations

import math

import torch

from ..values import real_dtype
from .arith import smith_divide
from .common import computed_once, magnitude, stand_in
from .pair_math import ScalarOps, pack, unary_dtype
from .registry import rule
from .transcendental import phase


def x2y2m1(ax, ay, part):
    """glibc ``__x2y2m1``: ``x² + y² - 1`` without cancellation error."""
    if part == torch.float32:
        dx, dy = ax.double(), ay.double()
        return ((dx - 1.0) * (dx + 1.0) + dy * dy).float()
    # Dekker's split (exact products without FMA), then a compensated sum.
    split = 134217729.0  # 2^27 + 1

    def square(v):
        hi = v * v
        t = v * split
        vh = t - (t - v)
        vl = v - vh
        lo = ((vh * vh - hi) + 2.0 * vh * vl) + vl * vl
        return hi, lo

    xh, xl = square(ax)
    yh, yl = square(ay)
    s = xh - 1.0  # exact: xh in [1/4, 1)
    t = s + yh
    err = (s - t) + yh
    return t + (err + (xl + yl))


def clog_parts(x, y, dtype):
    """glibc ``clog(x + iy)`` as (re, im)."""
    part = real_dtype(dtype)
    finfo = torch.finfo(part)
    mant_dig = 24 if part == torch.float32 else 53
    eps = finfo.eps
    xd, yd = x.detach(), y.detach()
    ax_raw, ay_raw = magnitude(x), magnitude(y)
    swap = ax_raw < ay_raw
    ax = computed_once(torch.where(swap, ay_raw, ax_raw))
    ay = computed_once(torch.where(swap, ax_raw, ay_raw))
    regular = torch.isfinite(xd) & torch.isfinite(yd) & ~((xd == 0) & (yd == 0))
    # Safe stand-ins (1 + 0i) where the value is special: no inf/NaN gradients.
    ax = stand_in(regular, ax, 1.0)
    ay = stand_in(regular, ay, 0.0)
    huge = ax > finfo.max / 2
    tiny = (ax < finfo.tiny) & (ay < finfo.tiny)
    unscaled = ~huge & ~tiny
    one = (ax == 1) & unscaled
    above = (ax > 1) & (ax < 2) & (ay < 1) & unscaled
    below = (ax < 1) & (ax >= 0.5) & unscaled
    below_eps = below & (ay < eps / 2)
    # glibc's x2y2m1 branch (computed with safe operands everywhere).
    xs = stand_in(below, ax, 0.75)
    ys = stand_in(below, ay, 0.0)
    below_x2y2 = below & ~below_eps & (ax * ax + ay * ay >= 0.5)
    d_above = (ax - 1.0) * (ax + 1.0)
    d_above = torch.where(ay >= eps, d_above + ay * ay, d_above)
    d_below = torch.where(below_eps, (xs - 1.0) * (xs + 1.0), x2y2m1(xs, ys, part))
    near = one | above | below_eps | below_x2y2
    # |x| == 1: (|x|-1)(|x|+1) + y² is exactly glibc's y², and keeps the x-derivative.
    d_one = (ax - 1.0) * (ax + 1.0) + ay * ay
    d2m1 = torch.where(one, d_one, torch.where(above, d_above, d_below))
    d2m1 = stand_in(near, d2m1, 0.0)
    re_near = torch.log1p(d2m1) / 2.0
    # Generic: log(hypot), huge parts halved (ay below 2·MIN flushed to 0), tiny scaled up.
    sx = torch.where(huge, ax * 0.5, torch.where(tiny, ax * 2.0**mant_dig, ax))
    sy = torch.where(huge, torch.where(ay >= finfo.tiny * 2, ay * 0.5, 0.0), torch.where(tiny, ay * 2.0**mant_dig, ay))
    hyp = torch.hypot(stand_in(~near, sx, 1.0), stand_in(~near, sy, 0.0))
    log_hyp = torch.log(hyp)
    # (A where over two Python numbers would be a float32 tensor: keep the part dtype.)
    re_far = torch.where(huge, log_hyp + math.log(2.0), torch.where(tiny, log_hyp - mant_dig * math.log(2.0), log_hyp))
    re = torch.where(near, re_near, re_far)
    # Special values: ±0 ± 0i → -inf; an infinite part → +inf; else NaN.
    zero = (xd == 0) & (yd == 0)
    any_inf = torch.isinf(xd) | torch.isinf(yd)
    re_sp = torch.where(zero, -math.inf, torch.where(any_inf, math.inf, math.nan))
    re = torch.where(regular, re, re_sp)
    im = phase(y, x)
    im = torch.where(torch.isnan(xd) | torch.isnan(yd), math.nan, im)
    return re, im


@rule("log1p")
def log1p(z, *, out):
    """c10's CPU ``log1p``: ``log(u) · z / (u - 1)`` with ``u = 1 + z``."""
    dtype = unary_dtype(z, out, "log1p")
    # ops' multiply-adds are fused, as in eager's kernel: near
    # |1 + z| = 1 that moves the real part far beyond the last bit (1.54e-11
    # instead of 9.18e-12 at z = -2.71e-4 + 0.0233i).
    ops = ScalarOps(real_dtype(dtype))
    x, y = z.re, z.im
    u_re = x + 1.0
    w_re = u_re - 1.0
    is_one = (u_re == 1) & (y == 0)
    exact = (w_re == x) & (y == y)
    l_re, l_im = clog_parts(u_re, y, dtype)
    # z / (u - 1) (never 0 / 0 off the first branch), then log_u times it.
    safe = is_one | exact
    d_re = torch.where(safe, 1.0, w_re)
    d_im = torch.where(safe, 0.0, y)
    n_re = torch.where(safe, 1.0, x)
    n_im = torch.where(safe, 0.0, y)
    q_re, q_im = smith_divide(n_re, n_im, d_re, d_im, ops, for_autograd=out.requires_grad)
    # GCC fuses each part's first product with the other product.
    p_re = ops.fmsub(l_re, q_re, l_im * q_im)
    p_im = ops.fma(l_re, q_im, l_im * q_re)
    re = torch.where(is_one, x, torch.where(exact, l_re, p_re))
    im = torch.where(is_one, y, torch.where(exact, l_im, p_im))
    return pack(re, im, out)
