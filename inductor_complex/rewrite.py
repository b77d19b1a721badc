"""The complex-to-real rewrite: one forward walk over an FX graph.

The heart is ``held``: complex value (an original node) → :class:`Held`, the
real-pair node that now holds it (with eager's lazy conj/neg bits). Rules read
their operands from it and write their results into it, so a chain of complex
ops never returns to complex in between. Complex values that stay complex
(graph inputs, constants, outputs of ops without a rule) are read through an
entry view (:mod:`.edges`); a rewritten value needed by an op without a rule,
or by the graph output, gets a complex view of its pair. Both are views, so
mutations land.

Exactness is checked per node against eager's own fake result: shape, dtype,
device, lazy bits, whether it shares storage with each operand and whether it
requires grad. A node that fails any check is kept as it was.
"""

from __future__ import annotations

import collections
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.fx.node import map_aggregate, map_arg

from . import composites, lone_products, strides
from .eager_kernels import eager_blas_product, faster_in_eager
from .edges import Edges, GraphLeftUnchanged
from .graph_meta import FakeRecordingTracer, copy_traced, graph_fake_mode, meta_key, record_fake_value
from .graph_modes import ambient_modes, modes_by_node
from .mutation import mutates, mutates_metadata, shares_storage, storage_key, written_args
from .report import Report
from .rotary.table_edges import complex_table_read
from .rules import DFT_RULES, LAZY_BITS, RULES, Unsupported, eager_derivative
from .rules.common import tracing_into
from .rules.registry import toggle_conj, toggle_neg
from .targets import describe_target, normalize
from .values import NO_BITS, Held, Pair, bits_of, fake_value, holds_complex, is_complex_tensor, real_dtype, resolved_pair

Node = torch.fx.Node

__all__ = ["ComplexRewriter", "GraphLeftUnchanged", "graph_has_complex"]


def graph_has_complex(graph: torch.fx.Graph) -> bool:
    return any(holds_complex(fake_value(node)) for node in graph.nodes)


def _same_size(a, b) -> bool:
    return len(a) == len(b) and all(statically_known_true(x == y) for x, y in zip(a, b))


def _leaves(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _is_empty_complex(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_complex() and statically_known_true(value.numel() == 0)


class ComplexRewriter:
    """Rewrites one graph in place. Use :meth:`run`; see the module docstring."""

    def __init__(self, graph: torch.fx.Graph, report: Report | None = None, *,
                 keep_writes: bool = False, keep_returned: bool = False, complex_blas_on_cpu: bool | None = False,
                 scalar_pair_loops_on_cpu: bool = False, keep_lone_products: str | None = None,
                 backward_rewritten: bool = False, real_ffts: bool = False, portable_forms: bool = False,
                 constants_as_pairs: bool = False):
        self.graph = graph
        # Complex constants the graph reads (get_attr) and never writes become
        # constants holding their pairs: AOTInductor's frozen packages.
        self.constants_as_pairs = constants_as_pairs
        # Forms for runtimes beyond Inductor (exported programs): eager's strides,
        # where a value must take them, made with permute and clone rather than
        # empty_strided and copy_ (their runtimes hold dim orders, not strides;
        # ExecuTorch has no empty_strided), and pair parts joined by cat (values.py).
        self.portable_forms = portable_forms
        # FFTs become products with real DFT bases (rules/fft.py) only where asked.
        self.real_ffts = real_ffts
        # Complex matrix products on CPU go to eager's complex BLAS on the pairs
        # (measured faster, see :mod:`.eager_kernels`): all (True), the large
        # ones (None) or none (False); torch.compile's graphs only.
        self.complex_blas_on_cpu = complex_blas_on_cpu
        # In a functional graph Inductor lowers as it is, the only writes are
        # the epilogue's copy_ into mutated inputs, which its scheduler takes
        # only into the input itself, not into a view of it.
        self.keep_writes = keep_writes
        # AOTAutograd decided how each output of a forward graph aliases what
        # (and so how the caller's tensor is rebuilt, its strides and its
        # writability) before the post-grad hook runs: what the graph returns,
        # and the views it is taken through, stay as they are.
        self.keep_returned = keep_returned
        self.report = report or Report()
        self.meta_key = meta_key(graph)
        self.fake_mode = graph_fake_mode(graph)
        # Dynamo's graph carries eager's grad modes and requires_grad; an aten
        # graph from torch.export is an inference graph.
        self.tracks_grad = self.meta_key == "example_value"
        self.modes = modes_by_node(graph, ambient_modes(self.tracks_grad))
        self.tracer = FakeRecordingTracer(graph, self.fake_mode, self.meta_key)
        self.tracer.on_create = self._created
        self.tracer.portable_forms = portable_forms
        # Read by rules whose best CPU form depends on whether Inductor's pair loops
        # there are scalar (planes off) or vectorized in planes (rules/arith.py).
        self.tracer.scalar_pair_loops_on_cpu = scalar_pair_loops_on_cpu
        # Read by rules that may leave their derivative's complex math to the
        # backward graph, which the post-grad companion then rewrites (rules/eager_derivative.py).
        self.tracer.backward_rewritten = backward_rewritten
        # A complex product of graph inputs that is only returned stays eager's
        # where that measured faster (which ones: :mod:`.lone_products`); torch.compile's graphs only.
        self.keep_lone_products = keep_lone_products
        self.held: dict[Node, Any] = {}  # rewritten complex value → Held (or a list: Held, or a real result's node)
        self.real_results: dict[Node, Node] = {}  # a rule's real tensor result → the node it replaced
        self.edges = Edges(self)
        self.replaced: list[Node] = []  # original nodes whose work now lives elsewhere
        self.created: set[Node] = set()
        self.attempt: list[Node] = []  # nodes the rule being tried has made (erased if it fails)
        self.rewired: list[tuple[Node, tuple, dict]] = []  # (node, old args, old kwargs), for undo
        self.relaid: list[tuple[Node, Any]] = []  # (node, Dynamo's fake value), for undo
        self.moved: list[tuple[Node, Node]] = []  # (node moved earlier, the node it preceded), for undo

    # ------------------------------------------------------------------ walk
    def run(self) -> Report:
        if self.fake_mode is None or not graph_has_complex(self.graph):
            return self.report
        self._study_graph()
        for node in list(self.graph.nodes):
            if node.op in ("call_function", "call_method"):
                if self._involves_complex(node):
                    self._visit(node)
                    self.edges.renew_entries_written_by(node)
            elif node.op == "output":
                self.edges.bridge_outputs(node)
        self.graph.lint()
        self._clean()
        return self.report

    def undo(self) -> None:
        """Put the graph back as it was before :meth:`run` (which must not have finished)."""
        for node, args, kwargs in reversed(self.rewired):
            node.args, node.kwargs = args, kwargs
        for node, value in self.relaid:
            node.meta[self.meta_key] = value
        for node, successor in reversed(self.moved):
            successor.prepend(node)
        created = [node for node in self.graph.nodes if node in self.created]
        for node in created:  # (a node made at the graph's end may feed one made earlier)
            node.args, node.kwargs = (), {}
        for node in created:
            self.graph.erase_node(node)

    def _study_graph(self) -> None:
        """Facts about the graph as it came, read once (the rules add writes of their own)."""
        for node in self.graph.nodes:
            if mutates_metadata(node):
                # Dynamo's fake value of a tensor is its final metadata: before
                # `y.t_()` the graph says y is already transposed, and a pair
                # held for y would not follow the op. Stock handles it.
                raise GraphLeftUnchanged(node, describe_target(node), "an in-place op changes a tensor's shape or strides")
            value = fake_value(node)
            if node.op == "placeholder" and node.name.startswith("tangents") and is_complex_tensor(value) \
                    and bits_of(value) != NO_BITS:
                # AOTAutograd traces a tangent like its forward output (a conj view
                # here), but the gradient autograd passes at run time need not carry
                # the bit; the rewrite reads the storage by the traced bit. Stock's
                # ops read the bit at run time.
                raise GraphLeftUnchanged(node, "placeholder", "a tangent traced with the conj or neg bit, which the run-time gradient may lack")
            if _is_empty_complex(value) and value.requires_grad:
                # An empty gradient can come with any strides (reflection_pad's
                # backward gives one), and view_as_complex refuses them in
                # view_as_real's backward. Stock runs it. (An empty value that no
                # gradient reaches is rewritten, or kept by the rules' own refusals,
                # e.g. prod over an empty dim; aten graphs have no autograd.)
                raise GraphLeftUnchanged(node, describe_target(node), "an empty complex tensor")
        self.made_into_forward_outputs = _made_into_forward_outputs(self.graph) if self.keep_returned else set()
        self._take_eager_layouts()
        values = [fake_value(node) for node in self.graph.nodes if node.op in ("placeholder", "get_attr")]
        self.symbolic = any(
            isinstance(v, torch.SymInt) or (isinstance(v, torch.Tensor) and not all(isinstance(n, int) for n in v.shape))
            for v in values
        )
        self.inputs = [node for node in self.graph.nodes if node.op in ("placeholder", "get_attr")]
        trains = self.tracks_grad and any(
            isinstance(v, torch.Tensor) and v.requires_grad for v in values
        )
        written = [fake_value(arg) for node in self.graph.nodes for arg in written_args(node) if isinstance(arg, Node)]
        has_writes = bool(written)
        for node in self.inputs:
            value = fake_value(node)
            if bits_of(value) != NO_BITS and any(shares_storage(value, w) for w in written):
                # Functionalization cannot replay our view of the storage without the
                # bit after a write into the input; stock compile handles it.
                raise GraphLeftUnchanged(node, "input", "the graph writes into an input that carries the conj or neg bit")
        # An in-place write updates the written tensor's fake value, which then
        # shows its final requires_grad (a zeros buffer written with a value
        # that requires grad requires grad from its creation on, in the graph).
        self.written = written
        # Where the graph writes into its inputs: (position of the write, the input written).
        self.position = {node: index for index, node in enumerate(self.graph.nodes)}
        self.input_writes = [
            (self.position[node], fake_value(i))
            for node in self.graph.nodes for arg in written_args(node) if isinstance(arg, Node)
            for i in self.inputs if shares_storage(fake_value(arg), fake_value(i))
        ]
        # Complex values the graph returns beside another output sharing their
        # storage. A rule's write through such a value's real view would bring
        # it back from AOTAutograd as a view of the written pair, made inside
        # the compiled function, where eager's takes in-place writes with grad.
        output = next(node for node in self.graph.nodes if node.op == "output")
        # (Grouped by storage: a forward graph after autograd returns every saved activation.)
        returned = [n for n in output.all_input_nodes if isinstance(fake_value(n), torch.Tensor)]
        by_storage = collections.Counter(storage_key(fake_value(n)) for n in returned)
        self.returned_with_alias = {n for n in returned if by_storage[storage_key(fake_value(n))] > 1}
        # Autograd saves what our real math needs, not what eager's complex
        # formula saves; a later write to it would break a backward eager can
        # run. Reads get a clone (free once functionalized) where anything is written.
        self.clone_reads = trains and has_writes
        # See Edges.entry: entry views of inputs that require grad are marked
        # for recomputation, which the partitioner refuses in graphs that write.
        self.recompute_entries = trains and not has_writes

    def _created(self, node: Node) -> None:
        self.created.add(node)
        self.attempt.append(node)

    def _rewire(self, node: Node, args: tuple, kwargs: dict) -> None:
        self.rewired.append((node, node.args, node.kwargs))
        node.args, node.kwargs = args, kwargs

    def _involves_complex(self, node: Node) -> bool:
        if holds_complex(fake_value(node)):
            return True
        table = complex_table_read(node)
        if table is not None and table not in self.held:
            return False  # the CPU rotary kernel reads its complex table as it is
        found = False

        def look(arg):
            nonlocal found
            found = found or arg in self.held or holds_complex(fake_value(arg))
            return arg

        map_arg((node.args, node.kwargs), look)
        return found

    def grad_enabled_at(self, node: Node) -> bool:
        """Whether grad is on where ``node`` runs. A node the rewrite made runs
        in the modes of the first graph node after it that was there before
        (a mode-setting node's are those before it); its own are unknown."""
        while node not in self.modes:
            if node.op == "root":  # past the output: not in the graph
                return False
            node = node.next
        return self.modes[node].grad_enabled

    def _visit(self, node: Node) -> None:
        op = describe_target(node)
        call = normalize(node)
        if call and call.name == "getitem" and isinstance(call.args[0], Node) and isinstance(self.held.get(call.args[0]), list):
            if isinstance(call.args[1], int):  # an element of a rewritten split/unbind/chunk/var_mean
                item = self.held[call.args[0]][call.args[1]]
                if isinstance(item, Held):
                    self.held[node] = item
                    self.replaced.append(node)
                else:  # a real result (var_mean's variance): the node that computes it
                    self._record(node, torch.fx.Proxy(item, self.tracer))
                self.report.add(node, op, "rewritten")
                return
        if node.meta.get("unbacked_bindings"):
            # (repeat_interleave by a tensor, nonzero, ...) Re-made on the pair, the op would
            # allocate a second size symbol that nothing binds, and tracing fails.
            self._keep(node, op, "a data-dependent size: rewritten, it would make a size symbol the graph does not bind")
            return
        rule = RULES.get(call.name) if call else None
        if rule is None and call and self.real_ffts:
            rule = DFT_RULES.get(call.name)
        if self.keep_writes and written_args(node):
            self._keep(node, op, "an in-place write in a functional aten graph (Inductor's copy_ into a mutated input)")
            return
        if rule is None:
            if not written_args(node) and self._inline_composite(node, op):
                return
            self._keep(node, op, f"no rule for {call.name if call else op}")
            return
        if node in self.made_into_forward_outputs:
            self._keep(node, op, "returned by a forward graph (its aliasing was fixed before this hook)")
            return
        if self.keep_lone_products and (why := lone_products.faster_in_eager(call.name, node, self.keep_lone_products)):
            self._keep(node, op, why)
            return
        faster = None
        if self.complex_blas_on_cpu is not False:
            faster = faster_in_eager(call.name, node, any_size=self.complex_blas_on_cpu is True)
        if faster:
            rule = eager_blas_product
        try:
            self._apply(node, call, rule)
        except Unsupported as why:
            self._keep(node, op, str(why))
            return
        self.report.add(node, op, "rewritten", faster or "",
                        emitted=sum(eager_derivative.nodes_compiled(n) for n in self.attempt))

    def _inline_composite(self, node: Node, op: str) -> bool:
        """Put the aten ops eager decomposes ``node`` into in its place and
        rewrite those (see :mod:`.composites`); False when there are none."""
        grad = self.grad_enabled_at(node) and self.tracks_grad
        traced = composites.decomposition(node, self.fake_mode, grad)
        if traced is None:
            return False
        made, result = copy_traced(self.graph, node, traced, keep_values=False)
        for new in made:
            self._created(new)
        try:
            for new in made:
                self.modes[new], self.position[new] = self.modes[node], self.position.get(node, -1)
                record_fake_value(new, node, self.fake_mode, self.meta_key, grad)
            if not isinstance(result, Node) or not _same_kind(fake_value(result), fake_value(node)):
                raise ValueError("the decomposition's result is not the op's")
            old, new_value = fake_value(node), fake_value(result)
            if isinstance(old, torch.Tensor) and all(
                    statically_known_true(a == b) for a, b in zip(new_value.stride(), old.stride())):
                # The result stands for the op's value: it keeps that fake value, so
                # views Dynamo made of it (``v.real``) still share its storage, and
                # a write through them is seen as a write into it (not a read
                # to copy, which silently dropped the write).
                result.meta[self.meta_key] = old
        except Exception:  # noqa: BLE001 - keep the op as it was
            for new in reversed(made):
                self.created.discard(new)
                self.graph.erase_node(new)
            return False
        for user in list(node.users):
            self._rewire(user, *map_arg((user.args, user.kwargs), lambda a: result if a is node else a))
        self.replaced.append(node)
        self.report.add(node, op, "inlined", "eager runs it as the aten ops below")
        for new in made:
            if new.op == "call_function" and self._involves_complex(new):
                self._visit(new)
        return True

    def _take_eager_layouts(self) -> None:
        """Where eager's kernel lays a result out unlike the fake value says
        (``strides.eager_result_layout``), the graph takes eager's layout: the
        rules, the layout copies and the outputs all follow it."""
        for node in self.graph.nodes:
            if node.op not in ("call_function", "call_method") or not self._involves_complex(node):
                continue
            call = normalize(node)
            if call is None or not call.args or not isinstance(call.args[0], Node):
                continue
            value = fake_value(node)
            eager = strides.eager_result_layout(call.name, fake_value(call.args[0]), value)
            if eager is not value:
                self.relaid.append((node, value))
                node.meta[self.meta_key] = eager
        if self.relaid:
            self._follow_eager_layouts({node for node, _ in self.relaid})

    def _follow_eager_layouts(self, relaid: set[Node]) -> None:
        """Fake values computed again below relaid nodes: eager's strides of
        ``angle(x.mT) * x.mT`` follow the contiguous angle, not the meta one.
        A node whose value comes out otherwise (other shape or dtype) keeps
        Dynamo's, and so do those below it. The re-run does not apply autocast:
        where autocast changes an op, it changes the dtype (it casts the
        inputs, keeping their layout), so such a node keeps Dynamo's value;
        where the dtype agrees, autocast left the op alone and so does the re-run."""
        changed = set(relaid)
        for node in self.graph.nodes:
            if node in changed or node.op not in ("call_function", "call_method"):
                continue
            if not any(arg in changed for arg in node.all_input_nodes):
                continue
            old = fake_value(node)
            try:
                record_fake_value(node, None, self.fake_mode, self.meta_key, self.grad_enabled_at(node) and self.tracks_grad)
            except Exception:
                node.meta[self.meta_key] = old
                continue
            if not _same_kind(fake_value(node), old):
                node.meta[self.meta_key] = old
                continue
            self.relaid.append((node, old))
            changed.add(node)

    # --------------------------------------------------------------- rewrite
    def _apply(self, node: Node, call, rule) -> None:
        expected = fake_value(node)
        if isinstance(expected, (list, tuple)) and any(user.target is not operator.getitem for user in node.users):
            raise Unsupported("a sequence of complex tensors used whole")
        result_bits = self._lazy_path(node, call, expected)
        written = {id(arg) for arg in written_args(node)}
        for arg in written_args(node):
            if isinstance(arg, Node) and self._holding(arg, create=False).bits != NO_BITS:
                # A copy of the value would take the write; eager writes the storage.
                raise Unsupported("writes through a lazy conj/neg view (kept, so the write reaches the storage)")
        seen: list[tuple[Any, Any]] = []  # (eager's operand, what the rule got for it), for the alias check

        def wrap(arg):
            return self._operand(arg, expected, raw=result_bits is not None, written=id(arg) in written, seen=seen)

        self.attempt = []
        self.tracer.origin, self.tracer.grad_enabled = node, self.grad_enabled_at(node) and self.tracks_grad
        try:
            with self.graph.inserting_before(node), tracing_into(self.tracer):
                args, kwargs = map_aggregate((call.args, call.kwargs), wrap)
                with self.edges.autocast_off(node):
                    result = rule(*args, **kwargs, out=expected)
                result = self._as_eager_view(node, result, expected)
                if result_bits is not None:
                    result = self._with_bits(result, result_bits)
            self._check(result, expected, seen)
            result = self._in_eager_layout(node, result, expected, seen)
        except Exception as error:
            # Only what this rule made: an entry view made meanwhile stays, shared.
            for new in reversed(self.attempt):
                self.created.discard(new)
                self.graph.erase_node(new)
            if isinstance(error, Unsupported):
                raise
            raise Unsupported(f"rule {rule.__name__} failed: {type(error).__name__}: {error}") from error
        self.edges.write_inputs_whole(node, self.attempt)
        self._record(node, result)

    def _lazy_path(self, node: Node, call, expected):
        """The bits the result keeps when the op passes eager's lazy bits on, else None.

        An op listed in LAZY_BITS runs on the storage's pair of its one complex
        operand when eager's result has the bits it predicts; otherwise every
        operand is read with its bits applied, and eager's result must carry none.
        """
        operands = [a for a in node.all_input_nodes if a in self.held or is_complex_tensor(fake_value(a))]
        predict = LAZY_BITS.get(call.name)
        wanted = [bits_of(v) for v in _leaves(expected)]
        if predict is not None and len(operands) == 1 and not isinstance(self.held.get(operands[0]), list):
            bits = predict(*self._holding(operands[0], create=False).bits)
            if all(w == bits for w in wanted):
                return bits
        if any(w != NO_BITS for w in wanted):
            raise Unsupported("eager's result is a lazy conj/neg view this op cannot keep")
        if predict in (toggle_conj, toggle_neg):
            # Its rule only moves data: the bit it sets is the whole op.
            raise Unsupported("eager's result lacks the conj/neg bit this op sets")
        return None

    def _holding(self, value: Node, create: bool = True) -> Held:
        """How ``value`` is held: its rewrite, or its entry view (made when ``create``)."""
        held = self.held.get(value)
        if isinstance(held, Held):
            return held
        if held is None and is_complex_tensor(fake_value(value)):
            if create:
                return self.edges.entry(value)
            return Held(value, *bits_of(fake_value(value)))  # only its bits are read
        return Held(value)

    def _operand(self, arg: Any, expected: Any, *, raw: bool, written: bool, seen: list) -> Any:
        """A node argument as a rule sees it: Pair, list of Pair, or proxy."""
        if not isinstance(arg, Node):
            return arg
        value = fake_value(arg)
        held = self.held.get(arg)
        if isinstance(held, list):
            if not all(isinstance(h, Held) for h in held):
                raise Unsupported("a sequence of real and complex results used whole")
            return [self._as_pair(h, v, raw=raw) for h, v in zip(held, value)]
        if held is not None or is_complex_tensor(value):
            held = self._holding(arg)
            pair = self._as_pair(held, value, raw=raw)
            if written and arg not in self.held and arg in self.returned_with_alias and arg.op != "placeholder":
                raise Unsupported("writes into a kept complex value the graph returns beside a view of it")
            if self.clone_reads and not written and not shares_storage(expected, value):
                here = self.position.get(self.tracer.origin, -1)
                if any(at > here and shares_storage(value, i) for at, i in self.input_writes):
                    # Inductor saves such a read for backward as the input itself
                    # (its clone removed), which the graph's write then changes.
                    raise Unsupported("reads a graph input that the training graph writes afterwards")
                pair = pair.with_data(pair.data.clone())
            seen.append((value, fake_value(held.data)))  # the storage the operand is a view of
            return pair
        seen.append((value, value))
        return torch.fx.Proxy(arg, self.tracer)

    def _as_pair(self, held: Held, value: torch.Tensor, *, raw: bool) -> Pair:
        data = torch.fx.Proxy(held.data, self.tracer)
        if not raw and held.bits != NO_BITS:
            data = resolved_pair(data, held.conj, held.neg)
        return Pair(data, value.dtype, value.ndim)

    def _as_eager_view(self, node: Node, result: Any, expected: Any) -> Any:
        """A view eager makes under ``no_grad`` cuts the gradient to its base
        (it even reports requires_grad). A rule that returns an operand's own
        pair node (``view_as_complex``, ``conj``) must then return a view of it
        made here, under the same ``no_grad``, as eager's is."""
        if not self.tracks_grad or self.grad_enabled_at(node) or not isinstance(expected, torch.Tensor):
            return result
        if any(expected is fake_value(arg) for arg in node.all_input_nodes):
            return result  # eager returned the operand itself (contiguous, a no-op cast): no cut
        if isinstance(result, Pair) and result.data.node not in self.attempt:
            return result.with_data(torch.ops.aten.alias.default(result.data))
        if isinstance(result, torch.fx.Proxy) and result.node not in self.attempt:
            return torch.ops.aten.alias.default(result)
        return result

    def _in_eager_layout(self, node: Node, result: Any, expected: Any, seen) -> Any:
        """A new tensor in eager gets eager's layout here, before anything views
        it: layout decides what ``contiguous``, ``view`` and ``reshape`` return
        (eager's ``contiguous`` of a contiguous result is the result itself)."""
        if not isinstance(result, (Pair, torch.fx.Proxy)) or not isinstance(expected, torch.Tensor):
            return result
        if expected._base is not None or any(shares_storage(expected, eager) for eager, _ in seen):
            return result
        data = result.data.node if isinstance(result, Pair) else result.node
        laid_out = self.edges.in_eager_layout(data, expected, pair=isinstance(result, Pair), before=node, all_dims=False)
        if laid_out is data:
            return result
        proxy = torch.fx.Proxy(laid_out, self.tracer)
        return result.with_data(proxy) if isinstance(result, Pair) else proxy

    @staticmethod
    def _with_bits(result: Any, bits) -> Any:
        """Attach the bits a lazy-path result keeps (a real neg view for ``.imag`` of a conj)."""
        conj, neg = bits
        if isinstance(result, (list, tuple)):
            return [ComplexRewriter._with_bits(r, bits) for r in result]
        if isinstance(result, Pair):
            return _HeldPair(result, conj, neg)
        if isinstance(result, torch.fx.Proxy) and neg:
            return torch._neg_view(result)
        return result

    def _record(self, node: Node, result: Any) -> None:
        self.replaced.append(node)
        if isinstance(result, (Pair, _HeldPair)):
            self.held[node] = _held(result)
        elif isinstance(result, (list, tuple)):
            # Complex items are held; real ones (var_mean's variance) are the
            # nodes that compute them, taken by the getitem that reads them.
            self.held[node] = [item.node if isinstance(item, torch.fx.Proxy) else _held(item) for item in result]
        elif isinstance(result, torch.fx.Proxy):
            if isinstance(fake_value(node), torch.Tensor):
                self.real_results[result.node] = node
            for user in list(node.users):
                self._rewire(user, *map_arg((user.args, user.kwargs), lambda a: result.node if a is node else a))
        # None: an in-place write with no result (setitem); its effect was emitted.

    # ---------------------------------------------------------------- checks
    def _check(self, result: Any, expected: Any, seen) -> None:
        """The rewrite must produce exactly what eager does: shape, dtype, device,
        storage shared with each operand, and (in Dynamo's graph) requires_grad."""
        if isinstance(result, (list, tuple)):
            if not isinstance(expected, (list, tuple)) or len(result) != len(expected):
                raise Unsupported("sequence result of the wrong length")
            for item, want in zip(result, expected):
                self._check(item, want, seen)
            return
        if result is None:
            return
        if isinstance(result, _HeldPair):
            result = result.pair
        if isinstance(result, Pair):
            got = fake_value(result.data.node)
            if not (is_complex_tensor(expected) and isinstance(got, torch.Tensor)):
                raise Unsupported("complex result expected")
            if got.dtype != real_dtype(expected.dtype) or result.dtype != expected.dtype:
                raise Unsupported(f"pair dtype {got.dtype} for {expected.dtype}")
            if not _same_size(got.shape, (*expected.shape, 2)) or got.device != expected.device:
                raise Unsupported(f"pair shape {tuple(got.shape)} for complex {tuple(expected.shape)}")
        elif isinstance(result, torch.fx.Proxy):
            got = fake_value(result.node)
            if isinstance(expected, torch.Tensor):
                if not isinstance(got, torch.Tensor) or got.dtype != expected.dtype or got.device != expected.device:
                    raise Unsupported("real result of the wrong dtype or device")
                if not _same_size(got.shape, expected.shape):
                    raise Unsupported(f"real result shape {tuple(got.shape)} for {tuple(expected.shape)}")
            elif not statically_known_true(got == expected):
                raise Unsupported(f"result {got} for {expected}")
        else:
            raise Unsupported(f"rule returned {type(result).__name__}")
        if isinstance(expected, torch.Tensor):
            self._check_alias_and_grad(got, expected, seen)

    def _check_alias_and_grad(self, got: torch.Tensor, expected: torch.Tensor, seen) -> None:
        for eager_operand, our_operand in seen:
            if shares_storage(expected, eager_operand) != shares_storage(got, our_operand):
                what = "a view of" if shares_storage(expected, eager_operand) else "a new tensor, not a view of"
                raise Unsupported(f"eager's result is {what} its operand; the rewrite's is not")
        written_later = any(shares_storage(expected, w) for w in self.written)
        if self.tracks_grad and not written_later and got.requires_grad != expected.requires_grad:
            raise Unsupported(f"requires_grad {got.requires_grad} where eager's is {expected.requires_grad}")

    # ------------------------------------------------------------ keep ops
    def _keep(self, node: Node, op: str, reason: str) -> None:
        """Leave ``node`` as it was, bridging any rewritten inputs back to complex."""
        bridged = self.edges.bridge_inputs(node, "bridge_view")
        self.report.add(node, op, "bridged" if bridged else "kept", reason)

    # ---------------------------------------------------------------- clean
    def _clean(self) -> None:
        self.edges.report_entries()
        for node in reversed(self.replaced):
            if not node.users:
                self.graph.erase_node(node)
        for node in reversed(list(self.graph.nodes)):
            if node in self.created and not node.users and not mutates(node) and not _is_mode_node(node):
                self.graph.erase_node(node)


class _HeldPair:
    """A rule's Pair result that keeps lazy bits (the lazy path)."""

    def __init__(self, pair: Pair, conj: bool, neg: bool):
        self.pair, self.conj, self.neg = pair, conj, neg


def _held(result) -> Held:
    if isinstance(result, _HeldPair):
        return Held(result.pair.data.node, result.conj, result.neg)
    return Held(result.data.node)


def _made_into_forward_outputs(graph: torch.fx.Graph) -> set[Node]:
    """The nodes whose values a graph output is, views, or is computed from
    through complex values only (a copy the pre-grad pass made on purpose,
    ``_refusing_view``, is part of what the caller gets)."""
    found: set[Node] = set()
    todo = [n for out in graph.find_nodes(op="output") for n in out.all_input_nodes]
    while todo:
        node = todo.pop()
        value = fake_value(node)
        if node in found or not (isinstance(value, torch.Tensor) or (
                isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value))):
            continue  # (a returned size aliases nothing; split/unbind's list holds views)
        is_view = node.op == "call_function" and getattr(node.target, "is_view", False)
        if not (is_view or holds_complex(fake_value(node))):
            continue  # a real tensor of its own: what made it is free to change
        if node.target is torch.ops.aten.view_as_real.default and node.args[0].op in ("placeholder", "get_attr"):
            continue  # (a saved buffer, say) rewritten, it is the same view: the input's entry view
        found.add(node)
        todo.extend(node.all_input_nodes)
    return found


def _is_mode_node(node: Node) -> bool:
    return getattr(node.target, "__name__", "") in ("_enter_autocast", "_exit_autocast", "_set_grad_enabled")


def _same_kind(new: Any, old: Any) -> bool:
    """Same structure, shapes and dtypes (strides may differ)."""
    if isinstance(old, (list, tuple)):
        return isinstance(new, (list, tuple)) and len(new) == len(old) and all(map(_same_kind, new, old))
    if isinstance(old, torch.Tensor):
        return (isinstance(new, torch.Tensor) and new.dtype == old.dtype and new.dim() == old.dim()
                and all(statically_known_true(a == b) for a, b in zip(new.shape, old.shape)))
    return type(new) is type(old)
