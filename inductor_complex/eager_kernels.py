"""Complex ops left to eager's kernel where that was measured faster.

On CPU a product of two complex matrices is one BLAS call either way: Inductor
calls an extern GEMM for real matrices too, so the rewrite buys no fusion.
Eager's complex BLAS reads the interleaved layout natively and took 0.39 to
0.78 of the time of four real GEMMs; the fastest real form took 0.55 to 0.90,
slower in 15 of 16 shape/dtype/mode rows and tied in the last
(``perf/results/matmul_forms_cpu_2026-11-30.md``). So with
``ComplexToRealPass(complex_blas_on_cpu=True)``, under ``torch.compile`` on
CPU, these products stay complex, bridged by zero-copy views. It is off by
default (the default leaves Inductor nothing complex to run), and exported
programs and AOTInductor, whose runtimes must not see complex, always
rewrite them.
"""

from __future__ import annotations

import torch
import torch.fx

from .values import fake_value

MATRIX_PRODUCTS = frozenset({"mm", "bmm", "matmul"})
REASON = "eager's complex BLAS (CPU; measured faster than the real GEMM forms, perf/results/matmul_forms_cpu_2026-11-30.md)"


def faster_in_eager(name: str, node: torch.fx.Node) -> str | None:
    """Why eager's own kernel should run ``node`` (an op named ``name``), or None."""
    if name not in MATRIX_PRODUCTS:
        return None
    result = fake_value(node)
    operands = [fake_value(a) for a in node.args[:2] if isinstance(a, torch.fx.Node)]
    if not (isinstance(result, torch.Tensor) and result.is_complex() and result.device.type == "cpu"):
        return None
    if len(operands) != 2 or not all(isinstance(t, torch.Tensor) and t.is_complex() for t in operands):
        return None  # a real operand (eager refuses mixed matmul): nothing of eager's to prefer
    return REASON
