"""A pair of parts as one machine word, for pair math in planes (:mod:`.pair_planes`).

A float32 pair ``(re, im)`` is 8 bytes: one int64, and ``view.dtype`` turns
a pair tensor ``[..., n, 2]`` (or a complex64 tensor ``[..., n]``) into its
words ``[..., n]`` without a copy. Loaded as words, pairs come in contiguously
along ``n``, and a narrowing cast (the low 32 bits) and a shift (the high 32)
with two bitcasts give the two planes; ``im << 32 | re`` gives the words back.
bfloat16 and float16 pairs are int32 words the same way. Bits move, nothing is
computed: NaN payloads and signed zeros are kept.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .graph_meta import record_fake_value
from .values import fake_value

aten, prims = torch.ops.aten, torch.ops.prims


@dataclasses.dataclass(frozen=True)
class Word:
    """A pair of ``part`` held as one integer ``word``; ``half`` holds one part's bits."""

    part: torch.dtype
    word: torch.dtype
    half: torch.dtype
    bits: int
    complex: torch.dtype | None  # the complex dtype with this word's layout


WORDS = {
    torch.float32: Word(torch.float32, torch.int64, torch.int32, 32, torch.complex64),
    torch.bfloat16: Word(torch.bfloat16, torch.int32, torch.int16, 16, None),
    torch.float16: Word(torch.float16, torch.int32, torch.int16, 16, torch.complex32),
}


def is_pair(value) -> bool:
    """A CPU tensor whose last dim is statically 2 (a pair dim, or the [2] of a part mask)."""
    return (isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.ndim > 0
            and statically_known_true(value.shape[-1] == 2))


def contiguous(value) -> bool:
    """``is_contiguous`` (size-1 dims aside), proven without guarding a symbolic size."""
    expected = 1
    for size, stride in reversed(list(zip(value.shape, value.stride()))):
        if not (statically_known_true(size == 1) or statically_known_true(stride == expected)):
            return False
        expected = expected * size
    return True


def extern_view(node: torch.fx.Node) -> bool:
    """A ``view.dtype`` that Inductor calls from its wrapper (a few microseconds); one
    between dtypes of one size is a bitcast in its generated code instead."""
    if node.target is not aten.view.dtype:
        return False
    source, result = fake_value(node.args[0]), fake_value(node)
    return source.is_complex() or result.is_complex() or source.element_size() != result.element_size()


class NodeMaker:
    """Makes aten calls where the graph's insert point is, each with its fake value,
    and remembers them so they can be erased again."""

    def __init__(self, graph: torch.fx.Graph, fake_mode):
        self.graph, self.fake_mode = graph, fake_mode
        self.made: list[torch.fx.Node] = []

    def __call__(self, target, *args, **kwargs) -> torch.fx.Node:
        node = self.graph.call_function(target, args, kwargs)
        self.made.append(node)
        record_fake_value(node, None, self.fake_mode, "val", False)
        if "val" not in node.meta:
            raise RuntimeError(f"no fake value for {target}")
        return node

    def planes_of_words(self, words: torch.fx.Node, word: Word) -> tuple[torch.fx.Node, torch.fx.Node]:
        """The real and imaginary planes in ``words``: its low and its high bits."""
        # A narrowing cast keeps the low bits (C++'s, eager's and Inductor's vector convert alike).
        re = self(aten.view.dtype, self(prims.convert_element_type.default, words, word.half), word.part)
        high = self(aten.bitwise_right_shift.Tensor_Scalar, words, word.bits)
        im = self(aten.view.dtype, self(prims.convert_element_type.default, high, word.half), word.part)
        return re, im

    def words_of_planes(self, planes, word: Word) -> torch.fx.Node:
        """Words ``im << bits | re`` of two planes."""
        def bits(plane):
            return self(prims.convert_element_type.default, self(aten.view.dtype, plane, word.half), word.word)

        low = self(aten.bitwise_and.Scalar, bits(planes[0]), (1 << word.bits) - 1)
        high = self(aten.bitwise_left_shift.Tensor_Scalar, bits(planes[1]), word.bits)
        return self(aten.bitwise_or.Tensor, high, low)

    def erase_unread(self) -> None:
        """Erase what was made and nothing reads (latest first, so chains go whole)."""
        for node in reversed(self.made):
            if not node.users and not getattr(node, "_erased", False):
                self.graph.erase_node(node)
        self.made = [n for n in self.made if n.users]
