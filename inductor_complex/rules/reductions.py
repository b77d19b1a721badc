"""Reductions over complex dims: the same reduction of the pair tensor.

Eager sums complex values part by part (plain complex addition), so ``sum``
and ``cumsum`` are the real reductions of the pair tensor over the same dims,
never over the pair dim. ``mean`` is eager's ``sum(...).div_(n)``: a complex
sum divided by the real count with c10's Smith division, which multiplies by
``(1/n)`` after adding ``b * 0`` (so an infinite part makes the other NaN, as
in eager). Norms take ``|z|`` (hypot) and then the real norm, as eager's
``linalg.vector_norm`` does for complex input.
"""

from __future__ import annotations

import math

import torch
from torch.fx.experimental.symbolic_shapes import is_concrete_int

from ..values import Pair, real_dtype
from .common import fake, pair_dim, require_complex_out
from .pair_math import ScalarOps, zero_safe
from .registry import Unsupported, rule

_SUPPORTED = (torch.complex64, torch.complex128)


def _dims(z: Pair, dim) -> list[int]:
    """The pair tensor's dims to reduce; none for a 0-d tensor (whose dim 0
    or -1 is the scalar itself, not the pair dim)."""
    if z.ndim == 0:
        dims = [] if dim is None else dim if isinstance(dim, (list, tuple)) else [dim]
        if any(d not in (0, -1) for d in dims):
            raise Unsupported(f"dim {dim!r} of a 0-d tensor")
        return []
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(z.ndim))
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return [pair_dim(d, z.ndim) % (z.ndim + 1) for d in dims]


def result_part(z: Pair, out, dtype) -> torch.dtype:
    require_complex_out(out)
    if out.dtype not in _SUPPORTED or z.dtype not in _SUPPORTED:
        raise Unsupported(f"{out.dtype} result")
    if dtype is not None and dtype != out.dtype:
        raise Unsupported(f"dtype={dtype}")
    return real_dtype(out.dtype)


@rule("sum")
def sum_(z, dim=None, keepdim=False, *, dtype=None, out):
    if not isinstance(z, Pair):
        raise Unsupported("sum of a real tensor")
    part = result_part(z, out, dtype)
    data = z.data if part == z.part_dtype else z.data.to(part)
    return Pair(_summed(data, _dims(z, dim), keepdim), out.dtype, out.ndim)


def _summed(data, dims: list[int], keepdim: bool):
    # Eager's sum starts from 0, so the sum of one -0.0 is +0.0; over no dims
    # (a 0-d tensor) that is ``data + 0`` (``sum([])`` would sum every dim).
    return data + 0.0 if not dims else data.sum(dims, keepdim=keepdim)


@rule("mean")
def mean(z, dim=None, keepdim=False, *, dtype=None, out):
    if not isinstance(z, Pair):
        raise Unsupported("mean of a real tensor")
    part = result_part(z, out, dtype)
    dims = _dims(z, dim)
    full = fake(z.data).shape
    count = 1
    for d in dims:
        size = full[d]
        if not is_concrete_int(size):
            raise Unsupported("mean over a symbolic size")
        count *= int(size)
    data = z.data if part == z.part_dtype else z.data.to(part)
    total = _summed(data, dims, keepdim)
    a, b = total[..., 0], total[..., 1]
    ops = ScalarOps(part)
    # Smith's (a + bi) / (n + 0i): rat = 0/n, scl = 1/(n + 0*rat).
    if count == 0:
        raise Unsupported("mean over an empty dim")
    rat = 0.0
    scl = ops.div(1.0, ops.add(ops.r(count), ops.mul(0.0, rat)))
    re = ops.mul(ops.add(a, ops.mul(b, rat)), scl)
    im = ops.mul(ops.sub(b, ops.mul(a, rat)), scl)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


@rule("cumsum")
def cumsum(z, dim, *, dtype=None, out):
    if not isinstance(z, Pair):
        raise Unsupported("cumsum of a real tensor")
    if z.ndim == 0:
        raise Unsupported("cumsum of a 0-d complex tensor (its dim 0 is not the pair dim)")
    part = result_part(z, out, dtype)
    data = z.data if part == z.part_dtype else z.data.to(part)
    return z.with_data(data.cumsum(pair_dim(dim, z.ndim)), out.dtype)


def _abs(z: Pair):
    zero, s_re, s_im = zero_safe(z.re, z.im)
    return torch.where(zero, 0.0, torch.hypot(s_re, s_im))


@rule("vector_norm")
def vector_norm(z, ord=2, dim=None, keepdim=False, *, dtype=None, out):
    if not isinstance(z, Pair) or z.dtype not in _SUPPORTED:
        raise Unsupported("vector_norm of a real tensor")
    if dtype is not None:
        raise Unsupported(f"dtype={dtype}")
    if not isinstance(ord, (int, float)) or isinstance(ord, bool):
        raise Unsupported(f"ord={ord!r}")
    if ord == 0:
        raise Unsupported("ord=0 (a count of non-zeros)")
    return torch.linalg.vector_norm(_abs(z), ord, dim, keepdim)


@rule("norm")
def norm(z, p="fro", dim=None, keepdim=False, dtype=None, *, out):
    # Frobenius over any dims is the 2-norm of their elements.
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str) or dtype is not None:
        raise Unsupported(f"norm p={p!r}, dtype={dtype}")
    if isinstance(p, float) and math.isnan(p):
        raise Unsupported("p=nan")
    return vector_norm(z, p, dim, keepdim, out=out)
