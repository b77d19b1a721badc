"""Ops without a rule that eager itself runs as other ops: inline those ops.

Many complex ops have no kernel of their own: ATen registers them as
``CompositeImplicitAutograd``, and eager runs their decomposition into other
aten ops (``isclose``, ``trapezoid``, ``kron``, ``diff``, ``ldexp``,
``broadcast_to``, ...). Eager's numbers are then those of the ops it
decomposes into, so the pass can put those ops in the graph in the
composite's place and rewrite them with their own rules.

The decomposition is recorded with ``make_fx`` on the node's fake values,
with the Python dispatcher off, so it is the C++ decomposition eager runs
(Python reimplementations of some composites need not round alike). An op
with a kernel of its own traces to itself and is left alone, and so is a
trace that holds anything but aten ops (and 0-d constants, which become
``scalar_tensor`` calls). Dynamo's NumPy-interop wrappers (``wrapped_add``,
``wrapped_pow``, ...) are inlined the same way.
"""

from __future__ import annotations

import torch
import torch.fx
from torch._dispatch.python import no_python_dispatcher
from torch.fx.experimental.proxy_tensor import make_fx

from .functional_writes import functionalize_fresh_writes
from .graph_meta import node_call
from .values import fake_value

Node = torch.fx.Node


def decomposition(node: Node, fake_mode, grad_enabled: bool) -> torch.fx.GraphModule | None:
    """The aten ops eager runs for ``node``'s call, or None when it runs the op itself."""
    if node.op not in ("call_function", "call_method") or isinstance(node.target, torch._ops.HigherOrderOperator):
        return None
    inputs = node.all_input_nodes
    if any(not isinstance(fake_value(n), torch.Tensor) or _symbolic(fake_value(n)) for n in inputs):
        # Traced on symbolic sizes, the decomposition comes out specialized to
        # their hints (vander's `empty([5, 5])`): Dynamo would then guard on
        # them and compile again for every size. Symbolic sizes as arguments too.
        return None
    try:
        with fake_mode, torch.set_grad_enabled(grad_enabled), no_python_dispatcher():
            traced = make_fx(node_call(node), tracing_mode="real")(*[fake_value(n) for n in inputs])
    except Exception:  # noqa: BLE001 - an op the trace cannot take stays as it is
        return None
    _scalar_constants_as_factories(traced)
    functionalize_fresh_writes(traced.graph)  # (stft's transpose_ of its spectrum)
    calls = [n for n in traced.graph.nodes if n.op not in ("placeholder", "output")]
    if not calls or any(not _is_aten_call(n) for n in calls):
        return None
    if len(calls) == 1 and _same_op(calls[0], node):
        return None  # the op's own kernel
    return traced


def _scalar_constants_as_factories(traced: torch.fx.GraphModule) -> None:
    """A Python number the op turns into a tensor (Dynamo's NumPy wrappers:
    ``a ** 2``, ``b / 2.0``, ``1j * a``) is traced as a 0-d tensor constant,
    ``lift_fresh_copy`` of an attribute; the same fresh 0-d tensor is
    ``scalar_tensor`` of its value, an aten call the graph can hold."""
    graph = traced.graph
    for node in list(graph.nodes):
        if node.target is not torch.ops.aten.lift_fresh_copy.default or node.args[0].op != "get_attr":
            continue
        constant = getattr(traced, node.args[0].target, None)
        if not isinstance(constant, torch.Tensor) or constant.ndim != 0 or constant.requires_grad:
            continue
        with graph.inserting_before(node):
            made = graph.call_function(torch.ops.aten.scalar_tensor.default, (constant.item(),),
                                       {"dtype": constant.dtype, "device": constant.device})
        node.replace_all_uses_with(made)
        graph.erase_node(node)
    graph.eliminate_dead_code()


def _symbolic(value: torch.Tensor) -> bool:
    return not all(isinstance(n, int) for n in (*value.shape, *value.stride(), value.storage_offset()))


def _is_aten_call(node: Node) -> bool:
    if node.op != "call_function":
        return False
    if node.target.__module__ == "_operator" and node.target.__name__ == "getitem":
        return True
    return isinstance(node.target, torch._ops.OpOverload) and node.target.namespace == "aten"


def _same_op(traced: Node, original: Node) -> bool:
    name = traced.target.overloadpacket.__name__
    if isinstance(original.target, torch._ops.OpOverload):
        return original.target.overloadpacket.__name__ == name
    original_name = original.target if original.op == "call_method" else getattr(original.target, "__name__", None)
    return original_name == name
