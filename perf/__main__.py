"""``python -m perf``: every benchmark, one entry point.

    python -m perf                         # full sizes on CUDA if there is one, else CPU
    python -m perf --quick --device cpu    # all subjects at small sizes, a few minutes
    python -m perf --tiny                  # CI: keeps the scripts working, numbers mean nothing
    python -m perf --only rope_train,fno_train --providers eager,stock,pass
    python -m perf --quick --device cpu --dynamic   # every compile with dynamic=True

Writes ``perf_<device>_<size>.{json,md,png}`` under ``--out``
(default ``perf/results``). The CUDA rotary-kernel sweep (GB/s against the
copy floor, other rope kernels) is ``perf/bench_rotary.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from . import compile_cost, report
from .providers import PROVIDERS
from .run import run_subject
from .subjects import SUBJECTS

# Per size: timing rounds, the shortest sample in ms, and compile-cost depths.
SETTINGS = {"tiny": (3, 0.5, (1, 2)), "quick": (7, 20.0, (1, 8, 32)), "full": (15, 50.0, (1, 8, 32))}


def _names(text: str | None, known, what: str) -> list[str]:
    if text is None:
        return list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; choose from {', '.join(known)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf", description=__doc__.split("\n\n")[0])
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="small sizes (CPU: a few minutes)")
    sizes.add_argument("--tiny", action="store_true", help="tiny sizes, few rounds (CI)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--only", help="comma-separated subjects (default: all)")
    parser.add_argument("--providers", help=f"comma-separated providers (default: {','.join(PROVIDERS)})")
    parser.add_argument("--no-compile-cost", action="store_true", help="skip the compile-time measurements")
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with dynamic=True (symbolic sizes, as after Dynamo sees a second size)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failing providers")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    rounds, min_sample_ms, depths = SETTINGS[size]
    subjects = _names(args.only, SUBJECTS, "subjects")
    providers = _names(args.providers, PROVIDERS, "providers")

    rows = []
    for name in subjects:
        print(f"{name} ...", file=sys.stderr, flush=True)
        rows += run_subject(name, size, args.device, providers, rounds, min_sample_ms, debug=args.debug,
                            dynamic=args.dynamic)
    costs = []
    if not args.no_compile_cost:
        print("compile cost ...", file=sys.stderr, flush=True)
        costs = compile_cost.llama_stacks(depths, args.device)
        if size != "tiny":  # (each takes tens of seconds to compile on a CPU)
            costs += compile_cost.inverse_trig(device=args.device)
    paths = report.write(rows, costs, args.out, args.device, size, dynamic=args.dynamic)
    print(paths["md"].read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    # torch's own complex wrapper is experimental: its failures are results, not ours.
    return 1 if any(r.status == "failed" and r.provider != "torch_wrapper" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
