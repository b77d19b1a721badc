"""``explain(fn, *args)``: what the pass does to a function, without compiling it.

Runs ``fn`` once under Dynamo with a backend that applies the pass to each
captured graph, and to the bodies of its higher-order ops first as Inductor
does, then runs the rewritten graph eagerly (no Inductor code generation, so
it is quick), and collects every decision: rewritten, bridged or kept (with
the reason and the source line), fused, and the zero-copy views at the
graph's edges.
"""

from __future__ import annotations

import dataclasses

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.utils._pytree import tree_leaves

from .complex_to_real_pass import ComplexToRealPass, is_backward_graph
from .report import Report


@dataclasses.dataclass
class Explanation:
    reports: list[Report]
    output: object
    # One per report: "graph 0", or "graph 0 / true_graph_0" for a higher-order op's body.
    graph_names: list[str] = dataclasses.field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(report.count(action) for report in self.reports)

    def __str__(self) -> str:
        parts = []
        names = self.graph_names or [f"graph {i}" for i in range(len(self.reports))]
        for name, report in zip(names, self.reports):
            summary = ", ".join(f"{n} {action}" for action, n in sorted(report.summary().items())) or "no complex values"
            parts.append(f"{name}: {summary}\n{report.format()}")
        return "\n\n".join(parts) if parts else "no graphs captured"


def explain(fn, *args, backward: bool = False, **options) -> Explanation:
    """Apply ``ComplexToRealPass(**options)`` to each graph Dynamo captures from ``fn(*args)``.

    ``backward=True`` also runs AOTAutograd (with Inductor's decompositions)
    and the post-grad pass on the forward and backward graphs, and
    backpropagates ones from the outputs that require grad to get the
    backward graphs; gradients the inputs had are put back afterwards.
    """
    reports: list[Report] = []
    names: list[str] = []
    complex_pass = ComplexToRealPass(**options)

    def apply(gm: torch.fx.GraphModule, name: str) -> None:
        for attr in subgraph_names(gm):
            apply(getattr(gm, attr), f"{name} / {attr}")
        # As torch.compile runs it with the companion installed (rules may leave
        # their derivative's complex math to the graphs after autograd).
        with torch._inductor.config.patch(post_grad_custom_pre_pass=complex_pass.post_grad):
            complex_pass(gm.graph)
        gm.recompile()
        reports.append(complex_pass.last_report)
        names.append(name)

    def after_autograd(name: str):
        def compiler(gm: torch.fx.GraphModule, example_inputs):
            complex_pass.post_grad(gm.graph)
            gm.recompile()
            reports.append(complex_pass.post_grad.last_report)
            kind = "backward" if is_backward_graph(gm.graph) else "forward"
            names.append(f"{name} ({kind}, after autograd)")
            return make_boxed_func(gm.forward)
        return compiler

    def backend(gm: torch.fx.GraphModule, example_inputs):
        name = f"graph {sum(1 for n in names if '/' not in n and '(' not in n)}"
        apply(gm, name)
        if not backward:
            return gm.forward
        compiler = after_autograd(name)
        return aot_autograd(fw_compiler=compiler, bw_compiler=compiler, decompositions=select_decomp_table(),
                            keep_inference_input_mutations=True)(gm, example_inputs)

    output = torch.compile(fn, backend=backend)(*args)
    if backward:
        _backpropagate(output, args)
    return Explanation(reports, output, names)


def _backpropagate(output, args) -> None:
    """Ones back from each output that requires grad; the inputs' .grad as before."""
    outputs = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outputs:
        return
    leaves = [t for t in tree_leaves(args) if isinstance(t, torch.Tensor) and t.requires_grad]
    saved = [t.grad for t in leaves]
    torch.autograd.backward(outputs, [torch.ones_like(t) for t in outputs])
    for t, grad in zip(leaves, saved):
        t.grad = grad


def select_decomp_table():
    from torch._inductor.decomposition import select_decomp_table as inductors  # (imports much of Inductor)

    return inductors()


def subgraph_names(gm: torch.fx.GraphModule) -> list[str]:
    """The attributes of ``gm`` holding higher-order-op bodies (``torch.cond``'s
    branches, checkpointed regions), which Inductor's pre-grad passes visit first."""
    names = []
    for node in gm.graph.nodes:
        if node.op == "get_attr" and isinstance(getattr(gm, node.target, None), torch.fx.GraphModule):
            names.append(node.target)
    return list(dict.fromkeys(names))
