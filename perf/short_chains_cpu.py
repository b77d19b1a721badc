"""Short complex chains on CPU: the pass's pair loop against eager's kernels.

Where Inductor's pair loops stay scalar (no planes: AVX2, or
``planes_on_cpu=False``), a product that is only returned, and one cheap op of
graph inputs under it, stay eager's (``inductor_complex/lone_products.py``).
This script times, interleaved, for a few two-op programs on 2^20 complex64:

    eager       uncompiled
    stock       ``torch.compile`` alone
    rewritten   the pass with scalar pair loops, that choice switched off
    kept        the pass with scalar pair loops, as it ships
    planes      the pass with pair math in planes (``planes_on_cpu=True``), rewritten

Run on a quiet core: ``OMP_NUM_THREADS=1 taskset -c 1 python -m perf.short_chains_cpu [rounds] [dtype]``
(dtype ``complex64``, the default, or ``complex128``, whose pairs take no plane).
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from inductor_complex import ComplexToRealPass, lone_products

PROGRAMS = {
    "a.conj() * b": lambda a, b: a.conj() * b,
    "(a - b) * b": lambda a, b: (a - b) * b,
    "(a + b) * b": lambda a, b: (a + b) * b,
    "(a * 2) * b": lambda a, b: (a * 2) * b,
    "(a * 1j) * b": lambda a, b: (a * 1j) * b,
    "(-a) * b": lambda a, b: (-a) * b,
    "a * b": lambda a, b: a * b,
    "(a * b) * a": lambda a, b: (a * b) * a,
    "a.exp() * b": lambda a, b: a.exp() * b,
    "(a * b.real) * b": lambda a, b: (a * b.real) * b,
}


CALLS_PER_SAMPLE = 5


def _compiled(fn, inputs, keep: bool, planes: bool = False):
    compiled = torch.compile(fn, options=ComplexToRealPass(planes_on_cpu=planes).inductor_options())
    chooses = lone_products.faster_in_eager
    if not keep:  # (the choice is made while compiling, on the first call)
        lone_products.faster_in_eager = lambda *args: None
    try:
        compiled(*inputs)
    finally:
        lone_products.faster_in_eager = chooses
    return compiled


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    rounds = int(args[0]) if args else 9
    dtype = getattr(torch, args[1], None) if len(args) > 1 else torch.complex64
    if dtype not in (torch.complex64, torch.complex128):
        raise SystemExit(f"dtype must be complex64 or complex128, got {args[1]!r}")
    # The switched-off choice does not change the pass's cache key: compile afresh.
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    torch._dynamo.config.cache_size_limit = 64
    inputs = tuple(torch.randn(1 << 20, dtype=dtype) for _ in range(2))
    print(f"torch {torch.__version__}, 2^20 {str(dtype)[6:]}, {torch.get_num_threads()} threads, "
          f"median (min) of {rounds} rounds of {CALLS_PER_SAMPLE} calls, ms per call")
    with torch.no_grad():
        for label, fn in PROGRAMS.items():
            torch._dynamo.reset()
            steps = {"eager": fn, "stock": torch.compile(fn),
                     "rewritten": _compiled(fn, inputs, keep=False), "kept": _compiled(fn, inputs, keep=True),
                     "planes": _compiled(fn, inputs, keep=False, planes=True)}
            expected = fn(*inputs)
            for step in steps.values():
                torch.testing.assert_close(step(*inputs), expected)
            times: dict[str, list[float]] = {name: [] for name in steps}
            for _ in range(rounds):
                for name, step in steps.items():
                    start = time.perf_counter()
                    for _ in range(CALLS_PER_SAMPLE):
                        step(*inputs)
                    times[name].append((time.perf_counter() - start) / CALLS_PER_SAMPLE * 1e3)
            print(f"{label}: " + ", ".join(f"{name} {statistics.median(v):.2f} ({min(v):.2f})"
                                           for name, v in times.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
