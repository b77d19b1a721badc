"""Past autograd on CPU: a new complex result as a dtype view of its pair buffer, not a copy.

Why: the pre-grad pass gives a new complex value that leaves the rewrite (a
graph output, an op without a rule) storage of its own as
``torch.complex(pair[..., 0], pair[..., 1])``: a view of a hidden real buffer
made under an inference graph's ``no_grad`` would refuse eager code's in-place
writes with grad. After autograd that is an ``aten.complex`` copy of the
whole result, which Inductor calls as an extern op, a full read and write: a
lone complex64 product of 2^20 elements took 2.41 ms with it and 1.72 ms
without (stock 1.14; one thread, AVX2 host, 2026-12-06).

``view.dtype`` gives the same storage as complex with no copy, and autograd
does not track it as a view (its output is not differentiable), so the result
has no ``_base`` and takes writes with grad as a tensor of its own would.
Where pair math is computed in planes (:mod:`.pair_planes`), its words are
viewed as complex the same way; this step serves the pair loops that are left.

Only where that is provably the same value in the same layout: the pair is a
buffer Inductor computes (no alias of an input), nothing else reads it, its
pairs are contiguous along the last complex dim (so ``[..., n, 2]`` merges
into ``[..., 2n]`` and views as ``[..., n]``), and the view's fake value has
the copy's sizes and strides. Inductor's choice of the buffer's layout is
pinned where it could differ (``force_stride_order``), as for the planes' words.
"""

from __future__ import annotations

import logging

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .graph_meta import graph_fake_mode, same_layout
from .inductor_nodes import FORCE_STRIDE_ORDER, computed_by_inductor
from .pair_words import NodeMaker, dim_index
from .values import fake_value

log = logging.getLogger(__name__)
aten = torch.ops.aten


_COMPLEX_OF = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def _part_read(node, pair_dim: int) -> tuple[torch.fx.Node, int] | None:
    """(pair, part) where ``node`` is ``select(pair, pair_dim, part)`` read by one node only."""
    if not (isinstance(node, torch.fx.Node) and node.target is aten.select.int and len(node.users) == 1):
        return None
    pair, dim, part = node.args
    if dim_index(dim, pair_dim + 1) != pair_dim or part not in (0, 1):
        return None
    return pair, part


def _copied_pair(node: torch.fx.Node) -> torch.fx.Node | None:
    """The pair ``node`` copies, where ``node`` is ``complex(pair[..., 0], pair[..., 1])``
    and the copy is all that reads the pair."""
    result = fake_value(node)
    if not isinstance(result, torch.Tensor) or result.ndim == 0 or result.device.type != "cpu":
        return None
    parts = [_part_read(arg, result.ndim) for arg in node.args[:2]]
    if None in parts or parts[0][0] is not parts[1][0] or [p for _, p in parts] != [0, 1]:
        return None
    pair = parts[0][0]
    if set(pair.users) != set(node.args[:2]) or not computed_by_inductor(pair):
        return None  # another reader, or memory Inductor does not own (an input, an extern result)
    return pair


def _pairs_merge(pair_value) -> bool:
    """``[..., n, 2]`` with the 2 parts adjacent and the pairs adjacent along ``n``."""
    stride = pair_value.stride()
    return statically_known_true(stride[-1] == 1) and statically_known_true(stride[-2] == 2)


def _merged_sizes(graph: torch.fx.Graph, make: NodeMaker, pair: torch.fx.Node, pair_value) -> list:
    """Sizes ``[..., -1]`` of ``pair`` with its last two dims merged: a symbolic size
    as a ``sym_size`` node of the pair (a graph takes no raw SymInt as an argument)."""
    sizes = []
    for d, size in enumerate(pair_value.shape[:-2]):
        if isinstance(size, int):
            sizes.append(size)
            continue
        node = graph.call_function(aten.sym_size.int, (pair, d))
        node.meta["val"] = size
        make.made.append(node)
        sizes.append(node)
    return [*sizes, -1]


def view_pairs_as_complex(graph: torch.fx.Graph) -> int:
    """Replace each copy of a pair into a new complex tensor (module docstring) by a
    dtype view of the pair; returns how many were replaced."""
    fake_mode = graph_fake_mode(graph)
    if fake_mode is None:
        return 0
    replaced = 0
    for node in list(graph.find_nodes(op="call_function", target=aten.complex.default)):
        pair = _copied_pair(node)
        if pair is None:
            continue
        pair_value, result = fake_value(pair), fake_value(node)
        complex_dtype = _COMPLEX_OF.get(pair_value.dtype)
        if complex_dtype != result.dtype or not _pairs_merge(pair_value):
            continue
        make = NodeMaker(graph, fake_mode)
        try:
            with graph.inserting_before(node):
                laid_out = pair
                if FORCE_STRIDE_ORDER is not None:
                    laid_out = make(FORCE_STRIDE_ORDER, pair, list(pair_value.stride()))
                flat = make(aten.reshape.default, laid_out, _merged_sizes(graph, make, pair, pair_value))
                view = make(aten.view.dtype, flat, complex_dtype)
        except Exception as why:  # (a fake value that would not compute): keep the copy
            log.debug("inductor_complex: the copy at %s is kept: %s", node.name, why)
            make.erase_unread()
            continue
        if not same_layout(fake_value(view), result):
            make.erase_unread()
            continue
        part_reads = node.args[:2]
        node.replace_all_uses_with(view)
        for dead in (node, *part_reads):
            graph.erase_node(dead)
        replaced += 1
    return replaced
