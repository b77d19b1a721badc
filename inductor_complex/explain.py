"""``explain(fn, *args)``: what the pass does to a function, without compiling it.

Runs ``fn`` once under Dynamo with a backend that applies the pass to each
captured graph and then runs the rewritten graph eagerly (no Inductor code
generation, so it is quick), and collects every decision: rewritten, bridged
or kept (with the reason and the source line), fused, and the zero-copy views
at the graph's edges.
"""

from __future__ import annotations

import dataclasses

import torch

from .complex_to_real_pass import ComplexToRealPass
from .report import Report


@dataclasses.dataclass
class Explanation:
    reports: list[Report]
    output: object

    def count(self, action: str) -> int:
        return sum(report.count(action) for report in self.reports)

    def __str__(self) -> str:
        parts = []
        for i, report in enumerate(self.reports):
            summary = ", ".join(f"{n} {action}" for action, n in sorted(report.summary().items())) or "no complex values"
            parts.append(f"graph {i}: {summary}\n{report.format()}")
        return "\n\n".join(parts) if parts else "no graphs captured"


def explain(fn, *args, **options) -> Explanation:
    """Apply ``ComplexToRealPass(**options)`` to each graph Dynamo captures from ``fn(*args)``."""
    reports: list[Report] = []

    def backend(gm: torch.fx.GraphModule, example_inputs):
        complex_pass = ComplexToRealPass(**options)
        complex_pass(gm.graph)
        gm.recompile()
        reports.append(complex_pass.last_report)
        return gm.forward

    output = torch.compile(fn, backend=backend)(*args)
    return Explanation(reports, output)
