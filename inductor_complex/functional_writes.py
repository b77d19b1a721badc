"""In-place writes into tensors the graph just made, spelled as functional ops.

The walk writes into tensors it makes itself: ``empty_strided(...).copy_(x)``
puts a value into eager's strides, and a few rules fill a fresh buffer in
place; and eager's own composites do (``stft`` transposes its spectrum with
``transpose_``, whose fake value then no longer is the transform's). Dynamo's and Inductor's graphs take such writes; an exported program's
verifier does not ("operator 'aten.copy_.default' is not functional"), and
its final decomposition cannot run on a program that fails it.

A write ``op_(t, ...)`` into a fresh ``t`` (the result of an op that returns a
new tensor, none of its inputs) whose other readers all come after it is the
same as ``t2 = op(t, ...)`` with those readers reading ``t2``: nothing else
can see ``t`` before or through the write. Writes that this cannot prove stay
as they are (the caller decides what to do with a program that keeps one).
"""

from __future__ import annotations

import torch
import torch.fx

Node = torch.fx.Node


def _functional_variant(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """``aten.copy.default`` for ``aten.copy_.default``: no trailing ``_``, the same
    overload, or the one overload taking the same arguments (``transpose_.default``
    is ``transpose.int``)."""
    name = op.overloadpacket.__name__
    if not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(getattr(torch.ops, op.namespace), name[:-1], None)
    if packet is None:
        return None
    candidates = [getattr(packet, overload) for overload in packet.overloads()]
    same_name = [f for f in candidates if f._overloadname == op._overloadname]
    same_arguments = [f for f in candidates if _argument_types(f) == _argument_types(op)]
    functional = same_name or (same_arguments if len(same_arguments) == 1 else [])
    if not functional or functional[0]._schema.is_mutable:
        return None
    return functional[0]


def _argument_types(op: torch._ops.OpOverload) -> list[str]:
    return [str(a.type) for a in op._schema.arguments]


def _writes_only_self(op: torch._ops.OpOverload) -> bool:
    arguments = op._schema.arguments
    written = [a for a in arguments if a.alias_info is not None and a.alias_info.is_write]
    return len(written) == 1 and written[0] is arguments[0]


def _is_fresh(node: Node) -> bool:
    """A tensor of its own: made by an op whose result aliases none of its inputs."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    schema = node.target._schema
    return not schema.is_mutable and all(r.alias_info is None for r in schema.returns)


def functionalize_fresh_writes(graph: torch.fx.Graph) -> list[Node]:
    """Rewrite each provable write as its functional op; returns the writes left in place."""
    position = {node: i for i, node in enumerate(graph.nodes)}
    left = []
    for node in list(graph.nodes):
        op = node.target
        if node.op != "call_function" or not isinstance(op, torch._ops.OpOverload) or not op._schema.is_mutable:
            continue
        functional = _functional_variant(op)
        target = node.args[0] if node.args else None
        if (functional is None or not _writes_only_self(op) or not isinstance(target, Node) or not _is_fresh(target)
                or any(position[user] < position[node] for user in target.users if user is not node)):
            left.append(node)
            continue
        with graph.inserting_before(node):
            result = graph.call_function(functional, node.args, node.kwargs)
        result.meta = dict(node.meta)
        position[result] = position[node]
        later_readers = [user for user in target.users if user is not node and user is not result]
        for user in later_readers:
            user.replace_input_with(target, result)
        node.replace_all_uses_with(result)
        graph.erase_node(node)
    return left
