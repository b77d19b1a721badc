"""Fake metadata for nodes the pass inserts.

New nodes get the same kind of metadata as the graph's own (Dynamo's
``example_value`` or aten's ``val``), computed by running each node on its
inputs' fake values under the graph's fake mode, as torch.export's
``_node_metadata_hook`` does; later rules read shapes and dtypes from it.
"""

from __future__ import annotations

import torch
import torch.fx
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


def propagate_fake_values(new_nodes, origin: torch.fx.Node, fake_mode, key: str) -> None:
    """Give ``new_nodes`` fake values and ``origin``'s provenance (stack trace)."""
    for new in new_nodes:
        for name in _PROVENANCE:
            if name in origin.meta and name not in new.meta:
                new.meta[name] = origin.meta[name]
        args, kwargs = map_arg((new.args, new.kwargs), fake_value)
        with fake_mode:
            if new.op == "call_method":
                value = getattr(args[0], new.target)(*args[1:], **kwargs)
            else:
                value = new.target(*args, **kwargs)
        if value is not None:
            new.meta[key] = value
