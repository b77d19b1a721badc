"""Past autograd on CPU: pair math computed in planes, so Inductor's loops vectorize.

Why: Inductor's CPU code for the pass's pair math is a scalar loop. A pair
tensor ``[..., n, 2]`` gives every loop nest an innermost dim of 2, below any
vector width, and the math reads across it (``x[n, 1 - p]``, ``x[n, 0]``),
which Inductor vectorizes only as gathers, if at all; eager's complex kernels
shuffle within registers, which Inductor's vector ops cannot.

So each connected piece of a CPU graph's pair math (past autograd, where the
graph is final) is computed as two real tensors ``[..., n]``, its real and
imaginary planes: an elementwise op acts on each plane, a flip of the pair dim
swaps them, a part read is a plane, a view applies to each. No loop nest
then holds a pair dim, and loops along ``n`` vectorize. Where a pair meets
memory (a graph input or output, an extern op such as ``mm``) it moves as one
word per pair (:mod:`.pair_words`): a complex input is read through its words
instead of ``view_as_real``, a new complex output is its words viewed as
complex instead of an ``aten.complex`` copy, and a real pair in or out costs
one extern ``view.dtype`` call, which the piece's size must pay for
(:data:`MIN_PAIRS_PER_EXTERN_CALL`).

Nothing is computed differently: each plane op is the pair op at one part,
and words move bits. A piece is left as it is when any of its ops has no
planar form here, when a pair leaving it would change layout, or when
Inductor's vector code for its loops could round differently from the scalar
code they had (a transcendental function anywhere in them, whose vector form
is another approximation): those stay bit for bit what they were. Reductions
in planes may sum in another order, as Inductor's own vector reductions do.
"""

from __future__ import annotations

import logging

import torch
import torch.fx
from torch._dynamo.utils import counters
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .graph_meta import graph_fake_mode, same_layout, same_sizes
from .inductor_nodes import FORCE_STRIDE_ORDER, computed_by_inductor, cpu_code_is_cpp, in_memory, is_view, op_name, returned
from .pair_words import (WORDS, NodeMaker, NoPlanarForm, PairsInMemory, dim_index, extern_view, fake_value_of, is_pair,
                         last_dim, pair_positions, plane_view)
from .report import COUNTER
from .values import fake_value

log = logging.getLogger(__name__)
aten, prims = torch.ops.aten, torch.ops.prims

# A piece is rewritten where it holds this many pairs per extern call it adds: the call
# costs ~4 us, vector loops save ~1 ns a pair (measured: python -m perf.rope_cpu_threshold).
MIN_PAIRS_PER_EXTERN_CALL = 4096

# Elementwise ops whose Inductor vector code rounds as its scalar code does (IEEE
# arithmetic, comparisons, selections, casts, bit ops): in planes they change no bit.
_EXACT_ELEMENTWISE = frozenset({
    "add", "sub", "rsub", "mul", "div", "neg", "abs", "where", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "maximum", "minimum",
    "clamp", "clamp_min", "clamp_max", "copysign", "sqrt", "rsqrt", "reciprocal", "sign", "sgn",
    "signbit", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "floor", "ceil", "trunc",
    "convert_element_type", "clone", "alias", "fill", "full_like", "zeros_like", "ones_like",
    "scalar_tensor", "square",
})


def _exact_elementwise(node: torch.fx.Node) -> bool:
    """Elementwise, and rounded alike by Inductor's vector and scalar code."""
    if torch.Tag.pointwise not in getattr(node.target, "tags", ()) or op_name(node) not in _EXACT_ELEMENTWISE:
        return False
    return node.kwargs.get("rounding_mode") is None  # (floor division's vector form is another formula)
















def _pairs(value) -> int:
    """How many pairs ``value`` holds (a symbolic count by its hint)."""
    count = value.numel() // 2
    if isinstance(count, torch.SymInt):
        node = count.node
        return int(node.hint) if node.has_hint() else 1 << 30  # (a hint: no guard added)
    return int(count)


# ------------------------------------------------------------ pieces


def _constants(graph: torch.fx.Graph) -> set:
    """Nodes computed from no tensor of the graph's (``iota``, ``full``, masks of them):
    each piece reads such a one at its own index, so it joins no pieces together."""
    constant = set()
    for node in graph.nodes:
        if node.op == "call_function" and all(i in constant for i in node.all_input_nodes):
            constant.add(node)
    return constant


def _pieces(graph: torch.fx.Graph, constant: set) -> list[list[torch.fx.Node]]:
    """Pair values Inductor computes (and views of them), joined where one reads another."""
    members, member_set = [], set()
    for node in graph.nodes:
        if node.op != "call_function" or node in constant or not is_pair(fake_value_of(node)):
            continue
        if computed_by_inductor(node) or (is_view(node) and node.args[0] in member_set):
            members.append(node)
            member_set.add(node)
    parent = {n: n for n in members}

    def root(n):
        while parent[n] is not n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for node in members:
        for source in node.all_input_nodes:
            if source in parent:
                parent[root(source)] = root(node)
    pieces: dict = {}
    for node in members:
        pieces.setdefault(root(node), []).append(node)
    return list(pieces.values())


def _mixes_parts(members: list, constant: set) -> bool:
    """Some op of the piece reads across the pair dim (a flip of it, a part broadcast
    over it, a part read, a cat or scatter along it, a [2] mask): pair math. Without
    one the pair dim is a dim like any other, whose loops Inductor already vectorizes."""
    for node in members:
        last = last_dim(node)
        for arg in node.all_input_nodes:
            value = fake_value_of(arg)
            if isinstance(value, torch.Tensor) and value.ndim and (
                    statically_known_true(value.shape[-1] == 1) or (arg in constant and is_pair(value))):
                return True
        name = op_name(node)
        if name == "rev" and any(dim_index(d, last + 1) == last for d in node.args[1]):
            return True
        if name in ("cat", "select_scatter", "slice_scatter"):
            dim = node.args[1] if name == "cat" else node.args[2]
            if dim_index(dim, last + 1) == last:
                return True
        for reader in node.users:
            if reader.target in (aten.select.int, aten.slice.Tensor) and reader.args[0] is node \
                    and dim_index(reader.args[1], last + 1) == last:
                return True
    return False


def _inexact_nearby(nodes, constant: set) -> str | None:
    """An elementwise op computed in the same loops as ``nodes`` (through what
    Inductor computes and views of it, either way; not through memory or
    constants, which each loop reads on its own) whose vector code could round
    otherwise than its scalar code; None if there is none."""
    seen, todo = set(nodes), list(nodes)
    while todo:
        node = todo.pop()
        for near in (*node.all_input_nodes, *node.users):
            if near in seen or near.op != "call_function" or not isinstance(near.target, torch._ops.OpOverload):
                continue
            seen.add(near)
            if near in constant or in_memory(near):
                continue
            if is_view(near):
                todo.append(near)
            elif computed_by_inductor(near):  # (reductions too: their inputs are computed in their loops)
                if torch.Tag.pointwise in near.target.tags and not _exact_elementwise(near):
                    return str(near.target)
                todo.append(near)
    return None


class Piece(NodeMaker):
    """One piece's planar form, made beside its nodes, then swapped in for them."""

    def __init__(self, graph: torch.fx.Graph, fake_mode, members: list, memory: PairsInMemory):
        super().__init__(graph, fake_mode)
        self.members, self.member_set, self.memory = members, set(members), memory
        self.planes: dict[torch.fx.Node, tuple] = {}
        self.swaps: list[tuple] = []  # (reader, old input or None for all its uses, new)

    # ------------------------------------------------------------ operands and ops

    def operand(self, arg) -> tuple:
        """``arg``'s two planes, as an operand of an op with a pair result reads them."""
        value = fake_value_of(arg)
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            return arg, arg  # (a number, or a 0-d tensor: the same for both parts)
        if arg in self.planes:
            return self.planes[arg]
        if statically_known_true(value.shape[-1] == 1):  # broadcast over the pair dim
            part = self.memory.part(arg)
            if part is None:
                part = self(aten.select.int, arg, -1, 0)
            return part, part
        if not is_pair(value) or arg in self.member_set:
            raise NoPlanarForm(f"operand {arg.name} of shape {tuple(value.shape)}")
        planes = self.memory.planes(arg) if in_memory(arg) else None
        if planes is not None:
            return planes
        if in_memory(arg) and value.dtype in WORDS:
            # (its parts would load with stride 2 along n: the loops would not vectorize)
            raise NoPlanarForm(f"{arg.name}, a pair in memory, has no words (strided, or a lazy bit)")
        # (a constant, or a view that makes a pair of other dims: Inductor reads it at each index)
        return self(aten.select.int, arg, -1, 0), self(aten.select.int, arg, -1, 1)

    def each(self, target, operands, *args, **kwargs) -> tuple:
        return tuple(self(target, *[o[k] for o in operands], *args, **kwargs) for k in (0, 1))

    def translate(self, node: torch.fx.Node) -> tuple:
        """``node``'s two planes, from its operands' planes."""
        name, args, kwargs = op_name(node), node.args, node.kwargs
        if is_view(node):
            return tuple(plane_view(self, node, plane) for plane in self.operand(args[0]))
        if name == "rev":
            last = last_dim(args[0])
            dims = [dim_index(d, last + 1) for d in args[1]]
            re, im = self.operand(args[0])
            if len(dims) > (last in dims):
                re, im = self.each(prims.rev.default, ((re, im),), [d for d in dims if d != last])
            return (im, re) if last in dims else (re, im)
        if name == "cat":
            return self.cat(node)
        if name in ("select_scatter", "slice_scatter"):
            return self.scatter(node)
        if name == "copy":  # (functional: the source's values in the destination's shape)
            return self.each(node.target, [self.operand(a) for a in args[:2]], *args[2:], **kwargs)
        if node.target is aten.sum.dim_IntList:
            last = last_dim(args[0])
            dims = [dim_index(d, last + 1) for d in args[1]]
            if last in dims:
                raise NoPlanarForm("sum over the pair dim")
            return self.each(node.target, [self.operand(args[0])], dims, *args[2:], **kwargs)
        if _exact_elementwise(node):
            return self.each(node.target, [self.operand(a) for a in args], **kwargs)
        raise NoPlanarForm(f"no planar form of {node.target}")

    def cat(self, node: torch.fx.Node) -> tuple:
        tensors, dim = node.args[0], node.args[1] if len(node.args) > 1 else 0
        last = last_dim(node)
        if dim_index(dim, last + 1) != last:
            operands = [self.operand(t) for t in tensors]
            return tuple(self(aten.cat.default, [o[k] for o in operands], dim_index(dim, last + 1)) for k in (0, 1))
        planes = []
        for tensor in tensors:
            size = fake_value(tensor).shape[-1]
            if statically_known_true(size == 1):
                planes.append(self.operand(tensor)[0])
            elif statically_known_true(size == 2):
                planes.extend(self.operand(tensor))
            elif not statically_known_true(size == 0):
                raise NoPlanarForm("cat of a part of unknown size")
        if len(planes) != 2:
            raise NoPlanarForm("cat into more than a pair")
        return tuple(planes)

    def scatter(self, node: torch.fx.Node) -> tuple:
        args = node.args
        base, src, dim = args[0], args[1], args[2] if len(args) > 2 else 0
        d = dim_index(dim, last_dim(node) + 1)
        if d != last_dim(node):
            return self.each(node.target, [self.operand(base), self.operand(src)], d, *args[3:])
        planes = list(self.operand(base))
        if node.target is aten.select_scatter.default:
            planes[dim_index(args[3], 2)] = src
            return tuple(planes)
        positions = pair_positions(*(list(args[3:]) + [None, None, 1])[:3])
        if len(positions) == 2:
            return self.operand(src)
        for j, position in enumerate(positions):
            planes[position] = self(aten.select.int, src, -1, j)
        return tuple(planes)

    # ------------------------------------------------------------ readers outside the piece

    def pair_form(self, node: torch.fx.Node) -> torch.fx.Node:
        """``node``'s pairs again, in its layout: words viewed back as pairs (no copy), or
        the planes stacked where the dtype has no word."""
        value, planes = fake_value(node), self.planes[node]
        word = WORDS.get(value.dtype)
        if word is not None:
            words = self.words_of_planes(planes, word)
            pairs = self(aten.view.dtype, self(aten.unsqueeze.default, words, -1), word.part)
        else:
            pairs = self(aten.cat.default, [self(aten.unsqueeze.default, p, -1) for p in planes], -1)
        if not same_layout(fake_value(pairs), value):
            raise NoPlanarForm(f"{node.name} would leave the piece in another layout")
        return pairs

    def complex_form(self, node: torch.fx.Node, reader: torch.fx.Node) -> torch.fx.Node | None:
        """``node``'s words viewed as complex, where that has ``reader``'s layout."""
        word = WORDS.get(fake_value(node).dtype)
        if word is None or word.complex is None or fake_value(reader).dtype != word.complex:
            return None
        words = self.words_of_planes(self.planes[node], word)
        if FORCE_STRIDE_ORDER is not None:
            # Inductor lays out a complex view's buffer freely, where view_as_complex asked
            # for it contiguous: FNO's irfft2 got its words channels-last and other bits.
            words = self(FORCE_STRIDE_ORDER, words, list(fake_value(words).stride()))
        view = self(aten.view.dtype, words, word.complex)
        return view if same_layout(fake_value(view), fake_value(reader)) else None

    def plan_readers(self, order: dict) -> None:
        """What each reader outside the piece reads instead (``swaps``), made just
        before the member's first such reader (``order``: the graph's nodes before
        any piece changed it; only those read a member)."""
        for node in self.members:
            readers = sorted((r for r in node.users if r not in self.member_set), key=order.__getitem__)
            if readers:
                with self.graph.inserting_before(readers[0]):
                    self.plan_member_readers(node, readers)

    def plan_member_readers(self, node: torch.fx.Node, readers: list) -> None:
        last, planes, pairs, stacked, done = last_dim(node), self.planes[node], None, None, set()
        for reader in readers:  # complex(x[..., 0], x[..., 1]): a complex view of the words, no copy
            made = next(iter(reader.users)) if reader.target is aten.select.int and len(reader.users) == 1 else None
            if made is not None and made.target is aten.complex.default and made not in done \
                    and _parts_of(made) == (node, node):
                view = self.complex_form(node, made)
                if view is not None:
                    self.swaps.append((made, None, view))
                    done.update({made, *made.args[:2]})
        for reader in readers:
            if reader in done:
                continue
            if reader.op == "call_function" and reader.args and reader.args[0] is node:
                # A part read whose readers Inductor computes becomes a plane (its layout then
                # Inductor's to choose); one returned or read by an extern op keeps its strides.
                if reader.users and all(computed_by_inductor(u) for u in reader.users):
                    if reader.target is aten.select.int and dim_index(reader.args[1], last + 1) == last:
                        self.swaps.append((reader, None, planes[dim_index(reader.args[2], 2)]))
                        continue
                    if reader.target is aten.slice.Tensor and dim_index(reader.args[1], last + 1) == last:
                        positions = pair_positions(*(list(reader.args[2:]) + [None, None, 1])[:3])
                        if len(positions) == 1:
                            self.swaps.append((reader, None, self(aten.unsqueeze.default, planes[positions[0]], -1)))
                            continue
                # A returned view stays a view of the returned pairs (AOTAutograd fixed that aliasing).
                if reader.target is aten.view_as_complex.default and not returned(reader):
                    view = self.complex_form(node, reader)
                    if view is not None:
                        self.swaps.append((reader, None, view))
                        continue
            if computed_by_inductor(reader):  # (a sum over the pair dim, say: the pairs inline, no buffer)
                if stacked is None:
                    stacked = self(aten.cat.default, [self(aten.unsqueeze.default, p, -1) for p in planes], -1)
                self.swaps.append((reader, node, stacked))
                continue
            if pairs is None:
                pairs = self.pair_form(node)
            self.swaps.append((reader, node, pairs))

    def require_worth_it(self, memory_made: list) -> None:
        """Each extern call this adds (here, or ``memory_made`` for its inputs) must be
        paid for by enough pairs. Complex words in place of ``view_as_real``, and complex
        views in place of ``view_as_complex`` or a ``complex`` copy, each spare one."""
        views = [n for n in (*self.made, *memory_made) if extern_view(n)]
        spared = [n for n in views if fake_value(n.args[0]).is_complex() or fake_value(n).is_complex()]
        added = len(views) - len(spared)
        pairs = max(_pairs(fake_value(n)) for n in self.members)
        if added > 0 and pairs < MIN_PAIRS_PER_EXTERN_CALL * added:
            raise NoPlanarForm(f"{pairs} pairs do not pay for {added} more extern calls")

    def swap_in(self) -> None:
        """Point the readers at the planar form and erase what nothing reads any more."""
        replaced = []
        for reader, old, new in self.swaps:
            if old is None:
                reader.replace_all_uses_with(new)
                replaced.append(reader)
            else:
                reader.replace_input_with(old, new)
        dead = set(self.members) | set(replaced)
        dead |= {a for r in replaced for a in r.all_input_nodes if a.target is aten.select.int}
        for node in reversed(list(self.graph.nodes)):
            if node in dead and not node.users:
                self.graph.erase_node(node)


def _parts_of(complex_node: torch.fx.Node):
    """The nodes whose parts 0 and 1 ``complex(re, im)`` takes through ``select(·, -1, k)``."""
    def part(arg, index):
        if (isinstance(arg, torch.fx.Node) and arg.target is aten.select.int and arg.args[2] == index
                and dim_index(arg.args[1], last_dim(arg.args[0]) + 1) == last_dim(arg.args[0])):
            return arg.args[0]
        return None
    return part(complex_node.args[0], 0), part(complex_node.args[1], 1)


# ------------------------------------------------------------ the step


def _read_parts_in_memory(graph: torch.fx.Graph, memory: PairsInMemory, constant: set, always: bool) -> int:
    """Real math reading a part of a pair in memory (``abs``'s ``x[..., 0]``) reads it
    through the words too: a contiguous load along ``n``, not one of stride 2."""
    readers_of: dict = {}
    for node in graph.nodes:
        # (only into loops over n: a part broadcast into pair math that stayed pairs would
        # mix words into a loop over pairs, which Inductor tiles badly)
        if node.op == "call_function" and node.target in (aten.select.int, aten.slice.Tensor) and node.users \
                and all(computed_by_inductor(u) and not is_pair(fake_value(u)) for u in node.users):
            source = node.args[0]
            if is_pair(fake_value_of(source)) and in_memory(source) and fake_value(source).dtype in WORDS:
                readers_of.setdefault(source, []).append(node)
    reads = 0
    for source, readers in readers_of.items():
        if _inexact_nearby(readers, constant) is not None:
            continue
        complex_words = source.target is aten.view_as_real.default  # (replaces it: no call added)
        if not (always or complex_words or _pairs(fake_value(source)) >= MIN_PAIRS_PER_EXTERN_CALL):
            continue
        swaps = []
        for reader in readers:
            plane = memory.part(reader)
            if plane is not None and reader.target is aten.slice.Tensor:
                with graph.inserting_before(reader):
                    plane = memory(aten.unsqueeze.default, plane, -1)
            if plane is not None and same_sizes(fake_value(plane), fake_value(reader)):
                swaps.append((reader, plane))
        if not swaps:
            continue
        for reader, plane in swaps:
            reader.replace_all_uses_with(plane)
            graph.erase_node(reader)
        reads += len(swaps)
    return reads


def _erase_dead_views(graph: torch.fx.Graph) -> None:
    """Views nothing reads any more (such as the pairs of inputs now read as words):
    Inductor would still call ``view_as_real`` for them."""
    for node in reversed(list(graph.nodes)):
        if not node.users and is_view(node):
            graph.erase_node(node)


def words_unvectorized_reason() -> str | None:
    """Why Inductor's vector code for words would not pay on this CPU, or None.

    Words cross between planes with 64-bit shifts and 64-to-32-bit narrowing.
    AVX-512 has both as instructions; AVX2 has neither, and Inductor's vector
    code emulates them element by element: on an AVX2 machine (torch 2.13, git
    fecb313, ``perf/results/avx2_host/``) planes ran slower than the pair loops
    in every row, a lone complex product 5.33 ms against 3.93 (stock 1.26),
    the unfused rope at long context 3.3 against 1.08. Other vector ISAs
    (NEON, SVE, VSX) are not measured: no planes there either."""
    if not cpu_code_is_cpp():
        return "Inductor writes Triton, not C++, for CPU tensors here (cpu_backend): planes serve its C++ vector code"
    try:
        from torch._inductor.cpu_vec_isa import VecAVX512, pick_vec_isa

        isa = pick_vec_isa()
    except Exception as error:  # (a changed Inductor): not proved to pay
        return f"Inductor's vector ISA is unknown ({type(error).__name__}: {error})"
    if isinstance(isa, VecAVX512):
        return None
    return f"Inductor's vector code here is {isa or 'none'}, which emulates the words' 64-bit shifts"


def compute_pairs_in_planes(graph: torch.fx.Graph, always: bool = False) -> int:
    """Give each piece of pair math in a CPU graph past autograd its planar form
    (module docstring) where it pays (``always``: wherever it can); returns how
    many pieces and part reads changed."""
    fake_mode = graph_fake_mode(graph)
    if fake_mode is None:
        return 0
    if not always:
        reason = words_unvectorized_reason()
        if reason is not None:
            log.debug("inductor_complex: pair math left as pairs: %s", reason)
            return 0
    constant, memory, changed = _constants(graph), PairsInMemory(graph, fake_mode), 0
    order = {n: i for i, n in enumerate(graph.nodes)}
    for members in _pieces(graph, constant):
        piece, memory_before = Piece(graph, fake_mode, members, memory), len(memory.made)
        try:
            if not _mixes_parts(members, constant):
                raise NoPlanarForm("nothing reads across its pair dim")
            inexact = _inexact_nearby(members, constant)
            if inexact is not None:
                raise NoPlanarForm(f"{inexact} would be vectorized")
            for node in members:
                with graph.inserting_before(node):
                    piece.planes[node] = piece.translate(node)
            piece.plan_readers(order)
            if not always:
                piece.require_worth_it(memory.made[memory_before:])
        except Exception as why:  # (a Skip, or a fake value that would not compute)
            log.debug("inductor_complex: pair math at %s left as it is: %s", members[0].name, why)
            counters[COUNTER]["planes_left"] += 1
            piece.erase_unread()
            memory.erase_unread()
            continue
        piece.swap_in()
        log.debug("inductor_complex: pair math at %s (%d nodes) in planes", members[0].name, len(members))
        counters[COUNTER]["planes"] += 1
        changed += 1
    changed += _read_parts_in_memory(graph, memory, constant, always)
    memory.erase_unread()
    if changed:
        _erase_dead_views(graph)
    return changed
