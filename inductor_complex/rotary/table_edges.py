"""Past autograd, the CPU rotary ops read a complex table as the graph holds it.

The fused site's table reaches ``rotary_embedding_cpu`` as
``view_as_real(table)`` and reshapes of those pairs. Where the table is a
complex value Inductor holds (a graph input: the decode step's table slice),
Inductor calls ``view_as_real`` as an extern op, checks its result and
reinterprets it: about 10 us of a decode step's ~140 (one thread, B=64 S=1).
The CPU ops also take the complex table itself (``kernels/rotary.py``,
``kernels/rotary_cpu_op.py``) and view it as ``[Bt, S, D/2, 2]`` pairs. That is
the same view only when the complex table is contiguous, the pairs the op gets
are contiguous and both hold the same elements, and nothing but CPU rotary ops
reads the chain of views between them: this pass checks exactly that, on the
fake values, and otherwise changes nothing. It runs on the joint graph too
(``JointGraphTables``), where the backward's op reads the same pairs: there
both ops take the table, and training saves it as it came. Past the split a
forward graph returns the pairs as a saved tensor, and keeps them.
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..graph_meta import refresh_eager_input_vals, statically_contiguous
from ..values import fake_value, holds_complex

aten = torch.ops.aten
# Views that keep a contiguous tensor's element order (the chain the pass's table emits).
_ORDER_KEEPING_VIEWS = frozenset({aten.view.default, aten.reshape.default, aten._unsafe_view.default,
                                  aten.squeeze.dim, aten.squeeze.default, aten.unsqueeze.default})


def _table_indices() -> dict:
    """The CPU rotary ops (defined once kernels/rotary.py is imported) and their table's position."""
    ops = torch.ops.inductor_complex
    names = {"rotary_embedding_cpu": 2, "rotary_embedding_single_cpu": 1}
    return {getattr(ops, name).default: index for name, index in names.items() if hasattr(ops, name)}


def _table_arg(node: torch.fx.Node, indices: dict) -> tuple[int, object] | None:
    """(position, argument) of a CPU rotary op's table; None for any other node."""
    index = indices.get(node.target) if node.op == "call_function" else None
    if index is None or len(node.args) <= index:
        return None
    return index, node.args[index]


def _other_args(node: torch.fx.Node, index: int) -> list:
    return [arg for i, arg in enumerate(node.args) if i != index] + list(node.kwargs.values())


def complex_table_read(node: torch.fx.Node) -> torch.fx.Node | None:
    """The complex table a CPU rotary op reads as it is (after :func:`read_complex_tables`),
    where that is the op's only complex input; else None."""
    if getattr(node.target, "namespace", None) != "inductor_complex":
        return None  # (asked of every node the rewrite walks: the cheap test first)
    found = _table_arg(node, _table_indices())
    if found is None or not isinstance(found[1], torch.fx.Node):
        return None
    index, table = found
    value = fake_value(table)
    if not (isinstance(value, torch.Tensor) and value.is_complex()):
        return None
    if any(isinstance(arg, torch.fx.Node) and holds_complex(fake_value(arg)) for arg in _other_args(node, index)):
        return None
    return table


def _reads_it_as_table_only(node: torch.fx.Node, pairs: torch.fx.Node, indices: dict) -> bool:
    found = _table_arg(node, indices)
    return found is not None and found[1] is pairs and all(arg is not pairs for arg in _other_args(node, found[0]))


def _complex_table(pairs: torch.fx.Node, indices: dict) -> tuple[torch.fx.Node, list[torch.fx.Node]] | None:
    """(the complex table, the views from it to ``pairs``) where ``pairs`` is
    ``view_as_real(table)`` through order-keeping views that only CPU rotary ops read
    (their table), the forward's and, in a joint graph, the backward's."""
    chain, node = [], pairs
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in _ORDER_KEEPING_VIEWS:
        chain.append(node)
        node = node.args[0]
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target is aten.view_as_real.default):
        return None
    chain.append(node)
    if any(len(view.users) != 1 for view in chain[1:]):
        return None  # another reader of a view on the way
    if not all(_reads_it_as_table_only(user, chain[0], indices) for user in chain[0].users):
        return None  # another reader of the pairs (a forward graph's saved tensor) keeps them
    table, table_pairs = fake_value(node.args[0]), fake_value(pairs)
    if not (statically_contiguous(table) and table.is_complex() and statically_contiguous(table_pairs)):
        return None
    if not statically_known_true(table.numel() * 2 == table_pairs.numel()):
        return None
    return node.args[0], chain


def read_complex_tables(graph: torch.fx.Graph) -> int:
    """Give each CPU rotary op its complex table where that is the same view; how
    many tables. Run on a joint graph too: the backward then saves the complex table
    itself, an input, rather than a view of its pairs that the forward must make."""
    done, indices = 0, _table_indices()
    for node in list(graph.nodes):
        table_arg = _table_arg(node, indices)
        pairs = table_arg[1] if table_arg else None
        found = _complex_table(pairs, indices) if isinstance(pairs, torch.fx.Node) else None
        if found is None:
            continue
        table, chain = found
        for reader in list(pairs.users):  # each a CPU rotary op, reading it as its table
            reader.update_arg(indices[reader.target], table)
            refresh_eager_input_vals(reader)
        for view in chain:  # from the op's side: each is unread once the one after it goes
            graph.erase_node(view)
        done += 1
    return done
