"""The complex-to-real rewrite: one forward walk over an FX graph.

The heart is ``pairs``: complex value (an original node) → the real-pair
node that now holds it. Rules read their operands from it and write their
results into it, so a chain of complex ops never returns to complex in
between. Complex values that stay complex (graph inputs, constants, outputs
of ops without a rule) get a ``view_as_real`` entry view at first use; a
rewritten value needed by an op without a rule, or by the graph output, gets a
``view_as_complex`` bridge. Both are views, so mutations still land.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.fx.node import map_aggregate, map_arg

from .graph_meta import graph_fake_mode, meta_key, propagate_fake_values
from .report import Report
from .rules import RULES, Unsupported
from .rules.common import tracing_into
from .targets import describe_target, normalize
from .values import Pair, fake_value, holds_complex, is_complex_tensor, real_dtype

Node = torch.fx.Node


def graph_has_complex(graph: torch.fx.Graph) -> bool:
    return any(holds_complex(fake_value(node)) for node in graph.nodes)


def _same_size(a, b) -> bool:
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


_IN_PLACE_OPERATORS = {
    operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow,
    operator.imatmul, operator.iand, operator.ior, operator.ixor,
}

# Eager returns these as views carrying a lazy conj bit: a later in-place write
# to the input shows through them (and one through them reaches the input).
# The rules compute them, which is only exact when nothing writes complex storage.
_LAZY_CONJ_VIEWS = {"conj", "H", "mH", "adjoint"}


def _mutates(node: Node) -> bool:
    if node.op == "call_function" and node.target in _IN_PLACE_OPERATORS:
        return True
    if isinstance(node.target, torch._ops.OpOverload):
        return bool(node.target._schema.is_mutable)
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return isinstance(name, str) and name.endswith("_") and not name.startswith("_")


def _may_write_complex_storage(node: Node) -> bool:
    """Whether an in-place op may write memory a complex tensor owns: its target
    is complex, a real view of a complex tensor (``.real``, ``view_as_real``), or unknown."""
    target = node.args[0] if node.args else None
    value = fake_value(target) if isinstance(target, Node) else None
    if not isinstance(value, torch.Tensor):
        return True
    base = value._base if value._base is not None else value
    return value.is_complex() or base.is_complex()


class GraphLeftUnchanged(Exception):
    """The graph cannot be rewritten at all; ``node`` says why."""

    def __init__(self, node: Node, op: str, reason: str):
        super().__init__(reason)
        self.node, self.op, self.reason = node, op, reason


class ComplexRewriter:
    """Rewrites one graph in place. Use :meth:`run`; see the module docstring."""

    def __init__(self, graph: torch.fx.Graph, report: Report | None = None):
        self.graph = graph
        self.report = report or Report()
        self.meta_key = meta_key(graph)
        self.fake_mode = graph_fake_mode(graph)
        self.tracer = torch.fx.proxy.GraphAppendingTracer(graph)
        self.pairs: dict[Node, Any] = {}  # rewritten complex value → pair node(s)
        self.entry_views: dict[Node, Node] = {}  # complex value kept complex → its view_as_real
        self.bridges: dict[Node, Node] = {}  # rewritten complex value → view_as_complex(pair)
        self.replaced: list[Node] = []  # original nodes whose work now lives elsewhere
        self.created: set[Node] = set()
        self.rewired: list[tuple[Node, tuple, dict]] = []  # (node, old args, old kwargs), for undo
        self.current: Node | None = None

    # ------------------------------------------------------------------ walk
    def run(self) -> Report:
        if self.fake_mode is None or not graph_has_complex(self.graph):
            return self.report
        # Read once, from the graph as it came (the rules add writes of their own).
        self.writes_complex_storage = self._graph_writes_complex_storage()
        for node in list(self.graph.nodes):
            self.current = node
            if node.op in ("call_function", "call_method"):
                if self._involves_complex(node):
                    self._visit(node)
            elif node.op == "output":
                self._bridge_inputs(node, "exit_view")
        self.graph.lint()
        self._clean()
        return self.report

    def undo(self) -> None:
        """Put the graph back as it was before :meth:`run` (which must not have finished)."""
        for node, args, kwargs in reversed(self.rewired):
            node.args, node.kwargs = args, kwargs
        for node in reversed(list(self.graph.nodes)):
            if node in self.created:
                self.graph.erase_node(node)

    def _graph_writes_complex_storage(self) -> bool:
        return any(
            _mutates(node) and _may_write_complex_storage(node)
            for node in self.graph.nodes
            if node.op in ("call_function", "call_method")
        )

    def _rewire(self, node: Node, args: tuple, kwargs: dict) -> None:
        self.rewired.append((node, node.args, node.kwargs))
        node.args, node.kwargs = args, kwargs

    def _involves_complex(self, node: Node) -> bool:
        if holds_complex(fake_value(node)):
            return True
        found = False

        def look(arg):
            nonlocal found
            found = found or arg in self.pairs or holds_complex(fake_value(arg))
            return arg

        map_arg((node.args, node.kwargs), look)
        return found

    def _visit(self, node: Node) -> None:
        op = describe_target(node)
        call = normalize(node)
        rule = RULES.get(call.name) if call else None
        if rule is None:
            self._keep(node, op, f"no rule for {call.name if call else op}")
            return
        if call.name in _LAZY_CONJ_VIEWS and self.writes_complex_storage:
            # Its users could not take a real view of it either (view_as_real
            # refuses conj views): leave the whole graph as it was.
            raise GraphLeftUnchanged(node, op, "eager's result is a lazy conj view and the graph writes complex storage in place")
        try:
            self._apply(node, rule, call.args, call.kwargs)
        except Unsupported as why:
            self._keep(node, op, str(why))
            return
        self.report.add(node, op, "rewritten")

    # --------------------------------------------------------------- rewrite
    def _apply(self, node: Node, rule, args: tuple, kwargs: dict) -> None:
        expected = fake_value(node)
        if isinstance(expected, (list, tuple)) and any(
            user.target is not operator.getitem for user in node.users
        ):
            raise Unsupported("a sequence of complex tensors used whole")
        args, kwargs = map_aggregate((args, kwargs), self._wrap)
        anchor = node.prev
        try:
            with self.graph.inserting_before(node), tracing_into(self.tracer):
                result = rule(*args, **kwargs, out=expected)
            new_nodes = self._nodes_between(anchor, node)
            self._propagate(new_nodes, node)
            self._check(result, expected)
        except Exception as error:
            for new in reversed(self._nodes_between(anchor, node)):
                self.created.discard(new)
                self.graph.erase_node(new)
            if isinstance(error, Unsupported):
                raise
            raise Unsupported(f"rule {rule.__name__} failed: {type(error).__name__}: {error}") from error
        self._record(node, result)

    def _record(self, node: Node, result: Any) -> None:
        self.replaced.append(node)
        if isinstance(result, Pair):
            self.pairs[node] = result.data.node
        elif isinstance(result, (list, tuple)):
            self.pairs[node] = [item.data.node for item in result]
        elif isinstance(result, torch.fx.Proxy):
            for user in list(node.users):
                self._rewire(user, *map_arg((user.args, user.kwargs), lambda a: result.node if a is node else a))
        # None: an in-place write with no result (setitem); its effect was emitted.

    def _wrap(self, arg: Any) -> Any:
        """A node argument as a rule sees it: Pair, list of Pair, or proxy."""
        if not isinstance(arg, Node):
            return arg
        value = fake_value(arg)
        if arg in self.pairs:
            held = self.pairs[arg]
            if isinstance(held, list):
                return [self._as_pair(p, v) for p, v in zip(held, value)]
            return self._as_pair(held, value)
        if is_complex_tensor(value):
            return self._as_pair(self._entry_view(arg), value)
        return torch.fx.Proxy(arg, self.tracer)

    def _as_pair(self, pair_node: Node, value: torch.Tensor) -> Pair:
        return Pair(torch.fx.Proxy(pair_node, self.tracer), value.dtype, value.ndim)

    def _nodes_between(self, anchor: Node, node: Node) -> list[Node]:
        nodes, cursor = [], node.prev
        while cursor is not anchor:
            nodes.append(cursor)
            cursor = cursor.prev
        return nodes[::-1]

    # --------------------------------------------------------------- metadata
    def _propagate(self, new_nodes: list[Node], origin: Node) -> None:
        self.created.update(new_nodes)
        propagate_fake_values(new_nodes, origin, self.fake_mode, self.meta_key)

    def _check(self, result: Any, expected: Any) -> None:
        """The rewrite must produce exactly the shape and dtype eager does."""
        if isinstance(result, (list, tuple)):
            if not isinstance(expected, (list, tuple)) or len(result) != len(expected):
                raise Unsupported("sequence result of the wrong length")
            for item, want in zip(result, expected):
                self._check(item, want)
            return
        if result is None:
            return
        if isinstance(result, Pair):
            got = fake_value(result.data.node)
            if not (is_complex_tensor(expected) and isinstance(got, torch.Tensor)):
                raise Unsupported("complex result expected")
            if got.dtype != real_dtype(expected.dtype) or result.dtype != expected.dtype:
                raise Unsupported(f"pair dtype {got.dtype} for {expected.dtype}")
            if not _same_size(got.shape, (*expected.shape, 2)) or got.device != expected.device:
                raise Unsupported(f"pair shape {tuple(got.shape)} for complex {tuple(expected.shape)}")
            return
        if not isinstance(result, torch.fx.Proxy):
            raise Unsupported(f"rule returned {type(result).__name__}")
        got = fake_value(result.node)
        if isinstance(expected, torch.Tensor):
            if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype or got.device != expected.device:
                raise Unsupported("real result of the wrong dtype or device")
            if not _same_size(got.shape, expected.shape):
                raise Unsupported(f"real result shape {tuple(got.shape)} for {tuple(expected.shape)}")
        elif not statically_known_true(got == expected):
            raise Unsupported(f"result {got} for {expected}")

    # -------------------------------------------------------------- bridges
    def _entry_view(self, value: Node) -> Node:
        """``view_as_real`` of a complex value that stays complex (made once, a view)."""
        if value not in self.entry_views:
            with self.graph.inserting_before(self.current):
                view = self.graph.call_function(torch.view_as_real, (value,))
            self._propagate([view], value)
            self.entry_views[value] = view
        return self.entry_views[value]

    def _complex_view(self, value: Node, user: Node) -> Node:
        """``view_as_complex`` of a rewritten value, for a user that needs complex."""
        if value in self.bridges:
            return self.bridges[value]
        pair = self.pairs[value]
        viewable = self._viewable_as_complex(fake_value(pair))
        with self.graph.inserting_before(user):
            source = pair if viewable else self.graph.call_method("contiguous", (pair,))
            bridge = self.graph.call_function(torch.view_as_complex, (source,))
        self._propagate([bridge] if viewable else [source, bridge], value)
        if viewable:
            self.bridges[value] = bridge  # a copy would go stale after a write
        return bridge

    @staticmethod
    def _viewable_as_complex(pair: torch.Tensor) -> bool:
        strides = pair.stride()
        return (
            statically_known_true(strides[-1] == 1)
            and all(statically_known_true(s % 2 == 0) for s in strides[:-1])
            and statically_known_true(pair.storage_offset() % 2 == 0)
        )

    def _bridge_inputs(self, node: Node, action: str) -> bool:
        """Swap rewritten complex inputs of ``node`` for complex views of their pairs."""
        bridged = False

        def swap(arg: Node):
            nonlocal bridged
            if arg not in self.pairs:
                return arg
            if isinstance(self.pairs[arg], list):
                raise Unsupported("a sequence of complex tensors used whole")
            bridged = True
            return self._complex_view(arg, node)

        args, kwargs = map_arg((node.args, node.kwargs), swap)
        if bridged:
            self._rewire(node, args, kwargs)
            self.report.add(node, describe_target(node) if node.op != "output" else "output", action)
        return bridged

    def _keep(self, node: Node, op: str, reason: str) -> None:
        """Leave ``node`` as it was, bridging any rewritten inputs back to complex."""
        bridged = self._bridge_inputs(node, "bridge_view")
        self.report.add(node, op, "bridged" if bridged else "kept", reason)

    # ---------------------------------------------------------------- clean
    def _clean(self) -> None:
        # Entry views made for a rule that then refused have no users: not reported.
        for value, view in self.entry_views.items():
            if view.users:
                self.report.add(value, "torch.view_as_real", "entry_view")
        for node in reversed(self.replaced):
            if not node.users:
                self.graph.erase_node(node)
        for node in reversed(list(self.graph.nodes)):
            if node in self.created and not node.users and not _mutates(node):
                self.graph.erase_node(node)
