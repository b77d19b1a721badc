"""What the pass costs at compile time: its own time per compile and its share
of the whole compile, for Llama stacks of growing depth (one Dynamo graph
each), and the compile time of the rules that emit the most nodes.

Compile caches are off so every compile is a full one. The pass's time is
summed over every call of ``ComplexToRealPass.__call__`` (the pre-grad pass
and its post-grad companion, which inherits it)."""

from __future__ import annotations

import contextlib
import dataclasses
import time

import torch

from inductor_complex import ComplexToRealPass
from inductor_complex.demo import ModelArgs

from . import models


@dataclasses.dataclass
class CompileCost:
    what: str
    layers: int
    compile_s: float  # first step minus a later step: Dynamo, the pass, AOTAutograd, Inductor, fwd and bwd
    pass_s: float
    pass_calls: int
    graph_nodes: int  # nodes of Dynamo's graph(s), before the pass

    @property
    def pass_share(self) -> float:
        return self.pass_s / self.compile_s if self.compile_s > 0 else float("nan")


@contextlib.contextmanager
def _timed_pass():
    """Sum the time of every call of the pass while the block runs."""
    totals = {"s": 0.0, "calls": 0, "nodes": 0}
    original = ComplexToRealPass.__call__

    def timed(self, graph):
        if type(self) is ComplexToRealPass:  # the pre-grad pass: Dynamo's graph
            totals["nodes"] += len(graph.nodes)
        start = time.perf_counter()
        try:
            return original(self, graph)
        finally:
            totals["s"] += time.perf_counter() - start
            totals["calls"] += 1

    ComplexToRealPass.__call__ = timed
    try:
        yield totals
    finally:
        ComplexToRealPass.__call__ = original


@contextlib.contextmanager
def _patched_caches():
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        yield


def _first_step_cost(what: str, layers: int, fn, inputs) -> CompileCost:
    torch._dynamo.reset()
    compiled = torch.compile(fn, options=ComplexToRealPass(fused_rotary=False).inductor_options())

    def step():
        out = compiled(*inputs)
        (torch.view_as_real(out) if out.is_complex() else out).sum().backward()

    with _patched_caches(), _timed_pass() as totals:
        start = time.perf_counter()
        step()
        first = time.perf_counter() - start
    start = time.perf_counter()
    step()
    again = time.perf_counter() - start
    return CompileCost(what, layers, first - again, totals["s"], totals["calls"], totals["nodes"])


def _warm_up(device: str) -> None:
    """One small compile first, so the first measured one does not also pay
    for imports and Inductor's one-time set-up."""
    z = torch.randn(4, dtype=torch.complex64, device=device, requires_grad=True)
    _first_step_cost("warm-up", 0, lambda z: z * z, (z,))


def llama_stacks(depths=(1, 8, 32), device: str = "cpu") -> list[CompileCost]:
    """The pass's share of compiling 1, 8, 32 small Llama layers in one graph."""
    _warm_up(device)
    costs = []
    for layers in depths:
        torch.manual_seed(0)
        args = ModelArgs(dim=64, n_heads=4, n_kv_heads=2, ffn_hidden=128, n_layers=layers, max_seq_len=16)
        model = models.Layers(args).to(device)
        h = torch.randn(1, 16, args.dim, device=device, requires_grad=True)
        costs.append(_first_step_cost("llama layers", layers, model, (h,)))
    return costs


INVERSE_TRIG = ("asin", "acos", "atan", "asinh", "acosh", "atanh")


def inverse_trig(ops=INVERSE_TRIG, device: str = "cpu") -> list[CompileCost]:
    """Compile time of each inverse-trigonometric rule, forward and backward."""
    _warm_up(device)
    costs = []
    for op in ops:
        z = torch.randn(8, dtype=torch.complex64, device=device, requires_grad=True)
        costs.append(_first_step_cost(f"torch.{op}", 0, getattr(torch, op), (z,)))
    return costs
