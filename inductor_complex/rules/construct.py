"""Where complex values are made and taken apart: the pair tensor itself."""

from __future__ import annotations

import torch

from ..values import Pair, negate_part
from .common import fake, require_complex_out
from .registry import Unsupported, imag_part_bits, keep_bits, real_part_bits, rule, toggle_conj, toggle_neg


@rule("view_as_complex")
def view_as_complex(x, *, out):
    # The real `[..., 2]` tensor already is the pair: no op at all.
    return Pair(_with_literal_pair_dim(x), out.dtype, out.ndim)


def _with_literal_pair_dim(x):
    """``x`` with its last dim the literal 2.

    Dynamo's ``reshape(*shape[:-1], -1, 2)`` of a symbolic size gives that dim
    as an expression (``s // (s // 2)``) equal to 2 only at runtime. Carried
    through the pair math, Inductor cannot see the output's layout as the
    input's: it indexes with a division and a modulo per element and copies the
    result once more (12x slower than stock at 256x1024, dynamic=True).
    ``view_as_complex`` checked the dim is 2 when Dynamo traced it, so the view
    adds no guard. (A ``view`` or ``unflatten`` to the same sizes keeps the
    expression: their meta functions return the input's own sizes.)
    """
    shape, strides = fake(x).shape, fake(x).stride()
    if isinstance(shape[-1], int) or getattr(x.tracer, "key", None) != "example_value":
        return x  # (aten graphs, for export runtimes, keep views those runtimes all take)
    dims = range(len(shape) - 1)
    sizes = [_with_two(shape[d], shape[-1]) for d in dims]
    steps = [_with_two(strides[d], shape[-1]) for d in dims]  # a pair's stride is that same expression
    return torch.as_strided(x, [x.size(d) if sizes[d] is None else sizes[d] for d in dims] + [2],
                            [x.stride(d) if steps[d] is None else steps[d] for d in dims] + [1], x.storage_offset())


def _with_two(value, pair_size) -> int | None:
    """``value`` as an int once ``pair_size`` (which is 2) is put in; None if still symbolic."""
    if isinstance(value, int):
        return value
    expr = value.node.expr.subs(pair_size.node.expr, 2)
    return int(expr) if expr.is_number else None


@rule("view_as_real", lazy_bits=real_part_bits)  # eager refuses conj views; a neg view stays one
def view_as_real(z: Pair, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("view_as_real of a real tensor")
    return z.data


@rule("polar")
def polar(abs, angle, *, out):
    require_complex_out(out)
    return Pair(torch.stack((abs * torch.cos(angle), abs * torch.sin(angle)), -1), out.dtype, out.ndim)


@rule("complex")
def complex_(real, imag, *, out):
    require_complex_out(out)
    if fake(real).shape != fake(imag).shape:
        real, imag = torch.broadcast_tensors(real, imag)
    return Pair(torch.stack((real, imag), -1), out.dtype, out.ndim)


@rule("real", lazy_bits=real_part_bits)
def real(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("real of a real tensor")
    return z.re


@rule("imag", lazy_bits=imag_part_bits)
def imag(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("imag of a real tensor")
    return z.im


@rule("conj", lazy_bits=toggle_conj)
def conj(z, *, out):
    """Eager's conj is a lazy view: the pass holds the same storage with the bit
    flipped (the rewriter applies it where the value is read)."""
    if not isinstance(z, Pair):
        raise Unsupported("conj of a real tensor")
    return z


@rule("_neg_view", lazy_bits=toggle_neg)
def neg_view(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("_neg_view of a real tensor")
    return z


@rule("conj_physical")
def conj_physical(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("conj of a real tensor")
    return z.with_data(negate_part(z.data, 1))


@rule("resolve_conj", "resolve_neg", lazy_bits=keep_bits)
def resolve(z, *, out):
    # On a value without the bit eager returns it as it is; with the bit,
    # eager's copy is the value the rewriter reads with its bits applied.
    if not isinstance(z, Pair):
        raise Unsupported("not a complex tensor")
    return z
