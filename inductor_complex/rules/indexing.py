"""Indexing, gathers and writes into complex tensors.

Indexing never touches the trailing pair dim: an index tuple without an
Ellipsis already leaves trailing dims alone, and one with an Ellipsis gets a
final ``:`` so the Ellipsis stops before the pair dim. Writes go to the pair
tensor, which views the same storage as the complex value, so they land.
"""

from __future__ import annotations

import operator

import torch

from ..values import Pair
from .common import emit, fake, is_scalar, pair_data, pair_dim, written_pair
from .registry import Unsupported, keep_bits, rule


def _pair_index(index):
    index = index if isinstance(index, tuple) else (index,)
    if any(i is Ellipsis for i in index):
        return (*index, slice(None))
    return index


@rule("getitem", lazy_bits=keep_bits)
def getitem(z, index, *, out):
    # (An element of a rewritten split/unbind/chunk is taken by the rewriter itself.)
    if not isinstance(z, Pair):
        raise Unsupported("indexing something that is not a complex tensor")
    return Pair(z.data[_pair_index(index)], z.dtype, out.ndim)


@rule("setitem")
def setitem(z: Pair, index, value, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("writing into a real tensor")
    device = fake(z.data).device
    emit(operator.setitem, z.data, _pair_index(index), written_pair(z, value, device))
    return None


@rule("copy_")
def copy_(z: Pair, src, non_blocking=False, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("copying complex into a real tensor")
    z.data.copy_(pair_data(src, z.dtype), non_blocking)
    return z


@rule("copy")
def copy(z: Pair, src, non_blocking=False, *, out):
    # The functional copy_ (AOTAutograd's graphs): a new tensor like ``z``
    # holding ``src`` cast and broadcast, which is copy of the pair tensors.
    if not isinstance(z, Pair):
        raise Unsupported("copying complex into a real tensor")
    return z.with_data(torch.ops.aten.copy.default(z.data, pair_data(src, z.dtype), non_blocking))


@rule("fill_")
def fill_(z: Pair, value, *, out):
    if not (isinstance(z, Pair) and is_scalar(value)):
        raise Unsupported("fill_ with a tensor value")
    # One write of the whole pair (a broadcast copy of the two parts), as
    # eager's fill_ is one write of the whole tensor.
    z.data.copy_(written_pair(z, value, fake(z.data).device))
    return z


# With ``accumulate``, complex addition is that of each part, and the pair's
# parts are added in the same order of elements as eager adds complex ones
# (the gradient of a gather or index_select is such an index_put).


@rule("index_put_")
def index_put_(z: Pair, indices, values, accumulate=False, *, out):
    data = written_pair(z, values, fake(z.data).device)
    torch.ops.aten.index_put_.default(z.data, list(indices), data, accumulate)
    return z


@rule("index_put")
def index_put(z: Pair, indices, values, accumulate=False, *, out):
    data = written_pair(z, values, fake(z.data).device)
    return z.with_data(torch.ops.aten.index_put.default(z.data, list(indices), data, accumulate))


@rule("slice", lazy_bits=keep_bits)
def slice_(z: Pair, dim=0, start=None, end=None, step=1, *, out):
    return z.with_data(torch.ops.aten.slice.Tensor(z.data, pair_dim(dim, z.ndim), start, end, step))


@rule("select", lazy_bits=keep_bits)
def select(z: Pair, dim, index, *, out):
    return Pair(z.data.select(pair_dim(dim, z.ndim), index), z.dtype, z.ndim - 1)


@rule("narrow", lazy_bits=keep_bits)
def narrow(z: Pair, dim, start, length, *, out):
    return z.with_data(z.data.narrow(pair_dim(dim, z.ndim), start, length))


@rule("index_select", lazy_bits=keep_bits)
def index_select(z: Pair, dim, index, *, out):
    if z.ndim == 0:
        # Eager treats a scalar as one element along dim 0 (or -1) and returns a
        # scalar; its one index must name that element (a 0-d index is read as
        # one of shape [1]: Inductor cannot lower the gradient of a 0-d one).
        if dim not in (0, -1):
            raise Unsupported(f"dim {dim!r} of a 0-d tensor")
        return z.with_data(torch.index_select(z.data.unsqueeze(0), 0, index.reshape(1)).reshape(2))
    return z.with_data(torch.index_select(z.data, pair_dim(dim, z.ndim), index))


@rule("gather", lazy_bits=keep_bits)
def gather(z: Pair, dim, index, *, sparse_grad=False, out):
    if not isinstance(z, Pair):
        raise Unsupported("gather from a real tensor")
    # Each gathered complex element brings both of its parts.
    pair_index = index.unsqueeze(-1).expand(*([-1] * fake(index).ndim), 2)
    return z.with_data(torch.gather(z.data, pair_dim(dim, z.ndim), pair_index))


@rule("index", lazy_bits=keep_bits)
def index(z: Pair, indices, *, out):
    # aten.index.Tensor: a list of index tensors (None for untouched dims).
    return Pair(torch.ops.aten.index.Tensor(z.data, list(indices)), z.dtype, out.ndim)
