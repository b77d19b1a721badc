"""The pass's own nodes as aten ops, for graphs that must hold nothing else.

The rules emit torch-level calls (``torch.view_as_real``, ``operator.mul`` on
tensors, ``Tensor.reshape``): Dynamo's graph holds such calls, and an exported
aten graph is traced again before Inductor sees it. Inductor's post-grad graphs
are lowered as they are and take only ``OpOverload``s. There each such node is
traced once with ``make_fx`` on its inputs' fake values and replaced by the
aten nodes the trace recorded, which compute the same thing by construction.

All nodes are traced before the first is replaced, so a failure leaves the
graph as the rewrite left it, and the rewrite can still be undone.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.node import map_arg

from .values import fake_value

Node = torch.fx.Node


def _is_aten(node: Node) -> bool:
    """Whether Inductor lowers ``node`` as it is: an aten op, an element of a
    multi-output one, or arithmetic on symbolic sizes."""
    if node.op != "call_function":
        return node.op != "call_method"
    if isinstance(node.target, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return True
    if node.target is operator.getitem:
        # Indexing a tensor is torch-level; an element of a multi-output call
        # is fine, or goes with its traced call (see _inline).
        return not isinstance(fake_value(node.args[0]), torch.Tensor)
    value = fake_value(node)
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool))


def _trace(node: Node, fake_mode, decompositions: dict) -> torch.fx.GraphModule:
    """``node``'s call as an aten graph over its input nodes' fake values,
    decomposed as Inductor's own graphs are (it lowers ``cat``, not ``stack``)."""
    inputs = node.all_input_nodes

    def call(*values):
        args, kwargs = map_arg((node.args, node.kwargs), dict(zip(inputs, values)).__getitem__)
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        return node.target(*args, **kwargs)

    with fake_mode, enable_python_dispatcher():
        return make_fx(call, decompositions, tracing_mode="real")(*[fake_value(n) for n in inputs])


def _inline(graph: torch.fx.Graph, node: Node, traced: torch.fx.GraphModule) -> None:
    """Put ``traced``'s nodes where ``node`` is and hand its users their results."""
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    env: dict[Node, Any] = dict(zip(placeholders, node.all_input_nodes))
    result: Any = None
    with graph.inserting_before(node):
        for n in traced.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                result = map_arg(n.args[0], env.__getitem__)
                break
            env[n] = graph.node_copy(n, env.__getitem__)
            for key in ("stack_trace", "nn_module_stack"):
                if key in node.meta:
                    env[n].meta[key] = node.meta[key]
    if isinstance(result, (list, tuple)):
        # A multi-output call: its users are getitems.
        for user in list(node.users):
            user.replace_all_uses_with(result[user.args[1]])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    graph.erase_node(node)


def lower_to_aten(graph: torch.fx.Graph, fake_mode) -> int:
    """Replace every call Inductor would refuse by its aten trace; returns how many."""
    from torch._inductor.decomposition import select_decomp_table  # (imports much of Inductor)

    decompositions = select_decomp_table()
    todo = [n for n in graph.nodes if n.op in ("call_function", "call_method") and not _is_aten(n)]
    traced = [(node, _trace(node, fake_mode, decompositions)) for node in todo]
    for _, gm in traced:
        if any(n.op == "get_attr" for n in gm.graph.nodes):
            raise RuntimeError("a traced call made a tensor constant")
    for node, gm in traced:
        _inline(graph, node, gm)
    return len(todo)
