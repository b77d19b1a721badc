"""Which real form should a complex matrix product take? Time and accuracy, side by side.

Run from the repository root::

    PYTHONPATH=. python perf/bench_complex_matmul.py [--quick] [--out DIR] [--device cuda]

Forms, each a function of the real ``[..., 2]`` layouts the pass works on,
compiled with Inductor:

    four      (AC - BD, AD + BC): four real products
    stacked1  [A; B] @ [C | D]: the same four products as one GEMM of 2M×K by K×2N
    block1    [A | B] @ [[C, D], [-D, C]]: one GEMM of M×2K by 2K×2N, sums inside the GEMM
    interleaved1  the pair layout itself: a's [.., M, K, 2] read as [.., M, 2K] times an
              interleaved block of b (2K×2N) gives [.., M, N, 2] directly: no copy of a or the result
    gauss3    AC, BD, (A+B)(C+D) - AC - BD: three products, two more additions
    eager     ``torch.matmul`` on the complex tensors, eager (complex BLAS)

Time: medians of interleaved rounds (each form runs once per round, so load
from other processes lands on all of them alike); ratios are to ``four``.
Accuracy: the largest error against a float64 reference, as a fraction of the
largest magnitude of that part (reference: numpy long double), on random inputs and on "nearly real" inputs
(imaginary parts 1e-4 of the real ones), where the imaginary part of the product
is small and Gauss's form subtracts two large products to get it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

FORMS = ("four", "stacked1", "block1", "interleaved1", "gauss3", "eager")
# (batch, M, K, N): a complex linear layer on tokens, a square one, a batched
# per-mode product (FNO-like), and a state recurrence (LRU-like, thin).
SHAPES = [(1, 1024, 256, 256), (1, 512, 512, 512), (64, 32, 32, 32), (1, 4096, 64, 64)]
QUICK_SHAPES = [(1, 256, 128, 128), (16, 16, 16, 16)]


def four(a, b):
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    return torch.stack((ar @ br - ai @ bi, ar @ bi + ai @ br), -1)


def gauss3(a, b):
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    t1, t2, t3 = ar @ br, ai @ bi, (ar + ai) @ (br + bi)
    return torch.stack((t1 - t2, t3 - t1 - t2), -1)


def stacked1(a, b):
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    products = torch.cat((ar, ai), -2) @ torch.cat((br, bi), -1)  # [.., 2M, 2N]: AC AD / BC BD
    m, n = ar.shape[-2], br.shape[-1]
    ac, ad = products[..., :m, :n], products[..., :m, n:]
    bc, bd = products[..., m:, :n], products[..., m:, n:]
    return torch.stack((ac - bd, ad + bc), -1)


def block1(a, b):
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    left = torch.cat((ar, ai), -1)  # [.., M, 2K]
    right = torch.cat((torch.cat((br, bi), -1), torch.cat((-bi, br), -1)), -2)  # [.., 2K, 2N]
    out = left @ right
    n = br.shape[-1]
    return torch.stack((out[..., :n], out[..., n:]), -1)


def interleaved1(a, b):
    br, bi = b[..., 0], b[..., 1]
    # rows 2k / 2k+1 take a's re / im of k; columns 2n / 2n+1 give re / im of n.
    even = torch.stack((br, bi), -1)  # [.., K, N, 2]
    odd = torch.stack((-bi, br), -1)
    block = torch.stack((even, odd), -3).flatten(-4, -3).flatten(-2)  # [.., 2K, 2N]
    out = a.flatten(-2) @ block
    return out.unflatten(-1, (-1, 2))


def eager(a, b):
    return torch.view_as_real(torch.view_as_complex(a) @ torch.view_as_complex(b))


def inputs(shape, dtype, device, nearly_real=False, seed=0):
    batch, m, k, n = shape
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(batch, m, k, 2, generator=g, dtype=torch.float64)
    b = torch.randn(batch, k, n, 2, generator=g, dtype=torch.float64)
    if nearly_real:
        a[..., 1] *= 1e-4
        b[..., 1] *= 1e-4
    return a.to(device, dtype), b.to(device, dtype)


def longdouble_product(a, b):
    """The complex product in numpy's long double (64-bit mantissa on x86), as [..., 2]."""
    import numpy as np

    a, b = (x.detach().cpu().double().numpy().astype(np.longdouble) for x in (a, b))
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    return np.stack((ar @ br - ai @ bi, ar @ bi + ai @ br), -1)


def relative_errors(fn, shape, dtype, device, nearly_real):
    a, b = inputs(shape, dtype, device, nearly_real)
    reference = torch.from_numpy(longdouble_product(a, b).astype("float64"))
    with torch.no_grad():
        result = fn(a, b).double()
    errors = []
    for part in (0, 1):
        scale = reference[..., part].abs().max().item()
        errors.append((result[..., part].cpu() - reference[..., part]).abs().max().item() / scale)
    return errors


def median_times(fns, args, rounds, backward, device):
    """Median seconds per call for each function, measured in interleaved rounds."""
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    times = {name: [] for name in fns}

    def call(fn):
        if backward:
            a, b = (x.detach().requires_grad_() for x in args)
            fn(a, b).sum().backward()
        else:
            with torch.no_grad():
                fn(*args)

    for fn in fns.values():  # compile and warm up
        for _ in range(3):
            call(fn)
    for _ in range(rounds):
        for name, fn in fns.items():
            sync()
            start = time.perf_counter()
            call(fn)
            sync()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, few rounds")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default="perf/results")
    args = parser.parse_args()
    shapes = QUICK_SHAPES if args.quick else SHAPES
    rounds = 5 if args.quick else 30
    # dynamic=False: each shape gets its own static kernels, as a model's layer
    # would; every shape × dtype × grad mode is a recompile, so lift the limit.
    torch._dynamo.config.recompile_limit = 256
    torch._dynamo.config.accumulated_recompile_limit = 1024
    compiled = {name: torch.compile(globals()[name], dynamic=False) for name in FORMS if name != "eager"}
    compiled["eager"] = eager

    rows = []
    for dtype in (torch.float32, torch.float64):
        for shape in shapes:
            row = {"dtype": str(dtype).replace("torch.", ""), "shape": list(shape)}
            for mode, backward in (("forward", False), ("forward+backward", True)):
                data = inputs(shape, dtype, args.device)
                row[mode] = median_times(compiled, data, rounds, backward, args.device)
            for nearly_real in (False, True):
                key = "error_nearly_real" if nearly_real else "error_random"
                row[key] = {name: relative_errors(fn, shape, dtype, args.device, nearly_real) for name, fn in compiled.items()}
            rows.append(row)
            print(json.dumps(row), flush=True)

    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    machine = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    header = (
        f"complex matmul forms on {machine}; torch {torch.__version__}; git {sha}; "
        f"{datetime.date.today()}; medians of {rounds} interleaved rounds"
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"matmul_forms_{args.device}_{datetime.date.today()}"
    (out / f"{stem}.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    (out / f"{stem}.md").write_text(to_markdown(header, rows))
    print(to_markdown(header, rows))


def to_markdown(header, rows) -> str:
    lines = [header, "", "Time relative to `four` (lower is faster); error = max |error| / max |part| vs float64.", ""]
    lines.append("| dtype | batch×M×K×N | mode | " + " | ".join(FORMS) + " |")
    lines.append("|---|---|---|" + "---|" * len(FORMS))
    for row in rows:
        shape = "×".join(map(str, row["shape"]))
        for mode in ("forward", "forward+backward"):
            t = row[mode]
            cells = [f"{t[name] / t['four']:.2f}" for name in FORMS]
            lines.append(f"| {row['dtype']} | {shape} | {mode} ({t['four'] * 1e3:.2f} ms for four) | " + " | ".join(cells) + " |")
        for key, label in (("error_random", "error, random (re / im)"), ("error_nearly_real", "error, nearly real (re / im)")):
            cells = [f"{e[0]:.1e} / {e[1]:.1e}" for e in (row[key][name] for name in FORMS)]
            lines.append(f"| {row['dtype']} | {shape} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
