"""Fake metadata for nodes the pass inserts.

New nodes get the same kind of metadata as the graph's own (Dynamo's
``example_value`` or aten's ``val``), computed by running each node on its
inputs' fake values under the graph's fake mode, as torch.export's
``_node_metadata_hook`` does. Rules read shapes and dtypes from it, so every
node gets its value the moment it is created (:class:`FakeRecordingTracer`):
a helper that inspects a node a rule has just emitted sees what it is.
"""

from __future__ import annotations

import torch
import torch.fx
from torch._dispatch.python import no_python_dispatcher
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.fx.node import map_arg

from .values import fake_value

_PROVENANCE = ("stack_trace", "nn_module_stack", "source_fn_stack")


def meta_key(graph: torch.fx.Graph) -> str:
    for node in graph.nodes:
        if "example_value" in node.meta:
            return "example_value"  # Dynamo's torch-level graph
    return "val"  # aten graph (torch.export / AOTInductor)


def graph_fake_mode(graph: torch.fx.Graph):
    """The fake mode of the graph's own metadata.

    Not the ambient tracing context's: under torch.compile that is AOTAutograd's
    mode, while the nodes carry Dynamo's fake tensors.
    """
    for node in graph.nodes:
        mode = getattr(fake_value(node), "fake_mode", None)
        if mode is not None:
            return mode
    return None


def record_fake_value(new: torch.fx.Node, origin: torch.fx.Node | None, fake_mode, key: str, grad_enabled: bool) -> None:
    """Give ``new`` its fake value, computed under the grad mode it will run in
    (so ``requires_grad`` is eager's), and ``origin``'s provenance (stack trace).

    Autocast is off: the pass's own nodes compute what eager's complex ops do,
    and eager's autocast leaves complex ops alone (the rewriter turns it off
    around its nodes inside autocast regions).
    """
    if origin is not None:
        for name in _PROVENANCE:
            if name in origin.meta and name not in new.meta:
                new.meta[name] = origin.meta[name]
    value = fake_run(new, fake_mode, grad_enabled)
    if value is not None:
        new.meta[key] = value


def fake_run(node: torch.fx.Node, fake_mode, grad_enabled: bool):
    """``node``'s op run on its inputs' fake values as eager dispatches it:
    C++ kernels and composites, not the Python decompositions Dynamo's fake
    values come from (its ``matmul`` views the result of its ``bmm``; eager's
    returns a tensor of its own)."""
    call = node_call(node)
    values = [fake_value(n) for n in node.all_input_nodes]

    def run():
        return call(*values)

    with fake_mode, torch.set_grad_enabled(grad_enabled), torch._C._DisableAutocast():
        if node.target is torch.complex and _any_symbolic(values):
            # Its meta function casts with `to`, whose C++ kernel reads the strides as
            # ints: with symbolic sizes that specialized them (a recompile per size).
            return run()
        try:
            with no_python_dispatcher():
                return run()
        except RuntimeError as error:
            if "concrete integers" not in str(error):
                raise
        # Some C++ kernels take only concrete sizes (constant_pad_nd): with
        # symbolic ones, the Python decomposition Dynamo itself ran.
        return run()


def _any_symbolic(values) -> bool:
    return any(isinstance(v, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in (*v.shape, *v.stride()))
               for v in values)


def node_call(node: torch.fx.Node):
    """``node``'s call as a function of its input nodes' values, in the order
    of ``node.all_input_nodes`` (to run on fake values, or to trace)."""
    inputs = node.all_input_nodes

    def call(*values):
        args, kwargs = map_arg((node.args, node.kwargs), dict(zip(inputs, values)).__getitem__)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        return node.target(*args, **kwargs)

    return call


def copy_traced(graph: torch.fx.Graph, node: torch.fx.Node, traced: torch.fx.GraphModule, *, keep_values: bool):
    """Copy the nodes of ``traced`` (a trace of :func:`node_call`) in before
    ``node``, each with ``node``'s provenance; returns them and what stands for
    ``node``'s result (a node, or a tuple of nodes). ``keep_values=False``
    drops the trace's fake values (the caller computes them in its own key)."""
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    env: dict = dict(zip(placeholders, node.all_input_nodes))
    made, result = [], None
    with graph.inserting_before(node):
        for n in traced.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                result = map_arg(n.args[0], env.__getitem__)
                break
            copy = graph.node_copy(n, env.__getitem__)
            if not keep_values:
                copy.meta = {}
            copy.meta.update({name: node.meta[name] for name in _PROVENANCE if name in node.meta})
            env[n] = copy
            made.append(copy)
    return made, result


def refresh_eager_input_vals(node: torch.fx.Node) -> None:
    """Where AOTAutograd recorded the fake inputs of a custom op call (Inductor holds
    the operands to their layouts), record those of the node's arguments now, after
    a pass changed them."""
    if "eager_input_vals" in node.meta:
        node.meta["eager_input_vals"] = (map_arg(node.args, fake_value), map_arg(node.kwargs, fake_value))


def propagate_fake_values(new_nodes, origin: torch.fx.Node, fake_mode, key: str, grad_enabled: bool = False) -> None:
    """Give ``new_nodes`` fake values and ``origin``'s provenance (stack trace)."""
    for new in new_nodes:
        record_fake_value(new, origin, fake_mode, key, grad_enabled)


class FakeRecordingTracer(torch.fx.proxy.GraphAppendingTracer):
    """Records rule calls into the graph, each node with its fake value at once.

    ``origin`` (the node being rewritten, for provenance), ``grad_enabled``
    and ``on_create`` are set by the rewriter for each rule it runs.
    """

    def __init__(self, graph: torch.fx.Graph, fake_mode, key: str):
        super().__init__(graph)
        self.fake_mode, self.key = fake_mode, key
        self.origin: torch.fx.Node | None = None
        self.grad_enabled = False
        self.on_create = lambda node: None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        self.on_create(node)
        if kind == "get_attr":
            node.meta[self.key] = self.fake_mode.from_tensor(getattr(self.graph.owning_module, target), static_shapes=True)
        else:
            record_fake_value(node, self.origin, self.fake_mode, self.key, self.grad_enabled)
        return node

    def constant(self, value: torch.Tensor, name: str) -> torch.fx.Proxy:
        """``value`` held by the graph's module and read with ``get_attr``: one
        attribute per ``name`` and value (equal values share it; a name taken by
        another value gets a suffix). Each door makes such attributes what its
        runtime holds as constants."""
        module = self.graph.owning_module
        if module is None:
            raise RuntimeError("the graph has no module to hold a constant")
        base, suffix = name, 0
        while hasattr(module, name) and not _same_tensor(getattr(module, name), value):
            suffix += 1  # (a name the module holds something else under: a user's attribute)
            name = f"{base}_{suffix}"
        if not hasattr(module, name):
            # A buffer, not a plain attribute: AOTAutograd lifts a module's buffers
            # into its graphs' inputs (a plain tensor would meet its fake mode real).
            module.register_buffer(name, value, persistent=False)
        return self.create_proxy("get_attr", name, (), {})


def _same_tensor(held, value: torch.Tensor) -> bool:
    return (isinstance(held, torch.Tensor) and held.shape == value.shape and held.dtype == value.dtype
            and held.device == value.device and torch.equal(held, value))


# Layout facts about fake values, proven without guarding a symbolic size (a guard
# added past autograd would pin that size).


def statically_contiguous(value) -> bool:
    """Contiguous as ``is_contiguous`` says (size-1 dims aside)."""
    if not isinstance(value, torch.Tensor):
        return False
    expected = 1
    for size, stride in reversed(list(zip(value.shape, value.stride()))):
        if not (statically_known_true(size == 1) or statically_known_true(stride == expected)):
            return False
        expected = expected * size
    return True


def same_sizes(a, b) -> bool:
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
            and a.ndim == b.ndim and all(statically_known_true(x == y) for x, y in zip(a.shape, b.shape)))


def same_layout(a, b) -> bool:
    """Same dtype, sizes and strides."""
    return same_sizes(a, b) and all(statically_known_true(x == y) for x, y in zip(a.stride(), b.stride()))
