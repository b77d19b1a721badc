"""Views and shape ops: the same op on the pair tensor, pair dim left last.

Each view of a complex tensor becomes the same view of its pair tensor, so the
result aliases what eager's result aliases and mutations still land.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .common import pair_data, pair_dim, require_complex_out, shape_args
from .registry import Unsupported, keep_bits, rule, toggle_conj


@rule("view", lazy_bits=keep_bits)
def view(z: Pair, *shape, out):
    shape = shape_args(shape)
    return Pair(z.data.view(*shape, 2), z.dtype, len(shape))


@rule("reshape", lazy_bits=keep_bits)
def reshape(z: Pair, *shape, out):
    shape = shape_args(shape)
    return Pair(z.data.reshape(*shape, 2), z.dtype, len(shape))


@rule("expand", lazy_bits=keep_bits)
def expand(z: Pair, *sizes, implicit=False, out):
    sizes = shape_args(sizes)
    return Pair(z.data.expand(*sizes, 2), z.dtype, len(sizes))


def _like(method: str):
    def like_other(z: Pair, other, *, out):
        if not isinstance(other, Pair):
            raise Unsupported(f"{method} of a real tensor's shape")
        return Pair(getattr(z.data, method)(other.data), z.dtype, other.ndim)

    like_other.__name__ = method
    return like_other


for _method in ("expand_as", "view_as", "reshape_as"):
    rule(_method, lazy_bits=keep_bits)(_like(_method))


@rule("repeat")
def repeat(z: Pair, *repeats, out):
    repeats = shape_args(repeats)
    if len(repeats) < z.ndim:
        raise Unsupported("fewer repeats than dims")
    return Pair(z.data.repeat(*repeats, 1), z.dtype, len(repeats))


@rule("permute", lazy_bits=keep_bits)
def permute(z: Pair, *dims, out):
    dims = shape_args(dims)
    order = [pair_dim(d, z.ndim) % (z.ndim + 1) for d in dims]
    return z.with_data(z.data.permute(*order, z.ndim))


@rule("transpose", lazy_bits=keep_bits)
def transpose(z: Pair, dim0, dim1, *, out):
    return z.with_data(z.data.transpose(pair_dim(dim0, z.ndim), pair_dim(dim1, z.ndim)))


@rule("t", lazy_bits=keep_bits)
def t(z: Pair, *, out):
    if z.ndim < 2:
        return z
    return z.with_data(z.data.transpose(0, 1))


@rule("T", lazy_bits=keep_bits)
def reversed_dims(z: Pair, *, out):
    return z.with_data(z.data.permute(*range(z.ndim - 1, -1, -1), z.ndim))


@rule("mT", lazy_bits=keep_bits)
def matrix_transpose(z: Pair, *, out):
    if z.ndim == 0:
        return z  # eager's (deprecated) mT of a 0-D tensor is the tensor itself; mH its conj
    if z.ndim < 2:
        raise Unsupported("mT of a tensor with fewer than 2 dims")
    return z.with_data(z.data.transpose(-3, -2))


# H, mH and adjoint are lazy conj views of the transpose in eager: the rewriter
# keeps the storage's pair transposed, with the conj bit flipped.
@rule("H", lazy_bits=toggle_conj)
def adjoint(z: Pair, *, out):
    if z.ndim > 2:
        raise Unsupported("H of a tensor with more than 2 dims")
    return reversed_dims(z, out=out)


@rule("mH", "adjoint", lazy_bits=toggle_conj)
def matrix_adjoint(z: Pair, *, out):
    return matrix_transpose(z, out=out)


@rule("movedim", lazy_bits=keep_bits)
def movedim(z: Pair, source, destination, *, out):
    def dims(d):
        return [pair_dim(x, z.ndim) for x in d] if isinstance(d, (list, tuple)) else pair_dim(d, z.ndim)

    return z.with_data(torch.movedim(z.data, dims(source), dims(destination)))


@rule("flatten", lazy_bits=keep_bits)
def flatten(z: Pair, start_dim=0, end_dim=-1, *, out):
    if z.ndim == 0:
        return Pair(z.data.reshape(1, 2), z.dtype, 1)  # a 0-d tensor flattens to [1]
    start, end = pair_dim(start_dim, z.ndim), pair_dim(end_dim, z.ndim)
    return Pair(z.data.flatten(start, end), z.dtype, out.ndim)


@rule("unflatten", lazy_bits=keep_bits)
def unflatten(z: Pair, dim, sizes, *, out):
    return Pair(z.data.unflatten(pair_dim(dim, z.ndim), sizes), z.dtype, out.ndim)


@rule("unsqueeze", lazy_bits=keep_bits)
def unsqueeze(z: Pair, dim, *, out):
    return Pair(z.data.unsqueeze(pair_dim(dim, z.ndim + 1)), z.dtype, z.ndim + 1)


@rule("squeeze", lazy_bits=keep_bits)
def squeeze(z: Pair, dim=None, *, out):
    if dim is None:
        # The pair dim has size 2, so squeezing every size-1 dim never touches it.
        return Pair(z.data.squeeze(), z.dtype, out.ndim)
    if isinstance(dim, (list, tuple)):
        dim = tuple(pair_dim(d, z.ndim) for d in dim)
    else:
        dim = pair_dim(dim, z.ndim)
    return Pair(z.data.squeeze(dim), z.dtype, out.ndim)


@rule("contiguous", lazy_bits=keep_bits)
def contiguous(z: Pair, memory_format=torch.contiguous_format, *, out):
    if memory_format != torch.contiguous_format:
        raise Unsupported(f"memory_format={memory_format}")
    return z.with_data(z.data.contiguous())


@rule("clone", lazy_bits=keep_bits)
def clone(z: Pair, *, memory_format=None, out):
    if memory_format not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"memory_format={memory_format}")
    if memory_format is None:
        return z.with_data(z.data.clone())
    return z.with_data(z.data.clone(memory_format=memory_format))


@rule("detach", lazy_bits=keep_bits)
def detach(z: Pair, *, out):
    return z.with_data(z.data.detach())


@rule("alias", lazy_bits=keep_bits)
def alias(z: Pair, *, out):
    return z.with_data(torch.ops.aten.alias.default(z.data))


@rule("cat")
def cat(tensors, dim=0, *, out):
    require_complex_out(out)
    datas = [pair_data(t, out.dtype) for t in tensors]
    return Pair(torch.cat(datas, pair_dim(dim, out.ndim)), out.dtype, out.ndim)


@rule("stack")
def stack(tensors, dim=0, *, out):
    require_complex_out(out)
    datas = [pair_data(t, out.dtype) for t in tensors]
    return Pair(torch.stack(datas, pair_dim(dim, out.ndim)), out.dtype, out.ndim)


def _pieces(z: Pair, result, out, ndim: int) -> list[Pair]:
    if not isinstance(out, (list, tuple)):
        raise Unsupported("expected a sequence result")
    return [Pair(result[i], z.dtype, ndim) for i in range(len(out))]


@rule("split", lazy_bits=keep_bits)
def split(z: Pair, split_size_or_sections, dim=0, *, out):
    return _pieces(z, torch.split(z.data, split_size_or_sections, pair_dim(dim, z.ndim)), out, z.ndim)


@rule("chunk", lazy_bits=keep_bits)
def chunk(z: Pair, chunks, dim=0, *, out):
    return _pieces(z, torch.chunk(z.data, chunks, pair_dim(dim, z.ndim)), out, z.ndim)


@rule("tensor_split", lazy_bits=keep_bits)
def tensor_split(z: Pair, indices_or_sections, dim=0, *, out):
    if not isinstance(indices_or_sections, (int, list, tuple)):
        raise Unsupported("tensor_split by a tensor")
    return _pieces(z, torch.tensor_split(z.data, indices_or_sections, pair_dim(dim, z.ndim)), out, z.ndim)


@rule("unbind", lazy_bits=keep_bits)
def unbind(z: Pair, dim=0, *, out):
    return _pieces(z, torch.unbind(z.data, pair_dim(dim, z.ndim)), out, z.ndim - 1)


@rule("pad", "constant_pad_nd")
def pad(z: Pair, pad, mode="constant", value=None, *, out):
    # aten.constant_pad_nd(x, pad, value) puts the value where F.pad has mode.
    if not isinstance(mode, str):
        mode, value = "constant", mode
    if mode in ("reflect", "replicate", "circular"):
        return _pad_by_copying(z, list(pad), mode)
    if mode != "constant":
        raise Unsupported(f"pad mode {mode!r}")
    pad = list(pad)
    if any(isinstance(p, int) and p < 0 for p in pad):
        z, pad = _cropped(z, pad)
    if value in (None, 0, 0.0):
        return Pair(torch.nn.functional.pad(z.data, [0, 0, *pad]), z.dtype, z.ndim)
    if not isinstance(value, (int, float, complex)) or isinstance(value, bool):
        raise Unsupported(f"padding with {value!r}")
    value = complex(value)
    re = torch.nn.functional.pad(z.re, list(pad), value=value.real)
    im = torch.nn.functional.pad(z.im, list(pad), value=value.imag)
    return Pair(torch.stack((re, im), -1), z.dtype, z.ndim)


def _pad_by_copying(z: Pair, pad: list, mode: str) -> Pair:
    """Reflect, replicate and circular padding copy whole elements along the
    last dims. F.pad takes them on a batch/channel-first tensor of a fixed
    rank, so the pair dim is folded into the first dim: each part is padded
    as a channel of its own. Contiguous, as eager's result is."""
    if len(pad) % 2 or z.ndim <= len(pad) // 2:
        raise Unsupported(f"{mode} padding of a {z.ndim}-d tensor by {pad}")
    folded = z.data.movedim(-1, 0).flatten(0, 1)  # [2 * first, *rest]
    padded = torch.nn.functional.pad(folded, pad, mode=mode)
    return Pair(padded.unflatten(0, (2, -1)).movedim(0, -1).contiguous(), z.dtype, z.ndim)


def _cropped(z: Pair, pad: list) -> tuple[Pair, list]:
    """Negative pads crop (``F.pad(z, (-1, 2))``): those are slices, done first;
    the rest pads. (Padding the pair tensor by negative amounts fails in the
    meta kernel with symbolic sizes.)"""
    data, rest = z.data, []
    for i in range(0, len(pad), 2):
        dim = z.ndim - 1 - i // 2  # pad pairs start from the last dim
        left, right = pad[i], pad[i + 1]
        start = -left if isinstance(left, int) and left < 0 else 0
        end = right if isinstance(right, int) and right < 0 else None
        if start or end is not None:
            data = torch.ops.aten.slice.Tensor(data, dim, start, end)
        rest += [0 if start else left, 0 if end is not None else right]
    return z.with_data(data), rest


def _aten_pad(mode: str):
    def aten_pad(z, padding, *, out):
        if not isinstance(z, Pair):
            raise Unsupported(f"{mode} padding of a real tensor")
        return _pad_by_copying(z, list(padding), mode)

    aten_pad.__name__ = f"{mode}_pad"
    return aten_pad


# The aten spellings F.pad dispatches to (torch.export's graphs hold these).
for _dims in (1, 2, 3):
    rule(f"reflection_pad{_dims}d")(_aten_pad("reflect"))
    rule(f"replication_pad{_dims}d")(_aten_pad("replicate"))
rule("_pad_circular")(_aten_pad("circular"))


@rule("size")
def size(z: Pair, dim=None, *, out):
    if dim is None:
        raise Unsupported("size() of every dim")
    return z.data.size(pair_dim(dim, z.ndim))
