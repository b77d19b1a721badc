"""Pairs in memory as machine words, and views of pairs on their planes (:mod:`.pair_planes`).

A float32 pair ``(re, im)`` is 8 bytes: one int64, and ``view.dtype`` turns
a pair tensor ``[..., n, 2]`` (or a complex64 tensor ``[..., n]``) into its
words ``[..., n]`` without a copy. Loaded as words, pairs come in contiguously
along ``n``, and a narrowing cast (the low 32 bits) and a shift (the high 32)
with two bitcasts give the two planes; ``im << 32 | re`` gives the words back.
bfloat16 and float16 pairs are int32 words the same way. Bits move, nothing is
computed: NaN payloads and signed zeros are kept. :class:`PairsInMemory` reads
a graph's pairs in memory this way, once each; :func:`plane_view` applies a
view of pairs to one plane (or to words), where the view keeps the pair dim last.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .graph_meta import record_fake_value, statically_contiguous
from .inductor_nodes import in_memory, is_view, op_name
from .values import fake_value

aten, prims = torch.ops.aten, torch.ops.prims


class NoPlanarForm(Exception):
    """What has no form in planes here (the reason)."""


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


def extern_view(node: torch.fx.Node) -> bool:
    """A ``view.dtype`` that Inductor calls from its wrapper (a few microseconds); one
    between dtypes of one size is a bitcast in its generated code instead."""
    if node.target is not aten.view.dtype:
        return False
    source, result = fake_value(node.args[0]), fake_value(node)
    return source.is_complex() or result.is_complex() or source.element_size() != result.element_size()


def last_dim(node: torch.fx.Node) -> int:
    return fake_value(node).ndim - 1


def dim_index(d, ndim: int) -> int:
    return d + ndim if d < 0 else d


def pair_positions(start, end, step) -> list[int]:
    """The pair positions a slice of the pair dim takes."""
    return list(range(2))[slice(start, end, step)]


def lazy_bits(value) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_conj() or value.is_neg())


def fake_value_of(node):
    return fake_value(node) if isinstance(node, torch.fx.Node) else None


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


def plane_view(make: NodeMaker, node: torch.fx.Node, plane: torch.fx.Node) -> torch.fx.Node:
    """``node`` (a view of a pair that keeps the pair dim last) applied to one plane (or to words)."""
    last, args, name = last_dim(node.args[0]), node.args, op_name(node)
    if name in ("reshape", "view", "_unsafe_view"):
        shape = list(args[1])
        if not (isinstance(shape[-1], int) and shape[-1] == 2):
            raise NoPlanarForm(f"{name} moves the pair dim")
        return make(node.target, plane, shape[:-1])
    if name == "unsqueeze":
        d = dim_index(args[1], last + 2)
        if d > last:
            raise NoPlanarForm("unsqueeze after the pair dim")
        return make(aten.unsqueeze.default, plane, d)
    if node.target is aten.squeeze.dim:
        if dim_index(args[1], last + 1) == last:
            raise NoPlanarForm("squeeze of the pair dim")
        return make(aten.squeeze.dim, plane, dim_index(args[1], last + 1))
    if name == "permute":
        perm = [dim_index(d, last + 1) for d in args[1]]
        if perm[-1] != last:
            raise NoPlanarForm("permute moves the pair dim")
        return make(aten.permute.default, plane, perm[:-1])
    if name == "expand":
        sizes = list(args[1])
        if not (isinstance(sizes[-1], int) and sizes[-1] in (2, -1)):
            raise NoPlanarForm("expand of the pair dim")
        return make(aten.expand.default, plane, sizes[:-1])
    if name in ("slice", "select"):
        d = dim_index(args[1] if len(args) > 1 else 0, last + 1)
        if d == last:
            raise NoPlanarForm(f"{name} of the pair dim")
        return make(node.target, plane, d, *args[2:])
    if name in ("alias", "detach"):
        return plane
    raise NoPlanarForm(f"no planar form of the view {node.target}")


class PairsInMemory(NodeMaker):
    """The planes of pairs Inductor reads from memory, through their words; made once
    per graph, just after the pairs, and shared by every piece that reads them."""

    def __init__(self, graph: torch.fx.Graph, fake_mode):
        super().__init__(graph, fake_mode)
        self._words: dict = {}
        self._planes: dict = {}
        placeholders = graph.find_nodes(op="placeholder")
        self._after_inputs = placeholders[-1] if placeholders else None

    def _inserting_after(self, node: torch.fx.Node):
        anchor = self._after_inputs if node.op == "placeholder" else node
        return self.graph.inserting_before(anchor.next)

    def words(self, node: torch.fx.Node) -> torch.fx.Node | None:
        """``node``'s words through views only (None where Inductor would copy to make them)."""
        if node not in self._words:
            self._words[node] = self._make_words(node)
        return self._words[node]

    def _make_words(self, node):
        value = fake_value(node)
        word = WORDS.get(value.dtype)
        if word is None or lazy_bits(value):
            return None
        base = node.args[0] if node.op == "call_function" and node.args else None
        if isinstance(base, torch.fx.Node) and lazy_bits(fake_value_of(base)):
            return None  # (view.dtype refuses a tensor with the conj or neg bit)
        if node.target is aten.view_as_real.default and fake_value(base).dtype == word.complex:
            with self._inserting_after(node):  # one view of the complex tensor, not two
                return self(aten.view.dtype, base, word.word)
        if is_view(node) and is_pair(fake_value_of(base)) and in_memory(base) and self.words(base) is not None:
            with self._inserting_after(node):
                return plane_view(self, node, self.words(base))
        if statically_contiguous(value):  # (a strided tensor Inductor would copy before viewing it)
            with self._inserting_after(node):
                return self(aten.squeeze.dim, self(aten.view.dtype, node, word.word), -1)
        return None

    def planes(self, node: torch.fx.Node) -> tuple | None:
        """``node``'s two planes, read through its words; None if it has none."""
        if node not in self._planes:
            try:
                words = self.words(node)
            except NoPlanarForm:
                words = None
            if words is None:
                self._planes[node] = None
            else:
                with self.graph.inserting_before(words.next):
                    self._planes[node] = self.planes_of_words(words, WORDS[fake_value(node).dtype])
        return self._planes[node]

    def erase_unread(self) -> None:
        super().erase_unread()
        live = set(self.made)  # (forget what a piece that stayed as it was made and no one reads)
        self._words = {k: v for k, v in self._words.items() if v is None or v in live}
        self._planes = {k: v for k, v in self._planes.items() if v is None or all(p in live for p in v)}

    def part(self, reader: torch.fx.Node) -> torch.fx.Node | None:
        """The plane a part read of a pair in memory takes (``select(x, -1, k)``, or
        ``slice(x, -1, k, k + 1)`` without its dim of 1); None if not one."""
        if reader.op != "call_function" or reader.target not in (aten.select.int, aten.slice.Tensor):
            return None
        source = reader.args[0]
        if not (isinstance(source, torch.fx.Node) and is_pair(fake_value_of(source)) and in_memory(source)):
            return None
        if dim_index(reader.args[1], last_dim(source) + 1) != last_dim(source):
            return None
        if reader.target is aten.select.int:
            position = dim_index(reader.args[2], 2)
        else:
            positions = pair_positions(*(list(reader.args[2:]) + [None, None, 1])[:3])
            if len(positions) != 1:
                return None
            position = positions[0]
        planes = self.planes(source)
        return None if planes is None else planes[position]
