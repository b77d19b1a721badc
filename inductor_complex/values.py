"""What a complex value looks like once it is held as real numbers.

A complex tensor of shape ``[..., n]`` is held as a real tensor of shape
``[..., n, 2]`` (the layout of ``torch.view_as_real``). Rules receive such
values as :class:`Pair` and return them; everything else they see is an
ordinary FX proxy or Python constant. Between rules the pass keeps each value
as a :class:`Held`: the pair node plus eager's lazy conj/neg bits.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.fx

COMPLEX_TO_REAL = {
    torch.complex32: torch.float16,
    torch.complex64: torch.float32,
    torch.complex128: torch.float64,
}
REAL_TO_COMPLEX = {real: cplx for cplx, real in COMPLEX_TO_REAL.items()}


def real_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the real and imaginary parts of ``dtype``."""
    return COMPLEX_TO_REAL.get(dtype, dtype)


def complex_dtype(dtype: torch.dtype) -> torch.dtype:
    """The complex dtype whose parts are ``dtype`` (bf16 has none: complex64)."""
    if dtype.is_complex:
        return dtype
    return REAL_TO_COMPLEX.get(dtype, torch.complex64)


@dataclasses.dataclass(frozen=True)
class Pair:
    """A complex value held as a real tensor with a trailing dim of 2.

    ``data`` is the real tensor (an FX proxy while rules are traced); ``dtype``
    is the complex dtype it stands for and ``ndim`` the complex rank, both read
    from fake metadata so rules never need to ask the graph for them.
    """

    data: Any
    dtype: torch.dtype
    ndim: int

    @property
    def re(self):
        return self.data[..., 0]

    @property
    def im(self):
        return self.data[..., 1]

    @property
    def part_dtype(self) -> torch.dtype:
        return real_dtype(self.dtype)

    def with_data(self, data, dtype: torch.dtype | None = None, ndim: int | None = None) -> Pair:
        return Pair(data, dtype or self.dtype, self.ndim if ndim is None else ndim)


Bits = tuple  # (conj, neg): eager's lazy conjugate and negative bits
NO_BITS: Bits = (False, False)


@dataclasses.dataclass(frozen=True)
class Held:
    """How the pass holds a complex value between rules.

    ``data`` is the ``[..., 2]`` pair node. Eager keeps ``z.conj()`` (and a
    graph input carrying the conj or neg bit) as a lazy view of its storage:
    such a value is held as the pair of that storage with the bits, so it
    stays a view (later writes to the storage show through it, writes through
    it reach the storage) and each reader applies the bits where it reads.
    """

    data: torch.fx.Node
    conj: bool = False
    neg: bool = False

    @property
    def bits(self) -> Bits:
        return (self.conj, self.neg)


def bits_of(value: Any) -> Bits:
    """Eager's lazy bits of a fake tensor (a real tensor can carry only neg)."""
    if not isinstance(value, torch.Tensor):
        return NO_BITS
    return (value.is_complex() and value.is_conj(), value.is_neg())


# ---------------------------------------------------------------- fake metadata


def resolved_pair(data: torch.fx.Proxy, conj: bool, neg: bool):
    """The pair a lazily conjugated/negated pair stands for, as eager resolves
    it: ``conj`` negates the imaginary part, ``neg`` both (``-x``, signed zeros too)."""
    if conj and neg:
        return negate_part(data, 0)
    if conj:
        return negate_part(data, 1)
    return -data


def negate_part(data: torch.fx.Proxy, part: int) -> torch.fx.Proxy:
    """Pair data with one part (0: real, 1: imaginary) negated, as a pointwise
    select on the pair index, so that it fuses into whatever reads it: a
    ``stack`` of the parts is a concat, which Inductor writes to a buffer of
    its own (always on CPU) that the reader then loads back.

    The index is int32 so that the bool mask is not 4x smaller than it:
    AOTAutograd's partitioner saves, rather than recomputes, an op whose output
    is 4x smaller than its inputs (an int64 index was 8x), and a saved [2] mask
    is a kernel (a launch, on a GPU) and a buffer of its own in a training
    step's forward. (Not int8 or int16: ONNX has no int8 Range, TensorRT no int16.)

    For other runtimes (exported programs) the parts are concatenated: ExecuTorch's
    XNNPACK partitioner finds dependency cycles around such a ``where``."""
    if _portable(data):
        parts = [data[..., 0:1], data[..., 1:2]]
        parts[part] = -parts[part]
        return torch.cat(parts, -1)
    return torch.where(_pair_index(data) == part, -data, data)


def select_parts(re: torch.fx.Proxy, im: torch.fx.Proxy) -> torch.fx.Proxy:
    """Pair data from two parts of one shape, as a pointwise select on the pair
    index (not a stack: see :func:`negate_part`). Each element computes both
    parts' expressions, so this is for cheap ones. (A stack for exported
    programs: see :func:`negate_part`.)"""
    if _portable(re):
        return torch.stack((re, im), -1)
    return torch.where(_pair_index(re) == 0, re.unsqueeze(-1), im.unsqueeze(-1))


def _portable(like: torch.fx.Proxy) -> bool:
    """Whether the graph being traced is for runtimes beyond Inductor (the rewriter's ``portable_forms``)."""
    return getattr(getattr(like, "tracer", None), "portable_forms", False)


def _pair_index(like: torch.fx.Proxy) -> torch.fx.Proxy:
    """``arange(2)`` on ``like``'s device, in the graph ``like`` is traced into."""
    device = fake_value(like.node).device
    return like.tracer.create_proxy("call_function", torch.arange, (2,), {"dtype": torch.int32, "device": device})


def fake_value(node: Any) -> Any:
    """The fake value a node carries: Dynamo's ``example_value`` or aten's ``val``."""
    if not isinstance(node, torch.fx.Node):
        return None
    meta = node.meta
    if "val" in meta:
        return meta["val"]
    return meta.get("example_value")


def is_complex_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_complex()


def holds_complex(value: Any) -> bool:
    """True when a fake value is, or contains, a complex tensor."""
    if isinstance(value, (list, tuple)):
        return any(holds_complex(v) for v in value)
    return is_complex_tensor(value)
