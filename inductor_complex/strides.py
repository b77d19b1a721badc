"""Eager's strides, for values the rewrite hands back to eager code.

A rule computes eager's values but not always in eager's layout: parts stacked
into a pair are contiguous where eager's elementwise op kept its input's
permuted layout. Where a value leaves the rewritten graph (an output, or the
input of an op without a rule) it is copied into eager's layout when that
differs. With dynamic shapes the strides are symbolic: their hints give the
dim order of eager's dense layout, which a permute / contiguous / permute
reproduces without naming a size.
"""

from __future__ import annotations

import torch


def hint(value) -> int | None:
    """An int, or the example value behind a SymInt (None where there is none)."""
    if isinstance(value, int):
        return value
    node = getattr(value, "node", None)
    example = getattr(node, "hint", None)
    return example if isinstance(example, int) else None


def is_static(values) -> bool:
    return all(isinstance(v, int) for v in values)


def complex_view_strides(pair: torch.Tensor) -> list | None:
    """The strides (hints) of ``view_as_complex(pair)``, or None if it cannot be viewed."""
    strides = [hint(s) for s in pair.stride()]
    offset = hint(pair.storage_offset())
    if None in strides or offset is None or strides[-1] != 1 or any(s % 2 for s in strides[:-1]) or offset % 2:
        return None
    return [s // 2 for s in strides[:-1]]


def layout_differs(ours: list, eager: torch.Tensor, *, all_dims: bool) -> bool:
    """Whether strides ``ours`` (hints) differ from eager's (``all_dims=False``
    ignores dims of size 1, whose stride no index ever multiplies)."""
    theirs = [hint(s) for s in eager.stride()]
    sizes = [hint(n) for n in eager.shape]
    if None in theirs or None in sizes:
        return False  # cannot tell: leave it
    return any(a != b for a, b, n in zip(ours, theirs, sizes) if all_dims or n > 1)


# Ops whose eager kernel lays its result out unlike their meta kernel, which
# Dynamo's fake values follow: for a complex input aten's ``angle`` writes
# through ``out=`` into a fresh empty tensor, and that comes back contiguous;
# the meta kernel keeps the input's layout (a transposed input gives a
# transposed fake angle, a contiguous real one).
_CONTIGUOUS_IN_EAGER = frozenset({"angle"})


def eager_result_layout(name: str, operand, fake):
    """The fake result with eager's layout for op ``name`` on ``operand``:
    ``fake`` itself, or a contiguous twin of it."""
    if (name in _CONTIGUOUS_IN_EAGER and isinstance(operand, torch.Tensor) and operand.is_complex()
            and isinstance(fake, torch.Tensor) and not _contiguous_by_hints(fake)):
        return fake.clone(memory_format=torch.contiguous_format)
    return fake


def _contiguous_by_hints(value: torch.Tensor) -> bool:
    """``is_contiguous`` read from the hints (no guard on symbolic sizes)."""
    expected = 1
    for size, stride in reversed(list(zip(value.shape, value.stride()))):
        size, stride = hint(size), hint(stride)
        if size is None or stride is None:
            return True  # cannot tell: leave it
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def dense_order(eager: torch.Tensor) -> list[int] | None:
    """Eager's dims from outermost to innermost when its layout is a
    permutation of a contiguous one (what a new tensor from an op has), else None."""
    strides, sizes = [hint(s) for s in eager.stride()], [hint(n) for n in eager.shape]
    if None in strides or None in sizes:
        return None
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], -sizes[d]))
    expected = 1
    for d in reversed(order):
        if sizes[d] != 1 and strides[d] != expected:
            return None
        expected *= sizes[d]
    return order
