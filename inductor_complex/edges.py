"""Where complex values enter and leave the rewritten graph.

* Entry views: a complex value that stays complex (a graph input, a buffer,
  the output of an op without a rule) is read as ``view_as_real`` of its
  storage, made once, where the value is defined (so a first use under
  ``no_grad`` does not cut the gradient of later uses). An input carrying
  eager's lazy conj/neg bit is viewed without it and held with the bit.
* Bridges: a rewritten value needed by an op without a rule gets
  ``view_as_complex`` of its pair (with ``conj``/``_neg_view`` for lazy
  bits) right before that op, a view, so writes through it land.
* Outputs: a returned value has eager's aliasing, writability and strides. A
  view in eager is returned as a view; a new tensor in eager is returned with
  eager's strides and, where it does not require grad, as a tensor of its own
  (``torch.complex``), not a view of a hidden real buffer made under the
  ``no_grad`` an inference graph runs in (writing to that raises in eager code).
"""

from __future__ import annotations

import operator

import contextlib
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from torch.fx.node import map_arg
from torch.utils.checkpoint import CheckpointPolicy

from . import strides
from .graph_meta import fake_run, record_fake_value
from .mutation import shares_storage, written_args
from .targets import describe_target
from .values import NO_BITS, Held, bits_of, fake_value, is_complex_tensor, resolved_pair

if TYPE_CHECKING:
    from .rewrite import ComplexRewriter

Node = torch.fx.Node


class GraphLeftUnchanged(Exception):
    """The graph cannot be rewritten at all; ``node`` says why."""

    def __init__(self, node: Node, op: str, reason: str):
        super().__init__(reason)
        self.node, self.op, self.reason = node, op, reason


def _viewable(pair: torch.Tensor) -> bool:
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    strides = pair.stride()
    return (
        statically_known_true(strides[-1] == 1)
        and all(statically_known_true(s % 2 == 0) for s in strides[:-1])
        and statically_known_true(pair.storage_offset() % 2 == 0)
    )


def _whole_index(index) -> bool:
    """An index (of ``z[index] = v``) that selects the whole tensor: only ``...`` and ``:``."""
    return all(i is Ellipsis or i == slice(None) for i in (index if isinstance(index, tuple) else (index,)))


class Edges:
    """Entry views, bridges and outputs of one rewrite (see the module docstring)."""

    def __init__(self, rewriter: ComplexRewriter):
        self.rw = rewriter
        self.graph = rewriter.graph
        self.entries: dict[Node, Held] = {}  # complex value left complex → its entry view
        # value → a write with grad after which its next use gets a new entry view
        self.renewed_after: dict[Node, Node] = {}
        self.renewed: list[tuple[Node, Held]] = []  # (value, an entry view a newer one replaced)
        self.written_through: dict[Node, Node] = {}  # a complex view of a pair that a kept op writes → the value held

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
        """``view_as_real`` of a complex tensor's storage, its lazy bits dropped
        (a second conj/neg view undoes the first)."""
        source = self._with_bits_view(value, conj, neg, before=before, modes_of=modes_of)
        return self._make(torch.view_as_real, source, before=before, modes_of=modes_of)

    def _complex_of(self, pair: Node, conj: bool, neg: bool, *, before: Node, modes_of: Node) -> Node:
        view = self._make(torch.view_as_complex, pair, before=before, modes_of=modes_of)
        return self._with_bits_view(view, conj, neg, before=before, modes_of=modes_of)

    def _first_non_input(self) -> Node:
        for node in self.graph.nodes:
            if node.op not in ("placeholder", "get_attr"):
                return node
        raise AssertionError("a graph has an output node")

    # ----------------------------------------------------------- entry views
    def entry(self, value: Node) -> Held:
        """The held form of a complex value that stays complex (made once, a view)."""
        if value in self.entries and value not in self.renewed_after:
            return self.entries[value]
        if value in self.renewed_after:
            before = self.renewed_after[value].next
        else:
            before = self._first_non_input() if value.op in ("placeholder", "get_attr") else value.next
        if value.op == "get_attr" and self.rw.position.get(value, 0) > self.rw.position.get(before, 0):
            # Dynamo's graphs of optimizer steps read some state mid-graph, maybe
            # under no_grad; the view goes where the graph starts (see above),
            # and so does the read, which has no effect of its own.
            self.rw.moved.append((value, value.next))
            before.prepend(value)
        conj, neg = bits_of(fake_value(value))
        if self.rw.constants_as_pairs and value.op == "get_attr" and not self._written(value):
            # AOTInductor packages what the graph reads: the pair itself, not the
            # complex tensor and a view_as_real call in the package's C++.
            self.entries[value] = Held(self._pairs_constant(value, before))
            return self.entries[value]
        if self._written_later_with_grad(value, before) or self._needs_grad_at(value, before):
            # A view made under no_grad whose base is then written with grad
            # cannot be read any more (autograd refuses it); eager reads the
            # tensor itself. Made with grad, the view follows the write.
            # And a view of a tensor that requires grad, made again after a
            # write inside no_grad, would cut the gradient of every read with
            # grad further on; made with grad, it serves both kinds of read.
            self._set_grad_enabled(True, before=before)
            view = self._real_view(value, conj, neg, before=before, modes_of=value)
            self._set_grad_enabled(False, before=before)
        else:
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
        if value in self.entries:
            self.renewed.append((value, self.entries[value]))
        self.renewed_after.pop(value, None)
        self.entries[value] = Held(view, conj, neg)
        return self.entries[value]

    def _written(self, value: Node) -> bool:
        return any(isinstance(w, torch.Tensor) and shares_storage(w, fake_value(value)) for w in self.rw.written)

    def _pairs_constant(self, value: Node, before: Node) -> Node:
        """A constant of the module holding ``value``'s pairs (eager's values: lazy bits
        resolved), read where the graph starts. The complex attribute is left as it is."""
        tensor = _attribute(self.graph.owning_module, value.target)
        pairs = torch.view_as_real(tensor.detach().resolve_conj().resolve_neg()).clone()
        with self.graph.inserting_before(before):
            return self.rw.tracer.constant(pairs, f"{value.target.replace('.', '_')}_pairs").node

    def renew_entries_written_by(self, node: Node) -> None:
        """Entry views of what ``node`` writes with grad are made again after it.

        A ``view_as_real`` taken before its base came to require grad (a
        write with a tensor that requires it) refuses in-place writes from
        then on ("a leaf Variable that requires grad"), where eager writes the
        base itself; a view taken after the write takes them."""
        if not (self.rw.tracks_grad and self.rw.grad_enabled_at(node)):
            return
        written = [fake_value(arg) for arg in written_args(node) if isinstance(arg, Node)]
        for value in self.entries:
            if any(isinstance(w, torch.Tensor) and shares_storage(w, fake_value(value)) for w in written):
                self.renewed_after[value] = node  # (the old view stays its entry until then)

    def write_inputs_whole(self, op: Node, made: list[Node]) -> None:
        """A rule's write of the whole of a complex graph input, made on the
        input itself, as eager's op writes it, not through its entry view.

        AOTAutograd functionalizes a write through the view as a write into a
        view of the input, whose backward reads the input's strides under
        dynamic shapes. Saving the input for them, the min-cut partitioner
        then recomputes from it values read before the write (pytorch#197039):
        a backward that raises where eager's, and stock's direct write, run."""
        entries = {held.data: value for value, held in self.entries.items()
                   if value.op == "placeholder" and held.bits == NO_BITS and held.data.args[0] is value}
        for node in made:
            if node.users or not node.args or node.args[0] not in entries or node.kwargs:
                continue
            value = entries[node.args[0]]
            whole_setitem = node.target is operator.setitem and _whole_index(node.args[1]) and isinstance(node.args[2], Node)
            if node.op == "call_method" and node.target == "zero_" and len(node.args) == 1:
                self._make("zero_", value, before=node, modes_of=op, method=True)
            elif whole_setitem or (node.op == "call_method" and node.target == "copy_" and isinstance(node.args[1], Node)):
                source = node.args[2] if whole_setitem else node.args[1]
                if fake_value(source).dtype != fake_value(node.args[0]).dtype:
                    continue  # (view_as_complex takes the pair's own dtypes only)
                if not _viewable(fake_value(source)):
                    source = self._make("contiguous", source, before=node, modes_of=op, method=True)
                source = self._make(torch.view_as_complex, source, before=node, modes_of=op)
                self._make("copy_", value, source, *([] if whole_setitem else node.args[2:]), before=node, modes_of=op, method=True)
            else:
                continue
            self.rw.created.discard(node)
            self.graph.erase_node(node)

    def _needs_grad_at(self, value: Node, at: Node) -> bool:
        """``value`` requires grad, and a view of it made at ``at`` would be made under no_grad."""
        return (self.rw.tracks_grad and not self.rw.grad_enabled_at(at)
                and bool(getattr(fake_value(value), "requires_grad", False)))

    def _written_later_with_grad(self, value: Node, at: Node) -> bool:
        """``value``, defined under no_grad at ``at`` in a training graph, is
        written in place further on where grad is enabled."""
        if not self.rw.tracks_grad or self.rw.grad_enabled_at(at) or value.op in ("placeholder", "get_attr"):
            return False
        here = self.rw.position.get(value, -1)
        return any(
            self.rw.position.get(node, -1) > here and self.rw.grad_enabled_at(node)
            and any(isinstance(a, Node) and shares_storage(fake_value(a), fake_value(value)) for a in written_args(node))
            for node in self.graph.nodes)

    def report_entries(self) -> None:
        # Entry views made for a rule that then refused have no users: not reported.
        used = dict.fromkeys(value for value, held in [*self.renewed, *self.entries.items()] if held.data.users)
        for value in used:
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
            restrided = self.in_eager_layout(held.data, fake_value(value), pair=True, before=user, all_dims=False)
            if restrided is not held.data:
                return self._complex_of(restrided, False, False, before=user, modes_of=user)
        if not _viewable(pair):
            if writes or aliased or not reader:
                raise GraphLeftUnchanged(user, describe_target(user), "an op without a rule writes or views a value the rewrite holds in a layout complex views cannot take")
            copy = self._make("contiguous", held.data, before=user, modes_of=user, method=True)
            return self._complex_of(copy, held.conj, held.neg, before=user, modes_of=user)
        # Made right before the user, in its grad mode, as eager's op sees the
        # tensor there: a view shared from a no_grad region would refuse an
        # in-place write with grad that eager allows on a tensor of its own.
        if writes and self.rw.tracks_grad and self.rw.grad_enabled_at(user) and refuses_writes_with_grad(pair):
            # A rule made the pair itself as a view under no_grad (matmul's result
            # is a view of its GEMM's): no view of it can take this write. Stock can.
            raise GraphLeftUnchanged(user, describe_target(user), "an op without a rule writes with grad into a value a rule made as a view under no_grad")
        if writes and self.rw.tracks_grad and not self.rw.grad_enabled_at(user) and pair.requires_grad:
            # ... except a write under no_grad into a tensor that requires grad:
            # a view made there and written makes autograd refuse the tensor's
            # later uses, where eager's tensor was made with grad. So is the view.
            self._set_grad_enabled(True, before=user)
            view = self._complex_of(held.data, held.conj, held.neg, before=user, modes_of=value)
            self._set_grad_enabled(False, before=user)
            self.written_through[view] = value
            return view
        view = self._complex_of(held.data, held.conj, held.neg, before=user, modes_of=user)
        if writes:
            self.written_through[view] = value
        return view

    def in_eager_layout(self, node: Node, eager: torch.Tensor, *, pair: bool, before: Node, all_dims: bool) -> Node:
        """``node`` (a pair when ``pair``) copied into eager's layout where it
        differs: exactly with static strides, by dim order with symbolic ones."""
        value = fake_value(node)
        ours = strides.complex_view_strides(value) if pair else [strides.hint(s) for s in value.stride()]
        if ours is not None and None not in ours and not strides.layout_differs(ours, eager, all_dims=all_dims):
            return node
        extra = (2,) if pair else ()  # the pair dim stays innermost
        dense_permutation = self.rw.portable_forms and strides.dense_order(eager) is not None
        if strides.is_static([*eager.shape, *eager.stride()]) and not dense_permutation:
            size = (*eager.shape, *extra)
            stride = (*(2 * s for s in eager.stride()), 1) if pair else tuple(eager.stride())
            target = self._make(torch.empty_strided, size, stride, before=before, modes_of=before,
                                dtype=value.dtype, device=value.device)
            return self._make("copy_", target, node, before=before, modes_of=before, method=True)
        order = strides.dense_order(eager)
        if order is None:
            return node if ours is not None else self._make("contiguous", node, before=before, modes_of=before, method=True)
        order = [*order, *range(eager.dim(), eager.dim() + len(extra))]
        inverse = sorted(range(len(order)), key=order.__getitem__)
        permuted = self._make("permute", node, *order, before=before, modes_of=before, method=True)
        dense = self._make("contiguous", permuted, before=before, modes_of=before, method=True)
        laid_out = self._make("permute", dense, *inverse, before=before, modes_of=before, method=True)
        # A tensor of its own, not a view (a view made under no_grad would
        # refuse the in-place writes with grad eager allows on a new tensor).
        return self._make("clone", laid_out, before=before, modes_of=before, method=True)

    # --------------------------------------------------------------- outputs
    def bridge_outputs(self, output: Node) -> None:
        returned = list(dict.fromkeys(output.all_input_nodes))
        made = self._outputs_of_their_own(output, returned)
        bridged = False
        # The complex tensors the graph still holds as such (inputs, kept ops), by
        # eager's value: each one's maker (an in-place op returns the same value).
        # (Not an op whose work now lives elsewhere: an inlined composite's result
        # keeps the op's fake value, and must not be returned as the op itself.)
        kept_by_value: dict[int, Node] = {}
        replaced = set(self.rw.replaced)
        for node in self.graph.nodes:
            if node is output:
                break
            if node not in self.rw.held and node not in replaced and is_complex_tensor(fake_value(node)):
                kept_by_value.setdefault(id(fake_value(node)), node)

        def swap(arg):
            nonlocal bridged
            if arg in made:
                bridged = True
                return made[arg]
            if isinstance(arg, Node) and arg in self.rw.real_results:
                made[arg] = self._real_output(arg, output)
                bridged = bridged or made[arg] is not arg
                return made[arg]
            if isinstance(arg, Node) and self._written_kept_value(arg, returned):
                # AOTAutograd would return it rebuilt from its written pair, a view
                # that refuses the in-place writes with grad eager allows.
                made[arg] = self._storage_of_its_own(arg, output)
                bridged = True
                return made[arg]
            if not isinstance(arg, Node) or arg not in self.rw.held:
                return arg
            if id(fake_value(arg)) in kept_by_value:
                # Eager returned that tensor itself (a no-op cast, positive,
                # resolve_conj of an input or of a kept op's result): as that
                # tensor is returned.
                bridged = True
                return swap(kept_by_value[id(fake_value(arg))])
            if isinstance(self.rw.held[arg], list):
                raise GraphLeftUnchanged(output, "output", "a sequence of complex tensors used whole")
            bridged = True
            made[arg] = self._output_view(arg, output)
            return made[arg]

        def swap_as_in_eager(arg):
            if self.rw.tracks_grad and isinstance(arg, Node) and arg in self.rw.held and self._detached_alias(arg, returned):
                # AOTAutograd rebuilds it from the output that requires grad with
                # the view ops of our pair's complex view: a crash, or a view that
                # refuses the writes with grad eager's takes. Stock returns both.
                raise GraphLeftUnchanged(output, "output", "a returned detach() of a complex tensor that requires grad and shares storage with another output")
            new = swap(arg)
            if new is not arg and self.rw.tracks_grad:
                eager = self._eager_value(self.rw.real_results.get(arg, arg))
                if (refuses_writes_with_grad(eager) and not eager.requires_grad
                        and not refuses_writes_with_grad(fake_value(new))
                        and not any(shares_storage(eager, fake_value(i)) for i in self.rw.inputs)):  # (a copy)
                    new = made[arg] = self._refusing_view(new, eager, output)
            return new

        args, kwargs = map_arg((output.args, output.kwargs), swap_as_in_eager)
        if bridged:
            self.rw._rewire(output, args, kwargs)
            self.rw.report.add(output, "output", "exit_view")

    def _detached_alias(self, value: Node, returned: list[Node]) -> bool:
        """Eager's ``value`` is no view and needs no grad, but shares storage
        with another returned tensor that requires grad (``v, v.detach()``)."""
        eager = fake_value(value)
        if not isinstance(eager, torch.Tensor) or eager._base is not None or eager.requires_grad:
            return False
        return any(
            r is not value and isinstance(fake_value(r), torch.Tensor) and fake_value(r).requires_grad
            and shares_storage(fake_value(r), eager)
            for r in returned)

    def _written_kept_value(self, value: Node, returned: list[Node]) -> bool:
        """A new tensor requiring grad, kept complex, that a rule wrote in place
        through its entry view, returned alone (no other output shares it)."""
        if value in self.rw.held or not self.rw.tracks_grad or self._pair_of(value) is None:
            return False
        eager = fake_value(value)
        if not (isinstance(eager, torch.Tensor) and eager.requires_grad and self._is_new_in_eager(value)):
            return False
        return strides.dense_order(eager) is not None and not any(
            r is not value and fake_value(r) is not eager and shares_storage(fake_value(r), eager)
            for r in returned if isinstance(fake_value(r), torch.Tensor))  # (eager's same tensor is returned as this one)

    def _pair_of(self, value: Node) -> Held | None:
        """The held form of a returned complex value: its rewrite, or, for a
        value kept complex that a rule wrote in place through its entry view,
        that view (AOTAutograd would return it rebuilt from the written pair),
        and for a kept in-place op on a rewritten value, that value's pair."""
        held = self.rw.held.get(value)
        if isinstance(held, Held):
            return held
        if held is None and value in self.entries and any(shares_storage(fake_value(value), w) for w in self.rw.written):
            return self.entries[value]
        if held is None and value.op == "call_method" and written_args(value):
            # A kept in-place op (it returns what it writes) on a complex view
            # of a rewritten value's pair: the pair holds its result.
            source = self.written_through.get(written_args(value)[0])
            if isinstance(self.rw.held.get(source), Held):
                return self.rw.held[source]
        return None

    def _eager_value(self, value: Node) -> Any:
        """Eager's tensor for ``value``, as far as views go. Dynamo's fake value,
        except where that is a view of a base no node holds (an op's own
        intermediate, from a Python decomposition): then the op run again as
        eager dispatches it."""
        eager = fake_value(value)
        if not isinstance(eager, torch.Tensor) or eager._base is None or value.op not in ("call_function", "call_method"):
            return eager
        if written_args(value) or any(fake_value(n) is eager._base for n in self.graph.nodes):
            return eager
        grad = self.rw.tracks_grad and self.rw.grad_enabled_at(value)
        try:
            again = fake_run(value, self.rw.fake_mode, grad)
        except Exception:  # noqa: BLE001 - keep Dynamo's view of it
            return eager
        return again if isinstance(again, torch.Tensor) else eager

    def _is_new_in_eager(self, value: Node) -> bool:
        """A returned value eager holds as a tensor of its own (no view, no lazy bit)."""
        held, eager = self._pair_of(value), fake_value(value)
        return (
            held is not None and held.bits == NO_BITS and self._eager_value(value)._base is None
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
        # Eager's node for each returned one (a rule's real result stands for the node it replaced).
        eager_node = {r: self.rw.real_results.get(r, r) for r in returned}
        # Owners: returned new tensors, and the new tensors returned views are views of.
        by_value: dict[int, Node] = {}  # each tensor's maker (an in-place op returns the same value)
        for n in self.graph.nodes:
            if isinstance(fake_value(n), torch.Tensor):
                by_value.setdefault(id(fake_value(n)), n)
        bases = [by_value.get(id(fake_value(e)._base)) for e in eager_node.values() if isinstance(fake_value(e), torch.Tensor)]
        makers = [by_value.get(id(fake_value(e)), e) for e in eager_node.values()]
        for owner in dict.fromkeys([*makers, *(b for b in bases if b is not None)]):
            if owner in made or not self._is_new_in_eager(owner):
                continue
            # The outputs that are the owner itself (an in-place op on it returns it), and its views.
            itself = [r for r, e in eager_node.items() if fake_value(e) is fake_value(owner)]
            views = [r for r, e in eager_node.items()
                     if fake_value(e) is not fake_value(owner) and shares_storage(fake_value(e), fake_value(owner))]
            if fake_value(owner).requires_grad and len(itself) + len(views) < 2:
                # Returned once, it comes straight from generated code. Returned
                # more than once (or with its views), as views of one hidden pair
                # they could come back as views made inside the compiled function,
                # refusing the in-place writes with grad eager's take.
                continue
            if not itself and not any(fake_value(eager_node[v]).is_complex() for v in views):
                # Nobody sees the owner: real views of it alone (view_as_real(x * f),
                # rope's output) are real buffers already. Real views returned beside
                # complex ones are made from its storage too, so they share it as in eager.
                continue
            if any(bits_of(fake_value(eager_node[view])) != NO_BITS for view in views):
                if itself:
                    # Lazy views come back resolved (see _output_view), so they would
                    # not share the owner's storage; left as views of the hidden pair,
                    # the owner would refuse in-place writes with grad. Stock keeps both.
                    raise GraphLeftUnchanged(output, "output", "a new complex tensor returned with a lazy conj/neg view of it")
                continue  # lazy views of it come back resolved (see _output_view)
            only_view = views[0] if not itself and len(views) == 1 else None
            if (only_view is not None and getattr(self._pair_of(only_view), "bits", None) == NO_BITS
                    and strides.dense_order(fake_value(only_view)) is not None
                    and not refuses_writes_with_grad(fake_value(eager_node[only_view]))):
                # The one returned view of a new tensor the caller never sees:
                # a tensor of its own with the view's values and layout.
                made[only_view] = self._storage_of_its_own(only_view, output)
                continue
            chains = [self._view_chain(eager_node[view], owner) for view in views]
            if any(chain is None for chain in chains):
                continue  # left as views of the pair, aliasing kept
            made[owner] = self._storage_of_its_own(owner, output)
            for same in itself:
                made[same] = made[owner]
            for view, chain in zip(views, chains):
                made[view] = self._replay(chain, owner, made[owner], output)
        return made

    def _view_chain(self, view: Node, owner: Node) -> list[tuple[Node, tuple]] | None:
        """The view ops eager applied to ``owner`` to make ``view`` (each node
        with its original arguments), or None."""
        original = {}
        for node, args, _ in self.rw.rewired:
            original.setdefault(node, args)
        chain, node = [], view
        while node is not owner:
            args = original.get(node, node.args)
            if node.op not in ("call_function", "call_method") or not args or not isinstance(args[0], Node):
                return None
            if fake_value(node) is fake_value(args[0]) and written_args(node):
                node = args[0]  # an in-place op hands back the tensor it wrote: no view
                continue
            if node.kwargs or written_args(node) or any(isinstance(a, Node) and _has_tensor(fake_value(a)) for a in args[1:]):
                return None  # (symbolic sizes are fine: defined before the view, as its other args)
            if not any(shares_storage(a, b) for a in _tensors(fake_value(node)) for b in _tensors(fake_value(args[0]))):
                return None  # (a multi-output view such as unbind gives a list of views)
            chain.append((node, args))
            node = args[0]
        return chain[::-1]

    def _replay(self, chain: list[tuple[Node, tuple]], owner: Node, made_owner: Node, at: Node) -> Node:
        """Eager's view ops of ``chain`` again, on ``made_owner`` (standing for ``owner``), before ``at``."""
        current, here = made_owner, self.rw.grad_enabled_at(at)
        mode = here
        for node, args in chain:
            # Each in eager's grad mode for it: a view made under no_grad has
            # no grad_fn and refuses in-place writes with grad.
            grad = self.rw.grad_enabled_at(node) and self.rw.tracks_grad
            if self.rw.tracks_grad and grad != mode:
                self._set_grad_enabled(grad, before=at)
                mode = grad
            with self.graph.inserting_before(at):
                copy = self.graph.create_node(node.op, node.target, (current, *args[1:]), {})
            self.rw.created.add(copy)
            record_fake_value(copy, node, self.rw.fake_mode, self.rw.meta_key, grad)
            current = copy
        if mode != here:
            self._set_grad_enabled(here, before=at)
        return current

    def _refusing_view(self, value: Node, eager: torch.Tensor, output: Node) -> Node:
        """A view of ``value``'s values made under no_grad, as eager's output
        is: it refuses in-place writes with grad. Its base is a tensor with a
        leading dim of size 1 in eager's layout, so Inductor cannot hand the
        base back for the view (it would for a view with the base's own layout),
        nor copy the view into the strides it promised."""
        order = strides.dense_order(eager)
        if order is None:
            base = self._make("unsqueeze", value, 0, before=output, modes_of=output, method=True)
        else:
            sizes = [size if isinstance(size, int) else self._make("size", value, d, before=output, modes_of=output, method=True)
                     for d, size in enumerate(eager.shape)]
            base = self._make(torch.empty_permuted, [1, *sizes], [0, *(d + 1 for d in order)],
                              dtype=eager.dtype, device=eager.device, before=output, modes_of=output)
            source = self._make("unsqueeze", value, 0, before=output, modes_of=output, method=True)
            self._make("copy_", base, source, before=output, modes_of=output, method=True)
        here = self.rw.grad_enabled_at(output)
        if here:
            self._set_grad_enabled(False, before=output)
        with self.graph.inserting_before(output):
            view = self.graph.call_function(torch.select, (base, 0, 0))
        self.rw.created.add(view)
        record_fake_value(view, output, self.rw.fake_mode, self.rw.meta_key, False)
        if here:
            self._set_grad_enabled(True, before=output)
        return view

    def _set_grad_enabled(self, enabled: bool, *, before: Node) -> None:
        """Dynamo's own record of a grad-mode switch (no fake value: it computes nothing)."""
        with self.graph.inserting_before(before):
            self.rw.created.add(self.graph.call_function(torch._C._set_grad_enabled, (enabled,)))

    def _eager_layout_pair(self, value: Node, output: Node) -> Node:
        """The value's pair, copied into eager's strides where they differ."""
        return self.in_eager_layout(self._pair_of(value).data, fake_value(value), pair=True, before=output, all_dims=True)

    def _real_output(self, node: Node, output: Node) -> Node:
        """A real result of a rule, returned: a view of an input as in eager, or
        with eager's strides (the rule may have built it in another layout)."""
        original = self.rw.real_results[node]
        eager = fake_value(original)
        if any(shares_storage(eager, fake_value(i)) and fake_value(i).is_complex() for i in self.rw.inputs):
            return self._view_of_input(eager, original) or node  # a real view of a complex input
        if eager._base is not None:
            return node  # a view of an intermediate: its strides come with it
        return self.in_eager_layout(node, eager, pair=False, before=output, all_dims=True)

    def _storage_of_its_own(self, value: Node, output: Node) -> Node:
        return self._storage_of_its_own_from(self._eager_layout_pair(value, output), output)

    def _storage_of_its_own_from(self, pair: Node, output: Node) -> Node:
        re = self._make(torch.select, pair, -1, 0, before=output, modes_of=output)
        im = self._make(torch.select, pair, -1, 1, before=output, modes_of=output)
        return self._make(torch.complex, re, im, before=output, modes_of=output)

    def _output_view(self, value: Node, output: Node) -> Node:
        if self._is_new_in_eager(value):
            return self._complex_of(self._eager_layout_pair(value, output), False, False, before=output, modes_of=output)
        input_view = self._view_of_input(fake_value(value), value)
        if input_view is not None:
            return input_view
        held = self.rw.held[value]
        of_an_input = any(shares_storage(fake_value(value), fake_value(i)) for i in self.rw.inputs)
        if held.bits != NO_BITS and not of_an_input:
            eager = fake_value(value)
            if any(r is not value and shares_storage(fake_value(self.rw.real_results.get(r, r)), eager)
                   for r in output.all_input_nodes):
                # Resolved, it would share storage with no other output, so a write
                # through one would not show in the other. Stock keeps them all.
                raise GraphLeftUnchanged(output, "output", "a lazy conj/neg view of a new tensor returned with another output sharing its storage")
            # A lazy conj/neg view of a computed tensor comes back resolved:
            # Inductor copies a returned conj view into the strides it promised
            # without applying the bit (a silently wrong number). Eager's values,
            # without eager's is_conj().
            values = self.in_eager_layout(self._resolved(held, before=output), eager, pair=True, before=output, all_dims=True)
            if eager.requires_grad or not self.rw.tracks_grad or strides.dense_order(eager) is None:
                return self._make(torch.view_as_complex, values, before=output, modes_of=output)
            return self._storage_of_its_own_from(values, output)
        return self.complex_view(value, output, reader=False)

    def _resolved(self, held: Held, *, before: Node) -> Node:
        """The pair of the values a lazily conjugated/negated pair stands for, in real math."""
        tracer = self.rw.tracer
        tracer.origin, tracer.grad_enabled = before, self.rw.tracks_grad and self.rw.grad_enabled_at(before)
        with self.graph.inserting_before(before):
            return resolved_pair(torch.fx.Proxy(held.data, tracer), held.conj, held.neg).node

    def _with_bits_view(self, view: Node, conj: bool, neg: bool, *, before: Node, modes_of: Node) -> Node:
        """``view`` with lazy conj/neg views on top (zero copy)."""
        if conj:
            view = self._make(torch.conj, view, before=before, modes_of=modes_of)
        if neg:
            view = self._make(torch._neg_view, view, before=before, modes_of=modes_of)
        return view

    def _view_of_input(self, eager: torch.Tensor, at: Node) -> Node | None:
        """A returned view of a graph input, made from the input itself with
        eager's size, strides and offset (static ones), eager's lazy bits, and
        made where eager made it (``at``), so under its grad mode.

        Through the pair (``view_as_real``, a multi-output view such as
        ``chunk``, ``view_as_complex``) AOTAutograd and Inductor return a copy
        instead of a view in a training graph, so a later write to the input
        would not show in the output as it does in eager.
        """
        base = next((i for i in self.rw.inputs if shares_storage(eager, fake_value(i))), None)
        if base is None or not fake_value(base).is_complex():
            return None  # a view of a real input keeps its own (real) view ops
        if self.rw.symbolic and any(shares_storage(fake_value(base), w) for w in self.rw.written):
            # With symbolic shapes AOTAutograd rebuilds such a view from the input
            # with the metadata of our real view of it, out of bounds (stock is fine).
            raise GraphLeftUnchanged(at, describe_target(at), "a returned view of a complex input the graph writes, with dynamic shapes")
        chain = self._view_chain(at, base)
        if chain is not None:
            # Eager's own view ops on the input: its views' creation (a
            # multi-output view refuses in-place writes with grad) included.
            return self._replay(chain, base, base, at)
        if not strides.is_static([*eager.shape, *eager.stride(), eager.storage_offset()]):
            return None
        source, conj, neg = base, *bits_of(fake_value(base))
        if not eager.is_complex():
            # A real view of a complex input (`.real`, `view_as_real`): from its storage's pairs.
            source, conj, neg = self._real_view(base, conj, neg, before=at, modes_of=at), False, False
        view = self._make(torch.as_strided, source, tuple(eager.shape), tuple(eager.stride()), eager.storage_offset(),
                          before=at, modes_of=at)
        want_conj, want_neg = bits_of(eager)
        view = self._with_bits_view(view, conj != want_conj, neg != want_neg, before=at, modes_of=at)
        if fake_value(view).requires_grad and not eager.requires_grad:
            view = self._make("detach", view, before=at, modes_of=at, method=True)  # eager detached it
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


def refuses_writes_with_grad(value: Any) -> bool:
    """Whether eager's tensor is a view that refuses in-place writes with grad:
    one made under no_grad or inference mode, by a multi-output op
    (``unbind``, ``split``) or in a custom Function. Fake tensors carry it."""
    if not isinstance(value, torch.Tensor) or not value._is_view():
        return False
    return torch._C._autograd._get_creation_meta(value) != torch._C._autograd.CreationMeta.DEFAULT


def _has_tensor(value: Any) -> bool:
    return bool(_tensors(value))


def _tensors(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return [value] if isinstance(value, torch.Tensor) else []


def _attribute(module: torch.nn.Module, target: str):
    for name in target.split("."):
        module = getattr(module, name)
    return module
