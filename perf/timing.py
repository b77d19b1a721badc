"""Interleaved timing: every round runs each provider once, in an order that
rotates from round to round, so load from other processes and clock changes
hit all providers alike; ratios are taken between numbers of the same rounds."""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Callable


@dataclasses.dataclass(frozen=True)
class Spread:
    min_ms: float
    median_ms: float
    max_ms: float
    rounds: int


def _synchronize(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _calls_per_sample(step: Callable[[], object], device: str, min_sample_ms: float) -> int:
    """How many calls make one sample last at least ``min_sample_ms``."""
    _synchronize(device)
    start = time.perf_counter()
    step()
    _synchronize(device)
    once_ms = (time.perf_counter() - start) * 1e3
    return max(1, min(1000, int(min_sample_ms / max(once_ms, 1e-3)) + 1))


def time_interleaved(steps: dict[str, Callable[[], object]], device: str, rounds: int, min_sample_ms: float) -> dict[str, Spread]:
    """Per step: min, median and max over ``rounds`` of the time of one call."""
    calls = {name: _calls_per_sample(step, device, min_sample_ms) for name, step in steps.items()}
    samples: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            _synchronize(device)
            start = time.perf_counter()
            for _ in range(calls[name]):
                steps[name]()
            _synchronize(device)
            samples[name].append((time.perf_counter() - start) * 1e3 / calls[name])
    return {
        name: Spread(min(ms), statistics.median(ms), max(ms), len(ms)) for name, ms in samples.items()
    }
