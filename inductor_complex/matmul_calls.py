"""Past autograd, the complex-BLAS products' calls (:mod:`.eager_kernels`).

In AOTAutograd's forward, backward and inference graphs autograd is done, so
each ``complex_matmul_cpu`` becomes its twin ``complex_matmul_cpu_kernel``,
which has no autograd kernel and a C++ CPU kernel (a call measured 8 us
against 33-63 us, 8x8, one thread). At a graph's edges the twin also takes a
complex operand as it is (``view_as_real(x)`` → ``x``) and gives a complex
result where only ``view_as_complex`` reads it: Inductor calls each of those
views as an extern op (3-5 us with its checks), and a small product's graph is
mostly edges. Values are unchanged: the twin views the same memory as complex.
"""

from __future__ import annotations

import torch
import torch.fx

from .graph_meta import graph_fake_mode, propagate_fake_values, refresh_eager_input_vals, same_layout

aten = torch.ops.aten
_PARAMETERS = ("a", "b", "adjoint_a", "adjoint_b")


def _complex_source(arg) -> torch.fx.Node | None:
    """``x`` where ``arg`` is ``view_as_real(x)``."""
    if isinstance(arg, torch.fx.Node) and arg.op == "call_function" and arg.target is aten.view_as_real.default:
        return arg.args[0]
    return None


def call_kernel_op(graph: torch.fx.Graph) -> int:
    """Point every ``complex_matmul_cpu`` of a graph past autograd at its twin,
    taking complex operands and results at the edges, and load the C++ kernel
    library (building it if need be; the twin's Python kernel serves if that
    fails). Returns how many calls were pointed."""
    op = torch.ops.inductor_complex.complex_matmul_cpu.default
    nodes = graph.find_nodes(op="call_function", target=op)
    if not nodes:
        return 0
    from .kernels import rotary_cpu

    rotary_cpu.available()
    fake_mode = graph_fake_mode(graph)
    for node in nodes:
        values = {**dict(zip(_PARAMETERS, node.args)), **node.kwargs}
        adjoints = (values.get("adjoint_a", False), values.get("adjoint_b", False))
        node.target = torch.ops.inductor_complex.complex_matmul_cpu_kernel.default
        node.args, node.kwargs = (values["a"], values["b"], *adjoints, False), {}
        _take_edges_as_complex(graph, node, fake_mode)
        refresh_eager_input_vals(node)
    return len(nodes)


def _take_edges_as_complex(graph: torch.fx.Graph, node: torch.fx.Node, fake_mode) -> None:
    """Skip the twin's edge views where its fake result proves the same layout; else leave it as it is."""
    views, adjoints = node.args[:2], node.args[2:4]
    operands = [_complex_source(view) or view for view in views]
    readers = list(node.users)
    complex_out = bool(readers) and all(
        r.op == "call_function" and r.target is aten.view_as_complex.default for r in readers)
    if (operands == list(views) and not complex_out) or fake_mode is None:
        return
    before = node.meta.get("val")
    expected = readers[0].meta.get("val") if complex_out else before
    node.args = (*operands, *adjoints, complex_out)
    propagate_fake_values([node], None, fake_mode, "val")
    if not same_layout(node.meta.get("val"), expected):
        node.args = (*views, *adjoints, False)
        node.meta["val"] = before
        return
    if complex_out:
        for reader in readers:
            reader.replace_all_uses_with(node)
            graph.erase_node(reader)
    for view in views:
        if isinstance(view, torch.fx.Node) and not view.users and _complex_source(view) is not None:
            graph.erase_node(view)
