"""The pass's work grows linearly with the graph: counted, not timed.

A forward graph after autograd returns every activation saved for backward
(hundreds at 32 layers); comparing each output with every other for shared
storage made the post-grad pass quadratic, 19% of a 32-layer compile. The
count of storage comparisons must grow with the graph, not with its square."""

from __future__ import annotations

import torch
from complex_testing import dynamo_graph, run_pass

import inductor_complex.edges
import inductor_complex.rewrite


def _many_outputs(n: int):
    def fn(z, w):
        outs = []
        for i in range(n):
            z = z * w + i
            outs.append(z.abs())  # real outputs, as saved activations are
        return tuple(outs)

    return fn


def _storage_comparisons(n: int, monkeypatch) -> int:
    calls = 0
    original = inductor_complex.rewrite.shares_storage

    def counting(a, b):
        nonlocal calls
        calls += 1
        return original(a, b)

    for module in (inductor_complex.rewrite, inductor_complex.edges):
        monkeypatch.setattr(module, "shares_storage", counting)
    z, w = torch.randn(4, dtype=torch.complex64), torch.randn(4, dtype=torch.complex64)
    run_pass(dynamo_graph(_many_outputs(n), z, w))
    monkeypatch.undo()
    return calls


def test_storage_comparisons_grow_linearly_with_outputs(monkeypatch):
    small, large = _storage_comparisons(40, monkeypatch), _storage_comparisons(80, monkeypatch)
    assert large <= 2.5 * max(small, 1), (small, large)
