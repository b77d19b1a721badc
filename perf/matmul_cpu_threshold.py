"""Where eager's complex BLAS (on the pairs) starts to beat the real GEMM form, on CPU.

Prints, per size, the median ms of one compiled training step (forward and
backward) of a square complex64 product ``a @ b`` with
``complex_blas_on_cpu=False`` (the real GEMM form), ``True`` (the op that calls
eager's complex BLAS), and stock ``torch.compile``, timed interleaved in one
process. The result sets ``MIN_MACS_PER_THREAD`` in
``inductor_complex/eager_kernels.py``. Run on a quiet core:
``OMP_NUM_THREADS=1 taskset -c 1 python -m perf.matmul_cpu_threshold``.
"""

from __future__ import annotations

import argparse

import torch

from inductor_complex import ComplexToRealPass

from .timing import time_interleaved

SIZES = (16, 32, 64, 96, 128, 192, 256, 384)


def product(a, b):
    return a @ b


def _training_step(fn, a, b, grad):
    def step():
        a.grad = b.grad = None
        torch.autograd.backward([fn(a, b)], [grad])
    return step


def main(sizes=SIZES, rounds: int = 15) -> None:
    torch._dynamo.config.cache_size_limit = 64
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); median ms per training step")
    for n in sizes:
        torch.manual_seed(0)
        a, b = (torch.randn(n, n, dtype=torch.complex64, requires_grad=True) for _ in range(2))
        grad = torch.randn(n, n, dtype=torch.complex64)
        variants = {
            "real_gemm": torch.compile(product, options=ComplexToRealPass(complex_blas_on_cpu=False).inductor_options()),
            "complex_blas": torch.compile(product, options=ComplexToRealPass(complex_blas_on_cpu=True).inductor_options()),
            "stock": torch.compile(product),
        }
        steps = {name: _training_step(fn, a, b, grad) for name, fn in variants.items()}
        for step in steps.values():
            step()  # compiles
        spreads = time_interleaved(steps, "cpu", rounds, min_sample_ms=20)
        cells = ", ".join(f"{name} {spread.median_ms:.3f}" for name, spread in spreads.items())
        print(f"{n}^3 ({n ** 3} multiply-adds): {cells}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    main(tuple(args.sizes), args.rounds)
