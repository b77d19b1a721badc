"""Layout ops: triangles, flips, rolls, stacks, diagonals and traces.

Eager moves, copies or zeroes whole complex elements in all of these, never
mixing the two parts, so each is the same op on the pair tensor with the pair
dim kept out of its way:

* ``flip``/``roll``/``fftshift`` act on the dims they name: the pair dim is
  never named (0-d inputs, where a dim could mean the pair dim, are refused).
  ``roll`` without dims is eager's ``flatten().roll(shifts, 0).view(shape)``,
  which on pairs is a roll of ``[numel, 2]`` rows.
* ``tril``/``triu``/``diag_embed`` act on the *last* dims, so the pair dim is
  moved to the front and back again. Eager's result is a fresh contiguous
  tensor, and so is the rewrite's (pairs adjacent, as a complex view needs).
  Fill values are 0, i.e. +0 in both parts.
* ``diagonal`` appends the diagonal dim, which would land after the pair dim:
  it is moved before it, a view as in eager.
* ``vstack``/``hstack``/``dstack``/``column_stack`` are eager's own
  compositions: ``atleast_Nd`` of each input, then ``cat``.
* ``trace`` on the CPU sums the diagonal in ``acc_type``, which is complex128
  for complex64, then rounds once: the rewrite sums float64 parts likewise.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .common import (
    cast,
    fake,
    is_tensor_proxy,
    pair_data,
    pair_dim,
    require_complex_out,
)
from .registry import Unsupported, keep_bits, rule
from .shapes import cat


def _complex(z, op: str, min_ndim: int = 1) -> Pair:
    if not isinstance(z, Pair):
        raise Unsupported(f"{op} of a real tensor")
    if z.ndim < min_ndim:
        raise Unsupported(f"{op} of a {z.ndim}-d complex tensor (a dim could name the pair dim)")
    return z


def _named_dims(dims, ndim: int) -> list[int]:
    """Complex dims (an int or a sequence) as dims of the pair tensor."""
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return [pair_dim(d, ndim) for d in dims]


def _with_pair_dim_first(z: Pair, op) -> torch.Tensor:
    """``op`` on the pair tensor with its pair dim moved to the front, so ops on
    the last dims see the complex tensor's last dims; contiguous like eager's."""
    return op(z.data.movedim(-1, 0)).movedim(0, -1).contiguous()


# ------------------------------------------------------------ triangles


@rule("tril")
def tril(z, diagonal=0, *, out):
    z = _complex(z, "tril", min_ndim=2)
    return z.with_data(_with_pair_dim_first(z, lambda d: torch.tril(d, diagonal)))


@rule("triu")
def triu(z, diagonal=0, *, out):
    z = _complex(z, "triu", min_ndim=2)
    return z.with_data(_with_pair_dim_first(z, lambda d: torch.triu(d, diagonal)))


# ------------------------------------------------------------ flips and rolls


@rule("flip", lazy_bits=keep_bits)
def flip(z, *dim_args, dims=None, out):
    z = _complex(z, "flip")
    if dims is None:  # flip(z, dims), Tensor.flip(*dims)
        dims = dim_args[0] if len(dim_args) == 1 else dim_args
    return z.with_data(torch.flip(z.data, _named_dims(dims, z.ndim)))


@rule("fliplr", lazy_bits=keep_bits)
def fliplr(z, *, out):
    z = _complex(z, "fliplr", min_ndim=2)
    return z.with_data(torch.flip(z.data, [1]))


@rule("flipud", lazy_bits=keep_bits)
def flipud(z, *, out):
    z = _complex(z, "flipud")
    return z.with_data(torch.flip(z.data, [0]))


@rule("roll")
def roll(z, shifts, dims=None, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("roll of a real tensor")
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        # Eager rolls the flattened tensor: whole pairs move, as rows of [numel, 2].
        rolled = torch.roll(z.data.reshape(-1, 2), shifts, 0)
        return z.with_data(rolled.view_as(z.data))
    z = _complex(z, "roll")
    return z.with_data(torch.roll(z.data, shifts, _named_dims(dims, z.ndim)))


def _fft_dims(z: Pair, dim) -> list[int]:
    if dim is None:
        return list(range(z.ndim))
    return _named_dims(dim, z.ndim)


@rule("fftshift", "fft_fftshift")
def fftshift(z, dim=None, *, out):
    z = _complex(z, "fftshift")
    return z.with_data(torch.fft.fftshift(z.data, _fft_dims(z, dim)))


@rule("ifftshift", "fft_ifftshift")
def ifftshift(z, dim=None, *, out):
    z = _complex(z, "ifftshift")
    return z.with_data(torch.fft.ifftshift(z.data, _fft_dims(z, dim)))


# ------------------------------------------------------------ atleast and stacks


def _at_least(z: Pair, ndim: int) -> Pair:
    """Eager's atleast_1d/2d/3d of one complex tensor (views, or z itself)."""
    if z.ndim >= ndim:
        return z
    if z.ndim == 0:
        return Pair(z.data.reshape(*([1] * ndim), 2), z.dtype, ndim)
    if ndim == 2:  # 1-d: a row
        return Pair(z.data.unsqueeze(0), z.dtype, 2)
    if z.ndim == 1:  # 1-d to 3-d: [1, n, 1]
        return Pair(z.data.unsqueeze(0).unsqueeze(-2), z.dtype, 3)
    return Pair(z.data.unsqueeze(-2), z.dtype, 3)  # 2-d to 3-d: [m, n, 1]


def _at_least_rule(ndim: int):
    def at_least(*tensors, out):
        if len(tensors) == 1 and isinstance(tensors[0], Pair):
            return _at_least(tensors[0], ndim)
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tensors[0]
        if not all(isinstance(t, Pair) for t in tensors):
            raise Unsupported("real tensors among the inputs (sequence results must be all complex)")
        return [_at_least(t, ndim) for t in tensors]

    at_least.__name__ = f"atleast_{ndim}d"
    return at_least


for _ndim in (1, 2, 3):
    rule(f"atleast_{_ndim}d")(_at_least_rule(_ndim))


def _as_pairs(tensors, out) -> list[Pair]:
    """Each input as a pair of the result's dtype (real ones get a zero part)."""
    require_complex_out(out)
    pairs = []
    for t in tensors:
        if isinstance(t, Pair):
            pairs.append(t)
        elif is_tensor_proxy(t):
            pairs.append(Pair(pair_data(t, out.dtype), out.dtype, fake(t).ndim))
        else:
            raise Unsupported(f"stacking {t!r}")
    return pairs


@rule("vstack", "row_stack")
def vstack(tensors, *, out):
    return cat([_at_least(p, 2) for p in _as_pairs(tensors, out)], 0, out=out)


@rule("hstack")
def hstack(tensors, *, out):
    pairs = [_at_least(p, 1) for p in _as_pairs(tensors, out)]
    return cat(pairs, 0 if pairs[0].ndim == 1 else 1, out=out)


@rule("dstack")
def dstack(tensors, *, out):
    return cat([_at_least(p, 3) for p in _as_pairs(tensors, out)], 2, out=out)


@rule("column_stack")
def column_stack(tensors, *, out):
    # Eager: 0-d and 1-d inputs become columns [numel, 1], then hstack.
    columns = [
        Pair(p.data.reshape(-1, 1, 2), p.dtype, 2) if p.ndim <= 1 else p for p in _as_pairs(tensors, out)
    ]
    return hstack(columns, out=out)


# ------------------------------------------------------------ diagonals


@rule("diagonal", lazy_bits=keep_bits)
def diagonal(z, offset=0, dim1=0, dim2=1, *, out):
    z = _complex(z, "diagonal", min_ndim=2)
    d1, d2 = pair_dim(dim1, z.ndim), pair_dim(dim2, z.ndim)
    # The diagonal dim comes last, after the pair dim: move it before.
    return Pair(z.data.diagonal(offset, d1, d2).movedim(-1, -2), z.dtype, z.ndim - 1)


@rule("diag_embed")
def diag_embed(z, offset=0, dim1=-2, dim2=-1, *, out):
    z = _complex(z, "diag_embed")
    rank = z.ndim + 1

    def front(d):  # a dim of the result, in the tensor whose pair dim is first
        if not isinstance(d, int) or not -rank <= d < rank:
            raise Unsupported(f"diag_embed dim {d!r}")
        return d % rank + 1

    embedded = _with_pair_dim_first(z, lambda d: torch.diag_embed(d, offset, front(dim1), front(dim2)))
    return Pair(embedded, z.dtype, rank)


@rule("trace")
def trace(z, *, out):
    z = _complex(z, "trace", min_ndim=2)
    if z.ndim != 2 or z.dtype not in (torch.complex64, torch.complex128):
        raise Unsupported(f"trace of a {z.ndim}-d {z.dtype} tensor")
    diagonal_parts = z.data.diagonal(0, 0, 1)  # [2, k]
    total = cast(diagonal_parts, z.part_dtype, torch.float64).sum(-1)  # eager's CPU accumulator: complex128
    return Pair(cast(total, torch.float64, z.part_dtype), z.dtype, 0)
