"""Scatters and index writes into complex tensors, done on the pair tensor.

A complex element is two neighbouring reals, so an op that moves whole
elements along a complex dim is the same op on the pair tensor along the same
dim (:func:`~.common.pair_dim`), with an element index expanded by a trailing
``2`` (as the ``gather`` rule does) so each index brings both parts:

* ``scatter_add``: eager's complex kernel is ``self[idx] += src``, i.e. both
  parts added separately in the same order: the real ``scatter_add`` of pairs.
* ``scatter`` with a complex ``src``: copies whole elements, so the real
  ``scatter`` of pairs. With a number, each part is scattered separately.
* ``index_fill``: whole elements written, the ``index_put`` of pairs.
* ``index_add``: the real ``index_add`` of pairs, of ``source`` itself or of
  ``source·alpha`` term for term, as eager's path for the rank computes it
  (see :func:`_index_add_source`).

In-place forms write into the pair tensor, which views the complex storage,
so the write lands (graph inputs included).
"""

from __future__ import annotations

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..values import Pair, real_dtype
from .common import fake, is_scalar, is_tensor_proxy, pair_dim, require_complex_out, written_pair
from .pair_math import SUPPORTED_DTYPES, ScalarOps, promoted_parts
from .registry import Unsupported, rule


def _self(z, out, *, scalar_ok: bool = False) -> Pair:
    if not isinstance(z, Pair):
        raise Unsupported("writing into a real tensor")
    require_complex_out(out)
    if z.dtype != out.dtype or z.dtype not in SUPPORTED_DTYPES:
        raise Unsupported(f"{z.dtype} self for a {out.dtype} result")
    if z.ndim == 0 and not scalar_ok:
        raise Unsupported("a 0-d complex self (its dim 0 is not the pair dim)")
    return z


def _pair_index(index):
    """An element index ``[...]`` as a pair index ``[..., 2]``."""
    if not is_tensor_proxy(index):
        raise Unsupported("index is not a tensor")
    return index.unsqueeze(-1).expand(*([-1] * fake(index).ndim), 2)


def _src_data(z: Pair, src):
    if isinstance(src, Pair):
        if src.dtype != z.dtype:
            raise Unsupported("src of another complex dtype (eager refuses it)")
        return src.data
    raise Unsupported("src is not a complex tensor of the same dtype")


def _src_within(index, src_data):
    """``src`` pair data cut to ``index``'s shape: scatter reads nothing beyond it,
    and ONNX's ScatterElements (as torch.onnx exports scatter) needs equal shapes."""
    want, have = fake(index).shape, fake(src_data).shape[:-1]
    if len(want) != len(have) or all(statically_known_true(a == b) for a, b in zip(want, have)):
        return src_data
    return src_data[tuple(slice(0, size) for size in want)]


def _value_parts(z: Pair, value):
    """(re, im) of a fill value: a number or a 0-d tensor, cast to the parts' dtype."""
    if is_scalar(value):
        value = complex(value)
        return value.real, value.imag
    if isinstance(value, Pair) and value.ndim == 0:
        data = value.data.to(z.part_dtype)
        return data[0], data[1]
    if is_tensor_proxy(value) and fake(value).ndim == 0 and not fake(value).is_complex():
        return value.to(z.part_dtype), 0.0
    raise Unsupported(f"fill value {value!r}")


# ------------------------------------------------------------- scatter_add


@rule("scatter_add")
def scatter_add(z, dim, index, src, *, out):
    z = _self(z, out)
    src = _src_within(index, _src_data(z, src))
    return z.with_data(torch.scatter_add(z.data, pair_dim(dim, z.ndim), _pair_index(index), src))


@rule("scatter_add_")
def scatter_add_(z, dim, index, src, *, out):
    z = _self(z, out)
    z.data.scatter_add_(pair_dim(dim, z.ndim), _pair_index(index), _src_within(index, _src_data(z, src)))
    return z


# ----------------------------------------------------------------- scatter


def _scatter_args(z, dim, index, src, reduce, value):
    if reduce is not None:
        raise Unsupported(f"scatter with reduce={reduce!r}")
    if value is not None:
        src = value
    d = pair_dim(dim, z.ndim)
    return d, src


@rule("scatter")
def scatter(z, dim, index, src=None, *, value=None, reduce=None, out):
    z = _self(z, out)
    d, src = _scatter_args(z, dim, index, src, reduce, value)
    if isinstance(src, Pair):
        return z.with_data(torch.scatter(z.data, d, _pair_index(index), _src_within(index, _src_data(z, src))))
    re, im = _value_parts(z, src)
    if not is_scalar(re):
        raise Unsupported("scatter of a 0-d tensor value")
    dim = d % (z.ndim + 1)
    parts = (torch.scatter(z.re, dim, index, re), torch.scatter(z.im, dim, index, im))
    return z.with_data(torch.stack(parts, -1))


@rule("scatter_")
def scatter_(z, dim, index, src=None, *, value=None, reduce=None, out):
    z = _self(z, out)
    d, src = _scatter_args(z, dim, index, src, reduce, value)
    if isinstance(src, Pair):
        z.data.scatter_(d, _pair_index(index), _src_within(index, _src_data(z, src)))
        return z
    re, im = _value_parts(z, src)
    if not is_scalar(re):
        raise Unsupported("scatter_ of a 0-d tensor value")
    dim = d % (z.ndim + 1)
    z.re.scatter_(dim, index, re)
    z.im.scatter_(dim, index, im)
    return z


# -------------------------------------------------------------- index_fill


def _index_filled(z: Pair, dim, index, value):
    """``z`` with the slices ``index`` along ``dim`` set to ``value``, as a ``where``
    over a mask of the filled positions (a real ``index_fill`` of bools).

    Not ``index_put`` of the pair tensor: with a repeated index its gradient
    counts the value once per repeat, where eager's counts each filled
    position once (``index_select`` of the unique indices, summed)."""
    _value_parts(z, value)  # a number or a 0-d tensor, as index_fill takes
    dim = pair_dim(dim, z.ndim) % (z.ndim + 1)  # also the complex dim: it comes before the pair dim
    # contiguous: torch 2.11 cannot functionalize index_fill of a strided tensor
    filled = torch.zeros_like(z.re, dtype=torch.bool, memory_format=torch.contiguous_format).index_fill(dim, index, True)
    return torch.where(filled.unsqueeze(-1), written_pair(z, value, fake(z.data).device), z.data)


@rule("index_fill")
def index_fill(z, dim, index, value, *, out):
    z = _self(z, out)
    return z.with_data(_index_filled(z, dim, index, value))


@rule("index_fill_")
def index_fill_(z, dim, index, value, *, out):
    z = _self(z, out)
    z.data.copy_(_index_filled(z, dim, index, value))
    return z


# --------------------------------------------------------------- index_add


def _index_add_source(z: Pair, source, alpha):
    """The pair data eager adds for ``index_add(..., source, alpha)``.

    Measured eager (torch 2.13 CPU): a self of rank > 1 adds slices with
    ``alpha == 1`` as plain complex addition (``(inf+0j)`` stays ``inf+0j``), so
    the pairs are added as they are; a 1-d self runs the scalar loop
    ``self += source * alpha`` with ``alpha`` a complex scalar, whose ``x·0``
    terms are emitted. Other cases are refused: complex ``alpha`` because
    eager's backward multiplies the gradient by ``alpha`` (not ``conj(alpha)``;
    ``gradcheck`` fails), real ``alpha != 1`` on rank > 1 because its term
    order was not verified.
    """
    if not isinstance(source, Pair) or source.dtype != z.dtype:
        raise Unsupported("index_add source is not a complex tensor of self's dtype")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        raise Unsupported(f"alpha {alpha!r} (eager's complex-alpha backward is not conj-correct)")
    if z.ndim > 1:
        if alpha != 1:
            raise Unsupported(f"alpha {alpha!r} with a self of rank > 1")
        return source.data
    ops = ScalarOps(real_dtype(z.dtype))
    s_re, s_im = promoted_parts(source, z.dtype)
    a_re, a_im = ops.r(float(alpha)), 0.0
    t_re = ops.sub(ops.mul(s_re, a_re), ops.mul(s_im, a_im))
    t_im = ops.add(ops.mul(s_re, a_im), ops.mul(s_im, a_re))
    return torch.stack((t_re, t_im), -1)


def _index_add_args(z, dim, index, source, alpha, out):
    """(pair data to add into, its dim, index, pair data added). Eager runs a
    0-d self as one element along dim 0 (or -1), in its 1-d loop: so does the
    rewrite, on the pair data with a leading dim of 1."""
    z = _self(z, out, scalar_ok=True)
    data = _index_add_source(z, source, alpha)
    if z.ndim > 0:
        return z.data, pair_dim(dim, z.ndim), index, data
    if dim not in (0, -1):
        raise Unsupported(f"dim {dim!r} of a 0-d tensor")
    return z.data.unsqueeze(0), 0, index.reshape(1), data.reshape(1, 2)


@rule("index_add")
def index_add(z, dim, index, source, *, alpha=1, out):
    target, d, index, data = _index_add_args(z, dim, index, source, alpha, out)
    return z.with_data(torch.index_add(target, d, index, data).reshape(fake(z.data).shape))


@rule("index_add_")
def index_add_(z, dim, index, source, *, alpha=1, out):
    target, d, index, data = _index_add_args(z, dim, index, source, alpha, out)
    target.index_add_(d, index, data)  # (a view of z's pair data for a 0-d self)
    return z



# ---------------------------------------------------------- view scatters
# The functional inverses of views (autograd's backward of slice/select/
# diagonal, functionalization's writes through views): ``src`` is written
# where the view would be, whole elements, so it is the same scatter of the
# pair tensors with the pair dim kept out of its way.


def _scatter_src(z: Pair, src) -> Pair:
    if not isinstance(src, Pair) or src.dtype != z.dtype:
        raise Unsupported("src is not a complex tensor of self's dtype")  # (eager refuses other dtypes)
    return src


@rule("slice_scatter")
def slice_scatter(z, src, dim=0, start=None, end=None, step=1, *, out):
    z = _self(z, out)
    src = _scatter_src(z, src)
    return z.with_data(torch.ops.aten.slice_scatter.default(z.data, src.data, pair_dim(dim, z.ndim), start, end, step))


@rule("select_scatter")
def select_scatter(z, src, dim, index, *, out):
    z = _self(z, out)
    src = _scatter_src(z, src)
    return z.with_data(torch.select_scatter(z.data, src.data, pair_dim(dim, z.ndim), index))


@rule("diagonal_scatter")
def diagonal_scatter(z, src, offset=0, dim1=0, dim2=1, *, out):
    z = _self(z, out)
    if z.ndim < 2:
        raise Unsupported("diagonal_scatter into a tensor of rank < 2")
    src = _scatter_src(z, src)
    # The pair's diagonal dim comes after its pair dim (see the diagonal rule).
    data = torch.diagonal_scatter(z.data, src.data.movedim(-1, -2), offset, pair_dim(dim1, z.ndim), pair_dim(dim2, z.ndim))
    return z.with_data(data)


@rule("masked_scatter")
def masked_scatter(z, mask, source, *, out):
    # Eager fills the masked elements, in order, from ``source``'s elements in
    # order; on pairs each masked element takes both parts, and the pairs of
    # ``source`` flattened are its elements' parts in that same order.
    z = _self(z, out)
    source = _scatter_src(z, source)
    pair_mask = mask.unsqueeze(-1).expand_as(z.data)
    return z.with_data(torch.masked_scatter(z.data, pair_mask, source.data))


@rule("masked_scatter_")
def masked_scatter_(z, mask, source, *, out):
    z = _self(z, out)
    source = _scatter_src(z, source)
    z.data.masked_scatter_(mask.unsqueeze(-1).expand_as(z.data), source.data)
    return z
