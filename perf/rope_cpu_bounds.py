"""What any compiled rope can reach on this CPU, next to what the pass reaches.

The rope targets compare the pass with the copy floor (a compiled copy of q
and k) and with eager. At small shapes a compiled call's fixed costs decide
those ratios, so this script times, interleaved in one process, per rope case:

    eager           the Llama rope, uncompiled
    eager_copy      q.clone(), k.clone(), uncompiled
    floor           the copy floor, compiled (the benchmarks' ``limit``)
    table_floor     the same copy, compiled, that also reads the complex table
                    (one ``view_as_real``: every compiled rope has to read it)
    pass            compiled with ``ComplexToRealPass()``'s defaults
    stock           ``torch.compile`` alone

Inference shapes only (decode and long context at quick and full sizes), and
the quick training shape, whose floor is the copy forward and backward.
Run on a quiet core: ``OMP_NUM_THREADS=1 taskset -c 1 python -m perf.rope_cpu_bounds``.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from inductor_complex import ComplexToRealPass

from . import subjects

CASES = (("rope_decode", "quick"), ("rope_decode", "full"), ("rope_long_context", "quick"),
         ("rope_long_context", "full"), ("rope_train", "quick"))


def _table_floor(q, k, freqs_cis):
    # Adding zero times the table's sum keeps the copy's values (finite tables) and
    # makes the compiled graph take the complex table, as a rope's must.
    read = torch.view_as_real(freqs_cis).sum() * 0.0
    return subjects.copy_floor(q + read, k + read, None)


def _providers(case: subjects.Case) -> dict:
    q, k, _ = case.inputs
    steps = {
        "eager": case.forward,
        "eager_copy": lambda q, k, t: (q.clone(), k.clone()),
        "floor": torch.compile(case.limit),
        "table_floor": torch.compile(_table_floor),
        "pass": torch.compile(case.forward, options=ComplexToRealPass().inductor_options()),
        "stock": torch.compile(case.forward),
    }
    if case.train:
        del steps["eager_copy"], steps["table_floor"]  # the floor's backward copies too
    return steps


def _step(fn, case: subjects.Case):
    if not case.train:
        def infer():
            with torch.no_grad():
                fn(*case.inputs)
        return infer
    grads = None

    def train():
        nonlocal grads
        outs = fn(*case.inputs)
        if grads is None:
            grads = [torch.randn_like(o) for o in outs]
        torch.autograd.backward(outs, grads)
    return train


def measure(name: str, size: str, rounds: int, min_sample_ms: float = 20.0) -> dict[str, float]:
    """Median µs per call of each provider, sampled interleaved."""
    torch._dynamo.reset()  # static compiles: no sizes remembered from the case before
    case = getattr(subjects, name)(size, "cpu")
    steps = {provider: _step(fn, case) for provider, fn in _providers(case).items()}
    calls = {}
    for provider, step in steps.items():
        step(), step()  # compile, then warm
        start = time.perf_counter()
        step()
        calls[provider] = max(1, int(min_sample_ms / 1e3 / max(time.perf_counter() - start, 1e-7)))
    samples: dict[str, list[float]] = {provider: [] for provider in steps}
    for _ in range(rounds):
        for provider, step in steps.items():
            start = time.perf_counter()
            for _ in range(calls[provider]):
                step()
            samples[provider].append((time.perf_counter() - start) / calls[provider] * 1e6)
    return {provider: statistics.median(v) for provider, v in samples.items()}


def main(argv: list[str] | None = None) -> int:
    rounds = int((argv or sys.argv[1:] or ["9"])[0])
    torch._dynamo.config.cache_size_limit = 64
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median us per call over {rounds} rounds;")
    print("in brackets: speed relative to the compiled copy floor (above 1 is faster)\n")
    for name, size in CASES:
        medians = measure(name, size, rounds)
        floor = medians["floor"]
        cells = ", ".join(f"{p} {us:.1f} ({floor / us:.2f}x)" for p, us in medians.items())
        print(f"{name} {size}: {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
