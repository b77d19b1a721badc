"""A complex product with nothing to fuse stays eager's, where pair loops are scalar.

Rewritten, ``a * b`` of two graph inputs that is only returned is one loop that
reads both inputs' pairs and writes the result's: the same memory traffic as
eager's complex kernel, with nothing else fused in. Where Inductor's loops over
pairs stay scalar (CPUs without AVX-512, see :mod:`.pair_planes`) that loop is
slower than eager's vectorized, shuffling kernel: a complex64 product of 2^20
elements, one thread, AVX2, took 2.12 ms against stock compile's 1.08 and 1.95
against 1.52 in a rerun (``perf/results/avx2_host/returned_by_parts/``), the
best of the rewritten forms measured (``rules/arith.py``). Such a product is
left as it was, so it runs as stock runs it; the report says why. Once
anything else reads an operand's computation or the product, the rewrite fuses
it and stays.

Only torch.compile's own graphs take this choice (the pass's option): exported
programs and AOTInductor, whose runtimes must not see complex, always get the
rewrite.
"""

from __future__ import annotations

import torch
import torch.fx

from .values import fake_value

PRODUCTS = frozenset({"mul"})
REASON = ("a product of graph inputs that is only returned: nothing to fuse, and Inductor's scalar pair loop "
          "on this CPU is slower than eager's complex kernel (2.12 ms against stock's 1.08, 2^20 complex64, "
          "AVX2, perf/results/avx2_host/returned_by_parts/)")


def faster_in_eager(name: str, node: torch.fx.Node) -> str | None:
    """Why ``node`` (an op named ``name``) should stay as it was, or None."""
    if name not in PRODUCTS or not node.users or any(user.op != "output" for user in node.users):
        return None
    result = fake_value(node)
    if not (isinstance(result, torch.Tensor) and result.is_complex() and result.device.type == "cpu"):
        return None
    operands = [arg for arg in (*node.args, *node.kwargs.values()) if isinstance(arg, torch.fx.Node)]
    if not operands or any(operand.op not in ("placeholder", "get_attr") for operand in operands):
        return None
    return REASON
