"""Where complex values enter and leave the rewritten graph.

* Entry views: a complex value that stays complex (a graph input, a buffer,
  the output of an op without a rule) is read as ``view_as_real`` of its
  storage, made once, where the value is defined (so a first use under
  ``no_grad`` does not cut the gradient of later uses). An input carrying
  eager's lazy conj/neg bit is viewed without it and held with the bit.
* Bridges: a rewritten value needed by an op without a rule gets
  ``view_as_complex`` of its pair (with ``conj``/``_neg_view`` for lazy
  bits), a view, so writes through it land.
* Outputs: a returned value has eager's aliasing, writability and strides. A
  view in eager is returned as a view; a new tensor in eager is returned with
  eager's strides and, where it does not require grad, as a tensor of its own
  (``torch.complex``), not a view of a hidden real buffer made under the
  ``no_grad`` an inference graph runs in (writing to that raises in eager code).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch.fx.node import map_arg
from torch.utils.checkpoint import CheckpointPolicy

from .graph_meta import record_fake_value
from .mutation import shares_storage, written_args
from .targets import describe_target
from .values import NO_BITS, Held, bits_of, fake_value

if TYPE_CHECKING:
    from .rewrite import ComplexRewriter

Node = torch.fx.Node


class GraphLeftUnchanged(Exception):
    """The graph cannot be rewritten at all; ``node`` says why."""

    def __init__(self, node: Node, op: str, reason: str):
        super().__init__(reason)
        self.node, self.op, self.reason = node, op, reason


def _static(values) -> bool:
    return all(isinstance(v, int) for v in values)


def _complex_strides(pair: torch.Tensor) -> tuple | None:
    """The strides of ``view_as_complex(pair)``, or None when it cannot be viewed."""
    strides = pair.stride()
    if not _static(strides) or not isinstance(pair.storage_offset(), int):
        return None
    if strides[-1] != 1 or any(s % 2 for s in strides[:-1]) or pair.storage_offset() % 2:
        return None
    return tuple(s // 2 for s in strides[:-1])


def _viewable(pair: torch.Tensor) -> bool:
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    strides = pair.stride()
    return (
        statically_known_true(strides[-1] == 1)
        and all(statically_known_true(s % 2 == 0) for s in strides[:-1])
        and statically_known_true(pair.storage_offset() % 2 == 0)
    )


def _eager_layout_differs(pair: torch.Tensor, expected: torch.Tensor, *, all_dims: bool) -> bool:
    """Whether the pair's complex view would have other strides than eager's
    result (static shapes only; ``all_dims=False`` ignores dims of size 1)."""
    if not (_static(expected.shape) and _static(expected.stride()) and _static(pair.shape)):
        return False
    ours = _complex_strides(pair)
    if ours is None:
        return True
    return any(
        a != b for a, b, n in zip(ours, expected.stride(), expected.shape) if all_dims or n > 1
    )


class Edges:
    """Entry views, bridges and outputs of one rewrite (see the module docstring)."""

    def __init__(self, rewriter: ComplexRewriter):
        self.rw = rewriter
        self.graph = rewriter.graph
        self.entries: dict[Node, Held] = {}  # complex value left complex → its entry view
        self.bridges: dict[Node, Node] = {}  # rewritten value → its shared complex view

    # ----------------------------------------------------------- node making
    def _make(self, target, *args, before: Node, modes_of: Node, method: bool = False, **kwargs) -> Node:
        with self.graph.inserting_before(before):
            make = self.graph.call_method if method else self.graph.call_function
            node = make(target, args, kwargs)
        self.rw.created.add(node)
        grad = self.rw.tracks_grad and self.rw.grad_enabled_at(modes_of)
        record_fake_value(node, modes_of, self.rw.fake_mode, self.rw.meta_key, grad)
        return node

    def _real_view(self, value: Node, conj: bool, neg: bool, *, before: Node, modes_of: Node) -> Node:
        """``view_as_real`` of a complex tensor's storage, its lazy bits dropped."""
        source = value
        if conj:
            source = self._make(torch.conj, source, before=before, modes_of=modes_of)
        if neg:
            source = self._make(torch._neg_view, source, before=before, modes_of=modes_of)
        return self._make(torch.view_as_real, source, before=before, modes_of=modes_of)

    def _complex_of(self, pair: Node, conj: bool, neg: bool, *, before: Node, modes_of: Node) -> Node:
        view = self._make(torch.view_as_complex, pair, before=before, modes_of=modes_of)
        if conj:
            view = self._make(torch.conj, view, before=before, modes_of=modes_of)
        if neg:
            view = self._make(torch._neg_view, view, before=before, modes_of=modes_of)
        return view

    def _first_non_input(self) -> Node:
        for node in self.graph.nodes:
            if node.op not in ("placeholder", "get_attr"):
                return node
        raise AssertionError("a graph has an output node")

    # ----------------------------------------------------------- entry views
    def entry(self, value: Node) -> Held:
        """The held form of a complex value that stays complex (made once, a view)."""
        if value in self.entries:
            return self.entries[value]
        before = self._first_non_input() if value.op in ("placeholder", "get_attr") else value.next
        conj, neg = bits_of(fake_value(value))
        view = self._real_view(value, conj, neg, before=before, modes_of=before)
        if self.rw.recompute_entries and getattr(fake_value(value), "requires_grad", False):
            # The partitioner would save this view for backward, detached: a
            # double backward then silently misses the input's terms, where
            # stock compile saves the input itself and refuses with a clear
            # error. Recomputing the view keeps the input saved.
            cursor = view
            while cursor is not value:
                cursor.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
                cursor = cursor.args[0]
        self.entries[value] = Held(view, conj, neg)
        return self.entries[value]

    def report_entries(self) -> None:
        # Entry views made for a rule that then refused have no users: not reported.
        for value, held in self.entries.items():
            if held.data.users:
                self.rw.report.add(value, "torch.view_as_real", "entry_view")

    # --------------------------------------------------------------- bridges
    def bridge_inputs(self, node: Node, action: str) -> bool:
        """Swap rewritten complex inputs of ``node`` for complex views of their pairs."""
        bridged = False

        def swap(arg):
            nonlocal bridged
            if not isinstance(arg, Node) or arg not in self.rw.held:
                return arg
            if isinstance(self.rw.held[arg], list):
                raise GraphLeftUnchanged(node, describe_target(node), "a sequence of complex tensors used whole")
            bridged = True
            return self.complex_view(arg, node)

        args, kwargs = map_arg((node.args, node.kwargs), swap)
        if bridged:
            self.rw._rewire(node, args, kwargs)
            self.rw.report.add(node, describe_target(node) if node.op != "output" else "output", action)
        return bridged

    def complex_view(self, value: Node, user: Node, *, reader: bool = True) -> Node:
        """The complex form of a rewritten value, for an op without a rule
        (``reader=False``: for the graph's output, which must get a view)."""
        held = self.rw.held[value]
        pair = fake_value(held.data)
        writes = any(arg is value for arg in written_args(user))
        aliased = any(shares_storage(out, fake_value(value)) for out in _tensors(fake_value(user)))
        if reader and not writes and not aliased and held.bits == NO_BITS:
            # A reader whose result is new: give it eager's layout (a copy
            # right before it, so it sees every write up to there).
            if _eager_layout_differs(pair, fake_value(value), all_dims=False):
                restrided = self._eager_strided_copy(held.data, fake_value(value), before=user)
                return self._complex_of(restrided, False, False, before=user, modes_of=user)
        if value in self.bridges:
            return self.bridges[value]
        if not _viewable(pair):
            if writes or aliased or not reader:
                raise GraphLeftUnchanged(user, describe_target(user), "an op without a rule writes or views a value the rewrite holds in a layout complex views cannot take")
            copy = self._make("contiguous", held.data, before=user, modes_of=user, method=True)
            return self._complex_of(copy, held.conj, held.neg, before=user, modes_of=user)
        self.bridges[value] = self._complex_of(held.data, held.conj, held.neg, before=value, modes_of=value)
        return self.bridges[value]

    def _eager_strided_copy(self, pair: Node, expected: torch.Tensor, *, before: Node) -> Node:
        """The pair copied into eager's strides (``expected``'s, plus the pair dim)."""
        value = fake_value(pair)
        target = self._make(
            torch.empty_strided, (*expected.shape, 2), (*(2 * s for s in expected.stride()), 1),
            before=before, modes_of=before, dtype=value.dtype, device=value.device,
        )
        return self._make("copy_", target, pair, before=before, modes_of=before, method=True)

    # --------------------------------------------------------------- outputs
    def bridge_outputs(self, output: Node) -> None:
        returned = list(dict.fromkeys(output.all_input_nodes))
        made = self._outputs_of_their_own(output, returned)
        bridged = False
        inputs_by_value = {id(fake_value(node)): node for node in self.rw.inputs}

        def swap(arg):
            nonlocal bridged
            if arg in made:
                bridged = True
                return made[arg]
            if isinstance(arg, Node) and arg in self.rw.real_results:
                made[arg] = self._real_output(arg, output)
                bridged = bridged or made[arg] is not arg
                return made[arg]
            if not isinstance(arg, Node) or arg not in self.rw.held:
                return arg
            if id(fake_value(arg)) in inputs_by_value:
                # Eager returned the input itself (a no-op cast, positive, resolve_conj).
                bridged = True
                return inputs_by_value[id(fake_value(arg))]
            if isinstance(self.rw.held[arg], list):
                raise GraphLeftUnchanged(output, "output", "a sequence of complex tensors used whole")
            bridged = True
            made[arg] = self._output_view(arg, output)
            return made[arg]

        args, kwargs = map_arg((output.args, output.kwargs), swap)
        if bridged:
            self.rw._rewire(output, args, kwargs)
            self.rw.report.add(output, "output", "exit_view")

    def _is_new_in_eager(self, value: Node) -> bool:
        """A rewritten value that eager returns as a tensor of its own (no view, no lazy bit)."""
        held = self.rw.held.get(value)
        eager = fake_value(value)
        return (
            isinstance(held, Held) and held.bits == NO_BITS and eager._base is None
            and not any(shares_storage(eager, fake_value(i)) for i in self.rw.inputs)
        )

    def _outputs_of_their_own(self, output: Node, returned: list[Node]) -> dict[Node, Node]:
        """Give each returned new tensor that does not require grad its own
        complex storage (an inference graph runs under no_grad, and a view of a
        hidden real buffer made there cannot be written to with grad). Outputs
        that are views of it in eager are made from it again by eager's own view ops."""
        made: dict[Node, Node] = {}
        if not self.rw.tracks_grad:
            return made  # an aten graph (AOTInductor) returns plain tensors
        for owner in returned:
            if owner in made or not self._is_new_in_eager(owner) or fake_value(owner).requires_grad:
                continue
            views = [r for r in returned if r is not owner and shares_storage(fake_value(r), fake_value(owner))]
            chains = [self._view_chain(view, owner) for view in views]
            if any(chain is None for chain in chains):
                continue  # left as views of the pair, aliasing kept
            made[owner] = self._storage_of_its_own(owner, output)
            for view, chain in zip(views, chains):
                made[view] = self._replay(chain, owner, made[owner], output)
        return made

    def _view_chain(self, view: Node, owner: Node) -> list[Node] | None:
        """The view ops eager applied to ``owner`` to make ``view``, or None."""
        chain, node = [], view
        while node is not owner:
            if node.op not in ("call_function", "call_method") or not node.args or not isinstance(node.args[0], Node):
                return None
            others = [a for a in node.all_input_nodes if a is not node.args[0]]
            if written_args(node) or any(a in self.rw.held or _has_tensor(fake_value(a)) for a in others):
                return None
            if not shares_storage(fake_value(node), fake_value(node.args[0])):
                return None
            chain.append(node)
            node = node.args[0]
        return chain[::-1]

    def _replay(self, chain: list[Node], owner: Node, made_owner: Node, output: Node) -> Node:
        current, previous = made_owner, owner
        for node in chain:
            with self.graph.inserting_before(output):
                copy = self.graph.node_copy(node, lambda n, p=previous, c=current: c if n is p else n)
            self.rw.created.add(copy)
            record_fake_value(copy, node, self.rw.fake_mode, self.rw.meta_key, self.rw.grad_enabled_at(output))
            current, previous = copy, node
        return current

    def _eager_layout_pair(self, value: Node, output: Node) -> Node:
        """The value's pair, copied into eager's strides where they differ."""
        pair, eager = self.rw.held[value].data, fake_value(value)
        if _eager_layout_differs(fake_value(pair), eager, all_dims=True) or not _viewable(fake_value(pair)):
            if _static(eager.shape) and _static(eager.stride()):
                return self._eager_strided_copy(pair, eager, before=output)
            return self._make("contiguous", pair, before=output, modes_of=output, method=True)
        return pair

    def _real_output(self, node: Node, output: Node) -> Node:
        """A real result of a rule, returned: a view of an input as in eager, or
        with eager's strides (the rule may have built it in another layout)."""
        eager, ours = self.rw.real_results[node], fake_value(node)
        if any(shares_storage(eager, fake_value(i)) and fake_value(i).is_complex() for i in self.rw.inputs):
            return self._view_of_input(eager, output) or node  # a real view of a complex input
        if eager._base is not None:
            return node  # a view of an intermediate: its strides come with it
        if not (_static(eager.shape) and _static(eager.stride()) and _static(ours.stride())):
            return node
        if all(a == b for a, b, n in zip(ours.stride(), eager.stride(), eager.shape) if n > 1):
            return node
        target = self._make(torch.empty_strided, tuple(eager.shape), tuple(eager.stride()), before=output,
                            modes_of=output, dtype=ours.dtype, device=ours.device)
        return self._make("copy_", target, node, before=output, modes_of=output, method=True)

    def _storage_of_its_own(self, value: Node, output: Node) -> Node:
        pair = self._eager_layout_pair(value, output)
        re = self._make(torch.select, pair, -1, 0, before=output, modes_of=output)
        im = self._make(torch.select, pair, -1, 1, before=output, modes_of=output)
        return self._make(torch.complex, re, im, before=output, modes_of=output)

    def _output_view(self, value: Node, output: Node) -> Node:
        if self._is_new_in_eager(value):
            return self._complex_of(self._eager_layout_pair(value, output), False, False, before=output, modes_of=output)
        return self._view_of_input(fake_value(value), output) or self.complex_view(value, output, reader=False)

    def _view_of_input(self, eager: torch.Tensor, output: Node) -> Node | None:
        """A returned view of a graph input, made from the input itself with
        eager's size, strides and offset (static ones), and eager's lazy bits.

        Through the pair (``view_as_real``, a multi-output view such as
        ``chunk``, ``view_as_complex``) AOTAutograd and Inductor return a copy
        instead of a view in a training graph, so a later write to the input
        would not show in the output as it does in eager.
        """
        base = next((i for i in self.rw.inputs if shares_storage(eager, fake_value(i))), None)
        if base is None or not all(_static(v) for v in (eager.shape, eager.stride(), [eager.storage_offset()])):
            return None
        source, conj, neg = base, *bits_of(fake_value(base))
        if not fake_value(base).is_complex():
            return None  # a view of a real input keeps its own (real) view ops
        if not eager.is_complex():
            # A real view of a complex input (`.real`, `view_as_real`): from its storage's pairs.
            source, conj, neg = self._real_view(base, conj, neg, before=output, modes_of=output), False, False
        view = self._make(torch.as_strided, source, tuple(eager.shape), tuple(eager.stride()), eager.storage_offset(),
                          before=output, modes_of=output)
        want_conj, want_neg = bits_of(eager)
        if conj != want_conj:
            view = self._make(torch.conj, view, before=output, modes_of=output)
        if neg != want_neg:
            view = self._make(torch._neg_view, view, before=output, modes_of=output)
        return view

    # --------------------------------------------------------------- autocast
    @contextlib.contextmanager
    def autocast_off(self, node: Node):
        """Autocast off around a rule's nodes: eager's autocast leaves complex
        ops alone, but would cast the real GEMMs that replace them."""
        devices = sorted(self.rw.modes[node].autocast_devices) if node in self.rw.modes else []
        enters = []
        for device in devices:
            enter = self.graph.call_function(torch.amp.autocast_mode._enter_autocast, (device, None, False, None))
            self.rw._created(enter)
            enters.append(enter)
        yield
        for enter in reversed(enters):
            self.rw._created(self.graph.call_function(torch.amp.autocast_mode._exit_autocast, (enter,)))


def _has_tensor(value: Any) -> bool:
    return bool(_tensors(value))


def _tensors(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return [value] if isinstance(value, torch.Tensor) else []
