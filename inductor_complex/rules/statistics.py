"""Variance and standard deviation of complex tensors (real results).

Eager (ATen ``std_var_out`` in ReduceOps.cpp) computes the variance of a
complex tensor as the variance of ``at::real(self)`` plus that of
``at::imag(self)``, each with the same ``dim``/``correction``/``keepdim``, and
for ``std`` takes ``sqrt`` of that sum. The rewrite calls the same real ``var``
on the same strided part views, so the numbers are eager's bit for bit
(checked in tests), whichever of var's argument spellings the node uses.

Gradients: eager's ``std_backward`` sends 0, not ``inf * 0``, where the result
is 0; the square root here does the same through a ``where``.

``var_mean``/``std_mean`` follow eager's ``std_var_mean_out`` the same way:
``var_mean`` of each part, the variances added (and, for ``std_mean``, the
square root taken), the means put together as the complex mean.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .registry import Unsupported, rule

_SUPPORTED = (torch.complex64, torch.complex128)


def _check_operand(z, kwargs) -> None:
    if not isinstance(z, Pair):
        raise Unsupported("variance of a real tensor")
    if z.dtype not in _SUPPORTED:
        raise Unsupported(f"variance of {z.dtype}")
    if "dtype" in kwargs:
        raise Unsupported("variance with a dtype")


def _variance(z, args, kwargs):
    _check_operand(z, kwargs)
    # Complex dims are the dims of each part, so the arguments pass unchanged.
    return torch.var(z.re, *args, **kwargs) + torch.var(z.im, *args, **kwargs)


def _sqrt_with_zero_gradient_at_zero(v):
    positive = v != 0
    root = torch.sqrt(torch.where(positive, v, 1.0))
    # Where v is 0 the result is v itself, detached: no gradient, as in eager.
    return torch.where(positive, root, v.detach())


@rule("var")
def var(z, *args, out, **kwargs):
    return _variance(z, args, kwargs)


@rule("std")
def std(z, *args, out, **kwargs):
    return _sqrt_with_zero_gradient_at_zero(_variance(z, args, kwargs))


def _variance_and_mean(z, args, kwargs, out):
    _check_operand(z, kwargs)
    variance_re, mean_re = torch.var_mean(z.re, *args, **kwargs)
    variance_im, mean_im = torch.var_mean(z.im, *args, **kwargs)
    mean = out[1]
    return variance_re + variance_im, Pair(torch.stack((mean_re, mean_im), -1), mean.dtype, mean.ndim)


@rule("var_mean")
def var_mean(z, *args, out, **kwargs):
    return list(_variance_and_mean(z, args, kwargs, out))


@rule("std_mean")
def std_mean(z, *args, out, **kwargs):
    variance, mean = _variance_and_mean(z, args, kwargs, out)
    return [_sqrt_with_zero_gradient_at_zero(variance), mean]
