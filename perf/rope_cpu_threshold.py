"""Where the fused CPU rotary kernel, and pair math in planes, start to pay, at decode shapes.

Prints, per size, the median µs per compiled call of the Llama rope with
``fused_rotary=False`` (Inductor's own code for the pair math) as a scalar
loop (``planes_on_cpu=False``) and in planes (``True``: vector loops, plus an
extern ``view.dtype`` call for each of q, k, the table and the two outputs),
and with ``fused_rotary=True`` (the extern call to the C kernel), timed
interleaved in one process. The results set ``CPU_KERNEL_MIN_PAIRS`` in
``inductor_complex/rotary/pattern.py`` and ``MIN_PAIRS_PER_EXTERN_CALL`` in
``inductor_complex/pair_planes.py``.
Run on a quiet core: ``OMP_NUM_THREADS=1 taskset -c 1 python -m perf.rope_cpu_threshold``.
"""

from __future__ import annotations

import statistics
import time

import torch

from inductor_complex import ComplexToRealPass
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

# (batch, q heads, kv heads, head dim) at S=1: 128 to 32768 pairs per q.
SHAPES = ((1, 4, 1, 64), (4, 8, 2, 64), (16, 8, 2, 64), (16, 16, 4, 64), (16, 32, 8, 64), (16, 32, 8, 128))
VARIANTS = (("scalar", False, False), ("planes", False, True), ("fused", True, False))  # (name, fused, planes)


def _time(fn, args, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def main(rounds: int = 11, calls: int = 300) -> None:
    torch._dynamo.config.cache_size_limit = 64
    for batch, q_heads, kv_heads, head_dim in SHAPES:
        args = (torch.randn(batch, 1, q_heads, head_dim), torch.randn(batch, 1, kv_heads, head_dim),
                precompute_freqs_cis(head_dim, 100)[50:51])
        compiled = {}
        with torch.no_grad():
            for name, fused, planes in VARIANTS:
                # Dynamo keeps one compiled entry per backend, so every variant stays compiled.
                options = ComplexToRealPass(fused_rotary=fused, planes_on_cpu=planes).inductor_options()
                # dynamic=False: after the first shape, automatic dynamic shapes would
                # otherwise compile every later shape with symbolic sizes.
                compiled[name] = torch.compile(apply_rotary_emb_complex, options=options, dynamic=False)
                compiled[name](*args)
            times = {name: [] for name in compiled}
            for _ in range(rounds):
                for name, fn in compiled.items():
                    times[name].append(_time(fn, args, calls))
        medians = {name: round(statistics.median(v), 1) for name, v in times.items()}
        print(f"pairs per q {batch * q_heads * head_dim // 2:6d}: median us per call {medians}", flush=True)


if __name__ == "__main__":
    main()
