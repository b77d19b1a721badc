"""What a real DFT costs against an FFT kernel, by size and transform.

Run from the repository root::

    PYTHONPATH=. python perf/bench_dft.py [--quick] [--out FILE]

For each transform (``rfft``, ``fft`` of a complex signal, ``irfft`` of a
spectrum, ``stft``) and length ``n``, over a batch of 64 signals:

    eager_fft   the program in eager PyTorch: its FFT kernel (pocketfft/MKL)
    eager_dft   the program after ``rewrite_exported_program`` (``real_ffts``, the
                default there), run by its ``module()`` in eager: DFT products
    et_fft      ExecuTorch (portable kernels), the program as exported, where it
                loads: the portable library has ``_fft_r2c`` and ``_fft_c2r``, but
                no way in for a complex input (``view_as_complex_copy``)
    et_dft      ExecuTorch (portable kernels), the rewritten program
    et_xnnpack  ExecuTorch with the XNNPACK partitioner, the rewritten program

Times are medians of interleaved rounds (perf/timing.py), one thread. The
bases' size (the n^2 limit) is listed beside them.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
import warnings
from pathlib import Path

import torch

from perf.timing import time_interleaved

BATCH = 64
SIZES = (16, 64, 256, 1024)
QUICK_SIZES = (16, 256)


class _Program(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _window(n):
    return torch.hann_window(n)


# transform → (the program, its input for length n)
TRANSFORMS = {
    "rfft": (lambda x: torch.view_as_real(torch.fft.rfft(x)), lambda n: torch.randn(BATCH, n)),
    "fft_c2c": (lambda x: torch.view_as_real(torch.fft.fft(torch.view_as_complex(x))), lambda n: torch.randn(BATCH, n, 2)),
    "irfft": (lambda x: torch.fft.irfft(torch.view_as_complex(x), n=2 * (x.shape[-2] - 1)),
              lambda n: torch.randn(BATCH, n // 2 + 1, 2)),
    "stft": (lambda x: torch.view_as_real(torch.stft(x, x.shape[-1] // 8, x.shape[-1] // 32, window=_window(x.shape[-1] // 8),
                                                     return_complex=True)),
             lambda n: torch.randn(BATCH // 8, 8 * n)),  # n_fft = n, hop n/4
}


def _executorch(program, partitioner):
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    lowered = to_edge_transform_and_lower(program, partitioner=partitioner).to_executorch()
    loaded = Runtime.get().load_program(lowered.buffer)
    method = loaded.load_method("forward")
    method.keep_alive = (lowered, loaded)  # (the method reads the program's buffer: it must outlive the call)
    return method


def _stock_runs_in_a_child(name: str, n: int) -> bool:
    """Whether ExecuTorch loads and runs the program as exported, in a child
    process: some stock programs end the process (a segmentation fault) rather than raise."""
    child = subprocess.run([sys.executable, "-m", "perf.bench_dft", "--probe", name, str(n)], capture_output=True)
    return child.returncode == 0


def _probe(name: str, n: int) -> None:
    fn, make_input = TRANSFORMS[name]
    x = make_input(n)
    _executorch(torch.export.export(_Program(fn), (x,)), []).execute([x])


def measure(name: str, n: int, rounds: int) -> dict:
    from inductor_complex import rewrite_exported_program

    fn, make_input = TRANSFORMS[name]
    x = make_input(n)
    exported = torch.export.export(_Program(fn), (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rewritten = rewrite_exported_program(exported)
    module = rewritten.module()
    bases = sum(v.numel() for k, v in rewritten.constants.items() if "dft" in k)  # (before ExecuTorch takes them)
    expected = fn(x)
    error = (module(x) - expected).abs().max().item() / expected.abs().max().item()
    steps = {"eager_fft": lambda: fn(x), "eager_dft": lambda: module(x)}
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        for provider, program, partitioner in (("et_fft", exported, []), ("et_dft", rewritten, []),
                                                ("et_xnnpack", rewritten, [XnnpackPartitioner()])):
            if provider == "et_fft" and not _stock_runs_in_a_child(name, n):
                print(f"  {name} n={n} et_fft: the stock program does not load or run (child process failed)", file=sys.stderr)
                continue
            try:
                method = _executorch(program, partitioner)
                method.execute([x])
                steps[provider] = lambda method=method: method.execute([x])
            except Exception as failure:  # noqa: BLE001 - a cell that says why
                steps.pop(provider, None)
                print(f"  {name} n={n} {provider}: {type(failure).__name__}: {str(failure).splitlines()[0][:80]}",
                      file=sys.stderr)
    except ImportError:
        pass
    times = time_interleaved(steps, "cpu", rounds, min_sample_ms=20)
    return {"transform": name, "n": n, "bases_elements": bases, "relative_error": error,
            **{provider: spread.median_ms for provider, spread in times.items()}}


def report(rows: list[dict]) -> str:
    providers = ("eager_fft", "eager_dft", "et_fft", "et_dft", "et_xnnpack")
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Real DFT against the FFT kernel (CPU)", "",
        f"{datetime.date.today()}, git {sha}, torch {torch.__version__}, one thread; `python perf/bench_dft.py`.",
        f"Batch of {BATCH} signals of length n (stft: {BATCH // 8} signals of 8n samples, n_fft = n, hop n/32).",
        "Medians of interleaved rounds, ms; `-`: does not load or run there. Ratios: DFT time over the FFT kernel's.", "",
        "| transform | n | bases (elements) | rel. error | " + " | ".join(providers) + " | eager dft/fft | ET dft/fft |",
        "|---|---|---|---|" + "---|" * len(providers) + "---|---|",
    ]
    for row in rows:
        cells = [f"{row[p]:.4f}" if p in row else "-" for p in providers]
        eager = f"{row['eager_dft'] / row['eager_fft']:.2f}"
        et = f"{row['et_dft'] / row['et_fft']:.2f}" if "et_fft" in row and "et_dft" in row else "-"
        lines.append(f"| {row['transform']} | {row['n']} | {row['bases_elements']} | {row['relative_error']:.1e} | "
                     + " | ".join(cells) + f" | {eager} | {et} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"lengths {QUICK_SIZES} only, fewer rounds")
    parser.add_argument("--out", type=Path, default=Path("perf/results/dft_cost_cpu.md"))
    parser.add_argument("--probe", nargs=2, metavar=("TRANSFORM", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        _probe(args.probe[0], int(args.probe[1]))
        return
    torch.set_num_threads(1)
    rows = []
    for name in TRANSFORMS:
        for n in QUICK_SIZES if args.quick else SIZES:
            rows.append(measure(name, n, rounds=5 if args.quick else 15))
            print(rows[-1], file=sys.stderr, flush=True)
    args.out.write_text(report(rows))
    print(report(rows))


if __name__ == "__main__":
    main()
