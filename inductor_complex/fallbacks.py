"""Count the ops Inductor still leaves to eager because they touch complex tensors.

Inductor asks ``fallback_node_due_to_unsupported_type`` of every aten node it
lowers; for a complex input or output it answers yes and emits an eager call
instead of a kernel. Wrapping that question while a model compiles lists
exactly the complex work that escaped code generation.
"""

from __future__ import annotations

import contextlib
import dataclasses

import torch
import torch._inductor.graph as inductor_graph
from torch.utils._pytree import tree_leaves

# Views that only reinterpret memory: no copy, no kernel, just an alias call
# (``view.dtype``: complex64 as the int64 words pair math in planes reads and writes).
ZERO_COPY_VIEWS = frozenset({"aten.view_as_real.default", "aten.view_as_complex.default", "aten.view.dtype"})
# The one copy at the rewritten graph's edge: it gives a new complex output of an
# inference graph a storage of its own (a view made under the no_grad the graph
# runs in could not be written to).
OUTPUT_COPY = "aten.complex.default"


def _touches_complex(node: torch.fx.Node) -> bool:
    values = [node.meta.get("val")]
    values += [arg.meta.get("val") for arg in node.all_input_nodes]
    return any(isinstance(v, torch.Tensor) and v.is_complex() for v in tree_leaves(values))


@dataclasses.dataclass
class ComplexFallbacks:
    ops: list[str] = dataclasses.field(default_factory=list)
    views: set[str] = dataclasses.field(default_factory=set)  # the ops among them that are views

    @property
    def beyond_edges(self) -> list[str]:
        """Fallbacks that compute: everything but views (aliases, no kernel) and
        the output copy (eager's views of the graph's inputs, returned, and
        bridges are views of complex storage)."""
        return [op for op in self.ops if op not in self.views and op != OUTPUT_COPY]


@contextlib.contextmanager
def count_complex_fallbacks():
    """``with count_complex_fallbacks() as found: compiled(x)`` → ``found.ops``."""
    found = ComplexFallbacks()
    original = inductor_graph.fallback_node_due_to_unsupported_type

    def counting(node, *args, **kwargs):
        refused = original(node, *args, **kwargs)
        if refused and _touches_complex(node):
            name = str(node.target) if not hasattr(node.target, "_schema") else f"aten.{node.target.__name__}"
            found.ops.append(name)
            if getattr(node.target, "is_view", False):
                found.views.add(name)
        return refused

    inductor_graph.fallback_node_due_to_unsupported_type = counting
    try:
        yield found
    finally:
        inductor_graph.fallback_node_due_to_unsupported_type = original
