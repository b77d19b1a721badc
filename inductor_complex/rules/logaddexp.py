"""``logaddexp`` of complex tensors: ``log(exp(x) + exp(y))`` as eager's CPU
kernel computes it (ATen's ``_log_add_exp_helper`` for complex).

The operands are ordered by real part, ``(lo, hi) = (x, y) if x.re < y.re
else (y, x)``, and the result is ``log1p(exp(lo - hi)) + hi``, with c10's
componentwise ``-`` and ``+`` (not the add kernel's ``self + alpha * other``,
whose complex ``alpha`` multiplies infinities into NaN). Special values: a NaN
part in either operand gives NaN in both parts; equal infinite real parts give
``lo`` for -inf and ``log(exp(lo) + exp(hi))`` for +inf. exp, log and log1p are
the rules that follow glibc's and c10's kernels.
"""

from __future__ import annotations

import math

import torch

from ..values import Pair
from .common import is_tensor_proxy
from .log1p import log1p
from .pair_math import op_dtype, pack, promoted_parts
from .registry import Unsupported, rule
from .transcendental import exp, log


@rule("logaddexp")
def logaddexp(self, other, *, out):
    dtype = op_dtype(out)
    if not all(isinstance(v, Pair) or is_tensor_proxy(v) for v in (self, other)):
        raise Unsupported("logaddexp of a number")
    x_re, x_im = promoted_parts(self, dtype)
    y_re, y_im = promoted_parts(other, dtype)
    # A real operand's imaginary part is the number 0: make it a tensor.
    x_im = x_im if is_tensor_proxy(x_im) else torch.zeros_like(x_re)
    y_im = y_im if is_tensor_proxy(y_im) else torch.zeros_like(y_re)
    x_first = x_re < y_re
    lo_re, lo_im = torch.where(x_first, x_re, y_re), torch.where(x_first, x_im, y_im)
    hi_re, hi_im = torch.where(x_first, y_re, x_re), torch.where(x_first, y_im, x_im)

    grown = log1p(exp(pack(lo_re - hi_re, lo_im - hi_im, out), out=out), out=out)
    re, im = grown.re + hi_re, grown.im + hi_im

    # Both real parts +inf: log(exp(lo) + exp(hi)), fed finite zeros elsewhere so
    # the branch not taken has a finite derivative.
    infinite = ~torch.isfinite(lo_re) & (lo_re == hi_re)
    plus_inf = infinite & ~(lo_re < 0)
    exp_lo = exp(pack(torch.where(plus_inf, lo_re, 0.0), torch.where(plus_inf, lo_im, 0.0), out), out=out)
    exp_hi = exp(pack(torch.where(plus_inf, hi_re, 0.0), torch.where(plus_inf, hi_im, 0.0), out), out=out)
    summed = log(pack(exp_lo.re + exp_hi.re, exp_lo.im + exp_hi.im, out), out=out)
    re = torch.where(plus_inf, summed.re, re)
    im = torch.where(plus_inf, summed.im, im)
    minus_inf = infinite & (lo_re < 0)
    re = torch.where(minus_inf, lo_re, re)
    im = torch.where(minus_inf, lo_im, im)

    any_nan = x_re.isnan() | x_im.isnan() | y_re.isnan() | y_im.isnan()
    re = torch.where(any_nan, math.nan, re)
    im = torch.where(any_nan, math.nan, im)
    return pack(re, im, out, self, other)
