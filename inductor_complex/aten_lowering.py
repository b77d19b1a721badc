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

import torch
import torch.fx
from torch._dispatch.python import enable_python_dispatcher
from torch.fx.experimental.proxy_tensor import make_fx

from .graph_meta import copy_traced, node_call
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
    with fake_mode, enable_python_dispatcher():
        return make_fx(node_call(node), decompositions, tracing_mode="real")(*[fake_value(n) for n in node.all_input_nodes])


def _inline(graph: torch.fx.Graph, node: Node, traced: torch.fx.GraphModule) -> None:
    """Put ``traced``'s nodes where ``node`` is and hand its users their results."""
    _, result = copy_traced(graph, node, traced, keep_values=True)  # (Inductor lowers by the trace's values)
    if isinstance(result, (list, tuple)):
        # A multi-output call: its users are getitems.
        for user in list(node.users):
            user.replace_all_uses_with(result[user.args[1]])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    graph.erase_node(node)


def lower_to_aten(graph: torch.fx.Graph, fake_mode, decompositions: dict | None = None) -> int:
    """Replace every call Inductor would refuse by its aten trace, decomposed
    by ``decompositions`` (default: Inductor's table); returns how many."""
    if decompositions is None:
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
