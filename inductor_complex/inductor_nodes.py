"""What Inductor does with a node of a graph past autograd: computes it in its own
loops, reads it from memory, or calls it as an extern op (its lowering table says)."""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten

try:  # Inductor's prim that fixes a buffer's stride order (a copy only where it is fixed otherwise)
    from torch._inductor.inductor_prims import force_stride_order as FORCE_STRIDE_ORDER
except ImportError:
    FORCE_STRIDE_ORDER = None


def _lowering():
    from torch._inductor import lowering  # (imported once Inductor runs)

    return lowering


def op_name(node: torch.fx.Node) -> str:
    """The op's name without its overload (``mul`` for ``aten.mul.Tensor``)."""
    target = node.target
    return getattr(getattr(target, "overloadpacket", target), "__name__", str(target))


def is_view(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and (getattr(node.target, "is_view", False)
                                           or node.target in (aten.reshape.default, aten._unsafe_view.default))


def computed_by_inductor(node: torch.fx.Node) -> bool:
    """Inductor computes ``node`` in its own loops: no view, no extern op."""
    if node.op != "call_function" or is_view(node) or not isinstance(node.target, torch._ops.OpOverload):
        return False
    lowering = _lowering()
    if node.target in lowering.fallbacks or node.target in lowering.needs_realized_inputs:
        return False
    return node.target in lowering.lowerings


def in_memory(node: torch.fx.Node) -> bool:
    """Inductor reads ``node`` from memory: an input, an extern op's result, or a view of one."""
    if node.op in ("placeholder", "get_attr"):
        return True
    if is_view(node):
        return isinstance(node.args[0], torch.fx.Node) and in_memory(node.args[0])
    return node.op == "call_function" and not computed_by_inductor(node)


def returned(node: torch.fx.Node) -> bool:
    """The graph returns ``node`` or a view of it."""
    return any(u.op == "output" or (is_view(u) and returned(u)) for u in node.users)


def cpu_code_is_cpp() -> bool:
    """Inductor writes C++ for CPU tensors (its default), not Triton or Halide
    (``torch._inductor.config.cpu_backend``). The CPU-only choices of this package
    (planes, products written by parts, lone products kept) were measured on that
    C++ code; under another backend CPU graphs get the GPU's forms."""
    from torch._inductor import config

    return getattr(config, "cpu_backend", "cpp") == "cpp"
