"""Run one subject: build every provider, check it against eager, time them together."""

from __future__ import annotations

import dataclasses
import traceback
from typing import Callable

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from .providers import PROVIDERS, Unavailable, build
from .subjects import SUBJECTS, Case
from .timing import time_interleaved


@dataclasses.dataclass
class Row:
    subject: str
    size: str
    provider: str
    status: str  # "ok", "unavailable" or "failed"
    reason: str = ""
    min_ms: float | None = None
    median_ms: float | None = None
    max_ms: float | None = None
    rounds: int = 0
    speed_vs_stock: float | None = None  # stock's median / this median: > 1 is faster
    max_error: float | None = None  # max |out - eager| over max(1, max |eager|), outputs and gradients
    note: str = ""


def _tensors(value) -> list[torch.Tensor]:
    return [t for t in tree_leaves(value) if isinstance(t, torch.Tensor)]


def _leaves(fn: Callable, case: Case) -> list[torch.Tensor]:
    """What a training step gives gradients to: the inputs and ``fn``'s parameters."""
    params = list(fn.parameters()) if isinstance(fn, nn.Module) else []
    return [t for t in case.inputs if isinstance(t, torch.Tensor) and t.requires_grad] + params


def _stepper(fn: Callable, case: Case, output_grads: list[torch.Tensor] | None) -> Callable[[], object]:
    """One forward (no_grad for inference), or forward + backward of fixed output gradients."""
    if not case.train:
        def infer():
            with torch.no_grad():
                return fn(*case.inputs)

        return infer
    leaves = _leaves(fn, case)

    def train():
        for leaf in leaves:
            leaf.grad = None
        outputs = _tensors(fn(*case.inputs))
        torch.autograd.backward(outputs, output_grads)
        return outputs

    return train


def _result(step, fn, case) -> list[torch.Tensor]:
    """The outputs and (training) gradients one step gives, detached copies."""
    outputs = _tensors(step())
    grads = [leaf.grad for leaf in _leaves(fn, case)] if case.train else []
    return [t.detach().clone() for t in outputs + grads if t is not None]


def _max_error(actual: list[torch.Tensor], expected: list[torch.Tensor]) -> float:
    if len(actual) != len(expected):
        return float("inf")
    worst = 0.0
    for a, e in zip(actual, expected):
        a, e = torch.view_as_real(a) if a.is_complex() else a, torch.view_as_real(e) if e.is_complex() else e
        scale = max(1.0, e.abs().max().item()) if e.numel() else 1.0
        worst = max(worst, (a.double() - e.double()).abs().max().item() / scale if e.numel() else 0.0)
    return worst


def run_subject(name: str, size: str, device: str, providers=PROVIDERS, rounds: int = 10,
                min_sample_ms: float = 5.0, debug: bool = False, dynamic: bool = False) -> list[Row]:
    torch._dynamo.reset()  # each subject compiles afresh; Dynamo's per-code cache limit is not shared
    case = SUBJECTS[name](size, device)
    torch.manual_seed(1)
    eager_outputs = _tensors(case.forward(*case.inputs))
    output_grads = [torch.randn_like(t) for t in eager_outputs] if case.train else None
    reference = _result(_stepper(case.forward, case, output_grads), case.forward, case)
    limit_grads = None
    if case.limit is not None and case.train:
        limit_grads = [torch.randn_like(t) for t in _tensors(case.limit(*case.inputs))]

    rows, steps = {}, {}
    for provider in providers:
        row = Row(name, size, provider, "ok", note=case.note)
        rows[provider] = row
        try:
            fn, context = build(provider, case, device, dynamic)
            is_limit = provider == "limit"
            step = _stepper(fn, case, limit_grads if is_limit else output_grads)
            with context:
                result = _result(step, fn, case)  # the first call compiles
                step()
            if is_limit:
                row.reason = case.limit_name
            else:
                row.max_error = _max_error(result, reference)
                if row.max_error > case.tolerance:
                    raise AssertionError(f"differs from eager by {row.max_error:.3g} (tolerance {case.tolerance:g})")
            steps[provider] = step
        except Unavailable as why:
            row.status, row.reason = "unavailable", str(why)
        except Exception as error:  # noqa: BLE001 - a provider's failure is a result, reported in its row
            row.status, row.reason = "failed", f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
            if debug:
                traceback.print_exc()
    for provider, spread in time_interleaved(steps, device, rounds, min_sample_ms).items():
        row = rows[provider]
        row.min_ms, row.median_ms, row.max_ms, row.rounds = spread.min_ms, spread.median_ms, spread.max_ms, spread.rounds
    stock = rows.get("stock")
    for row in rows.values():
        if row.median_ms and stock is not None and stock.median_ms:
            row.speed_vs_stock = stock.median_ms / row.median_ms
    return list(rows.values())
