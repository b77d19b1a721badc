"""Benchmark of rotary-embedding implementations (needs a CUDA GPU; see --cpu-smoke).

Run from the repository root::

    PYTHONPATH=. python perf/bench_rotary.py [--quick] [--out DIR] [--cpu-smoke]

Providers (one axis), all computing Llama's interleaved complex rope on q and k:

    eager_complex      the Llama reference function, eager
    compile_complex    torch.compile of the same, stock Inductor
    compile_c2r        torch.compile + ComplexToRealPass(fused_rotary=False)
    compile_c2r_fused  torch.compile + ComplexToRealPass(fused_rotary=True)
    triton_op          torch.ops.inductor_complex.rotary_embedding called directly
    flash_attn_triton  flash-attn's Triton rotary, interleaved=True (when importable)
    liger_rope         Liger's rope (when importable; note: rotate-half pairing, same traffic)
    copy_floor         q.clone(), k.clone(): the memory-traffic floor

Timings are medians of ``triton.testing.do_bench``. GB/s counts the minimum traffic: read
q and k, write both outputs, read the table once (backward: the same for the gradients).
"forward" runs with inputs that require grad (the training forward) except for decode
shapes, which are forward-only and run without grad. Results go to
``<out>/rotary_<gpu>_<date>.{json,md,png}``.

--cpu-smoke runs tiny shapes on CPU (the kernel through the Triton interpreter) to check
the script end to end; its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # run from a checkout without installing

from inductor_complex.llama_rope import (
    apply_rotary_emb_complex as llama_apply_rotary_emb,  # noqa: E402
)

MODES = ("forward", "backward", "forward+backward")


@dataclasses.dataclass(frozen=True)
class Config:
    shape: str  # label: training / long_context / decode_b1 / decode_b64
    batch: int
    seq: int
    q_heads: int
    kv_heads: int
    head_dim: int
    dtype: str  # "float32" | "bfloat16"; the table is always float32 (complex64)
    mode: str  # one of MODES

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def needs_grad(self) -> bool:
        return not self.shape.startswith("decode")

    def min_bytes(self) -> int:
        """Bytes an ideal kernel moves: inputs in, outputs out, the table once."""
        elements = self.batch * self.seq * (self.q_heads + self.kv_heads) * self.head_dim
        element_size = torch.tensor([], dtype=self.torch_dtype).element_size()
        table = self.seq * self.head_dim * 4  # float32 (cos, sin) pairs
        one_pass = 2 * elements * element_size + table
        return 2 * one_pass if self.mode == "forward+backward" else one_pass


@dataclasses.dataclass(frozen=True)
class Result:
    config: Config
    provider: str
    ms: Optional[float] = None
    gbps: Optional[float] = None
    max_abs_error: Optional[float] = None  # forward output vs eager_complex
    error: Optional[str] = None


# --------------------------------------------------------------------------------------
# configurations
# --------------------------------------------------------------------------------------

SHAPES = {
    "training": (8, 4096, 32, 8, 128),
    "long_context": (1, 32768, 32, 8, 128),
    "decode_b1": (1, 1, 32, 8, 128),
    "decode_b64": (64, 1, 32, 8, 128),
}
SMOKE_SHAPES = {
    "training": (2, 8, 4, 2, 16),
    "decode_b1": (1, 1, 4, 2, 16),
}


def get_configs(quick: bool = False, cpu_smoke: bool = False) -> list[Config]:
    shapes = SMOKE_SHAPES if cpu_smoke else SHAPES
    if quick and not cpu_smoke:
        shapes = {name: shapes[name] for name in ("training", "decode_b64")}
    dtypes = ("bfloat16",) if quick else ("float32", "bfloat16")
    configs = []
    for shape, dims in shapes.items():
        modes = ("forward",) if shape.startswith("decode") else MODES
        for dtype in dtypes:
            for mode in modes:
                configs.append(Config(shape, *dims, dtype=dtype, mode=mode))
    return configs


# --------------------------------------------------------------------------------------
# providers
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tables:
    """The same rotation in each provider's input format."""

    freqs_cis: torch.Tensor  # complex64 [S, D/2]
    pairs: torch.Tensor  # float32 [1, S, D/2, 2]
    cos: torch.Tensor  # [S, D/2], input dtype (flash-attn wants x.dtype)
    sin: torch.Tensor
    cos_full: torch.Tensor  # [1, S, D], input dtype (Liger's Hugging Face layout)
    sin_full: torch.Tensor

    @classmethod
    def build(cls, seq: int, head_dim: int, dtype: torch.dtype, device) -> "Tables":
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
        angles = torch.outer(torch.arange(seq, device=device).float(), inv_freq)
        freqs_cis = torch.polar(torch.ones_like(angles), angles)
        cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
        return cls(
            freqs_cis=freqs_cis,
            pairs=torch.view_as_real(freqs_cis).unsqueeze(0),
            cos=cos,
            sin=sin,
            cos_full=torch.cat([cos, cos], dim=-1).unsqueeze(0),
            sin_full=torch.cat([sin, sin], dim=-1).unsqueeze(0),
        )


# A provider builds, once per shape and dtype, a function (q, k) -> (q_out, k_out), and
# names the context its runs need (the Inductor config for the pass providers).
Builder = Callable[[Tables], Callable]


def _compiled(pass_options: Optional[dict]) -> tuple[Builder, Callable]:
    def context():
        from torch._inductor import config

        if pass_options is None:
            return config.patch(pre_grad_custom_pass=None)
        from inductor_complex import ComplexToRealPass

        return config.patch(pre_grad_custom_pass=ComplexToRealPass(**pass_options))

    def build(tables: Tables):
        torch._dynamo.reset()  # one compile per provider, shape and dtype
        compiled = torch.compile(llama_apply_rotary_emb, dynamic=False)
        return lambda q, k: compiled(q, k, tables.freqs_cis)

    return build, context


def _pass_available() -> Optional[str]:
    try:
        from inductor_complex import ComplexToRealPass  # noqa: F401
    except Exception as error:  # noqa: BLE001 - report any import failure and go on
        return f"inductor_complex.ComplexToRealPass unavailable: {error!r}"
    return None


def _triton_op(tables: Tables):
    from inductor_complex.kernels import rotary  # noqa: F401  (registers the op)

    op = torch.ops.inductor_complex.rotary_embedding
    return lambda q, k: op(q, k, tables.pairs)


def _flash_attn(tables: Tables):
    try:  # the autograd wrapper, when the package imports in full
        from flash_attn.layers.rotary import apply_rotary_emb as rotate
    except Exception:  # noqa: BLE001 - fall back to the forward-only Triton entry point
        from flash_attn.ops.triton.rotary import apply_rotary as rotate
    return lambda q, k: (
        rotate(q, tables.cos, tables.sin, interleaved=True),
        rotate(k, tables.cos, tables.sin, interleaved=True),
    )


def _liger(tables: Tables):
    from liger_kernel.ops.rope import LigerRopeFunction

    def rope(q, k):
        # Liger takes [B, H, S, D]; these transposed views keep the [B, S, H, D] storage.
        q_out, k_out = LigerRopeFunction.apply(q.transpose(1, 2), k.transpose(1, 2), tables.cos_full, tables.sin_full)
        return q_out.transpose(1, 2), k_out.transpose(1, 2)

    return rope


def _importable(module: str) -> Optional[str]:
    try:
        __import__(module)
    except Exception as error:  # noqa: BLE001
        return f"{module} not importable: {error!r}"
    return None


def _providers(cpu_smoke: bool) -> dict[str, tuple[Optional[str], Builder, Callable]]:
    """name -> (reason it is unavailable or None, builder, context factory)."""
    null = contextlib.nullcontext
    pass_missing = _pass_available()
    gpu_only = "GPU-only provider" if cpu_smoke else None
    providers = {
        "eager_complex": (None, lambda t: (lambda q, k: llama_apply_rotary_emb(q, k, t.freqs_cis)), null),
        "compile_complex": (None, *_compiled(None)),
        "compile_c2r": (pass_missing, *_compiled({"fused_rotary": False})),
        "compile_c2r_fused": (pass_missing, *_compiled({"fused_rotary": True})),
        "triton_op": (_importable("triton"), _triton_op, null),
        "flash_attn_triton": (gpu_only or _importable("flash_attn.ops.triton.rotary"), _flash_attn, null),
        "liger_rope": (gpu_only or _importable("liger_kernel.ops.rope"), _liger, null),
        "copy_floor": (None, lambda t: (lambda q, k: (q.clone(), k.clone())), null),
    }
    return providers


# --------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------


def _time_ms(fn: Callable, device: str, warmup_ms: int, rep_ms: int) -> float:
    if device == "cuda":
        import triton.testing

        return triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")
    fn()  # CPU smoke: wall clock, only to exercise the plumbing
    samples = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def _mode_fn(provider: str, rotate: Callable, q, k, mode: str) -> Callable:
    """The timed closure for one mode. Backward reuses one retained forward graph."""
    if mode == "forward":
        return lambda: rotate(q, k)
    outs = rotate(q, k)
    grads = [torch.randn_like(o) for o in outs]
    if provider == "copy_floor":  # the floor of a backward is copying the gradients
        if mode == "backward":
            return lambda: (grads[0].clone(), grads[1].clone())
        return lambda: (rotate(q, k), grads[0].clone(), grads[1].clone())
    if mode == "backward":
        return lambda: torch.autograd.grad(outs, (q, k), grads, retain_graph=True)
    return lambda: torch.autograd.grad(rotate(q, k), (q, k), grads)


def _tolerance(dtype: torch.dtype) -> float:
    return 1e-4 if dtype == torch.float32 else 3e-2


def _group_key(config: Config) -> tuple:
    return (config.shape, config.dtype)


def run(
    configs: list[Config],
    device: str,
    warmup_ms: int = 25,
    rep_ms: int = 100,
    cpu_smoke: bool = False,
    debug: bool = False,
) -> list[Result]:
    """Time every provider on every config; a failing provider is recorded, not fatal."""
    results: list[Result] = []
    providers = _providers(cpu_smoke)
    groups: dict[tuple, list[Config]] = {}
    for config in configs:
        groups.setdefault(_group_key(config), []).append(config)

    for (shape, dtype), group in groups.items():
        first = group[0]
        print(f"== {shape} {dtype}: B={first.batch} S={first.seq} Hq={first.q_heads} Hk={first.kv_heads} D={first.head_dim}")
        torch.manual_seed(0)
        dt = first.torch_dtype
        q_base = torch.randn(first.batch, first.seq, first.q_heads, first.head_dim, device=device, dtype=dt)
        k_base = torch.randn(first.batch, first.seq, first.kv_heads, first.head_dim, device=device, dtype=dt)
        tables = Tables.build(first.seq, first.head_dim, dt, device)
        with torch.no_grad():
            expected = llama_apply_rotary_emb(q_base, k_base, tables.freqs_cis)

        for name, (unavailable, build, context) in providers.items():
            if unavailable:
                results.extend(Result(c, name, error=unavailable) for c in group)
                print(f"   {name:18s} skipped: {unavailable}")
                continue
            started = time.perf_counter()
            try:
                with context():
                    results.extend(_run_provider(name, build, tables, q_base, k_base, expected, group, device, warmup_ms, rep_ms))
            except Exception as error:  # noqa: BLE001 - one broken provider must not stop the run
                message = f"{type(error).__name__}: {str(error).splitlines()[0][:300] if str(error) else ''}"
                results.extend(Result(c, name, error=message) for c in group)
                print(f"   {name:18s} FAILED: {message}")
                if debug:
                    traceback.print_exc()
                continue
            summary = "  ".join(
                f"{r.config.mode}={r.ms:.4f}ms" if r.ms is not None else f"{r.config.mode}=ERR" for r in results[-len(group):]
            )
            print(f"   {name:18s} {summary}  ({time.perf_counter() - started:.1f}s)")
    return results


def _run_provider(name, build, tables, q_base, k_base, expected, group, device, warmup_ms, rep_ms) -> list[Result]:
    rotate = build(tables)
    needs_grad = group[0].needs_grad
    # Fresh leaves per provider: some providers (Liger) rotate their inputs in place.
    q = q_base.clone().requires_grad_(needs_grad)
    k = k_base.clone().requires_grad_(needs_grad)

    error = None
    if name not in ("copy_floor", "liger_rope"):  # liger pairs halves, not neighbours
        with torch.no_grad() if not needs_grad else contextlib.nullcontext():
            outs = rotate(q.detach().clone().requires_grad_(needs_grad), k.detach().clone().requires_grad_(needs_grad))
        error = max((o.float() - e.float()).abs().max().item() for o, e in zip(outs, expected))
        if error > _tolerance(q.dtype) * max(1.0, expected[0].abs().max().item()):
            raise AssertionError(f"{name} differs from eager_complex by {error:.3g}")

    results = []
    for config in group:
        try:
            fn = _mode_fn(name, rotate, q, k, config.mode)
            ms = _time_ms(fn, device, warmup_ms, rep_ms)
            results.append(Result(config, name, ms=ms, gbps=config.min_bytes() / ms / 1e6, max_abs_error=error))
        except Exception as err:  # noqa: BLE001 - e.g. a forward-only provider in backward mode
            results.append(Result(config, name, max_abs_error=error, error=f"{type(err).__name__}: {str(err)[:200]}"))
    return results


# --------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------


def _environment(device: str) -> dict:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except Exception:  # noqa: BLE001 - no git, or no commit yet
        sha = "unknown"
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu-smoke",
        "torch": torch.__version__,
        "triton": triton_version,
        "git_sha": sha,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def _markdown(results: list[Result], env: dict) -> str:
    providers = list(dict.fromkeys(r.provider for r in results))
    rows: dict[Config, dict[str, Result]] = {}
    for r in results:
        rows.setdefault(r.config, {})[r.provider] = r
    lines = [
        f"# Rotary embedding benchmark: {env['gpu']}",
        "",
        f"torch {env['torch']}, triton {env['triton']}, git {env['git_sha'][:12]}, {env['date']}.",
        "Cells: median ms (GB/s of minimum traffic). `-`: unavailable or failed (see JSON).",
        "",
        "| shape | dtype | mode | " + " | ".join(providers) + " |",
        "|" + "---|" * (3 + len(providers)),
    ]
    for config, by_provider in rows.items():
        cells = []
        for p in providers:
            r = by_provider.get(p)
            cells.append(f"{r.ms:.4f} ({r.gbps:.0f})" if r is not None and r.ms is not None else "-")
        lines.append(f"| {config.shape} | {config.dtype} | {config.mode} | " + " | ".join(cells) + " |")
    errors = sorted({(r.provider, r.error) for r in results if r.error})
    if errors:
        lines += ["", "Unavailable / failed:", ""] + [f"- `{p}`: {e}" for p, e in errors]
    return "\n".join(lines) + "\n"


def _plot(results: list[Result], path: Path) -> Optional[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot")
        return None
    configs = list(dict.fromkeys(r.config for r in results))
    providers = list(dict.fromkeys(r.provider for r in results))
    gbps = {(r.config, r.provider): r.gbps or 0.0 for r in results}
    width = 0.8 / len(providers)
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(configs)), 5))
    for i, provider in enumerate(providers):
        xs = [j + i * width for j in range(len(configs))]
        ax.bar(xs, [gbps[(c, provider)] for c in configs], width, label=provider)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(configs))])
    ax.set_xticklabels([f"{c.shape}\n{c.dtype}\n{c.mode}" for c in configs], fontsize=7)
    ax.set_ylabel("GB/s (minimum traffic)")
    ax.set_title("Rotary embedding (higher is better; 0 = unavailable)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def report(results: list[Result], out_dir: Path, device: str) -> dict[str, Path]:
    """Write JSON, markdown and (if matplotlib is present) a PNG; return their paths."""
    env = _environment(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu_slug = "".join(ch if ch.isalnum() else "_" for ch in env["gpu"].lower()).strip("_")
    stem = out_dir / f"rotary_{gpu_slug}_{datetime.date.today():%Y%m%d}"
    payload = {
        "environment": env,
        "results": [dict(dataclasses.asdict(r), config=dataclasses.asdict(r.config)) for r in results],
    }
    paths = {"json": stem.with_suffix(".json"), "md": stem.with_suffix(".md")}
    paths["json"].write_text(json.dumps(payload, indent=2))
    markdown = _markdown(results, env)
    paths["md"].write_text(markdown)
    plot = _plot(results, stem.with_suffix(".png"))
    if plot:
        paths["png"] = plot
    print(markdown)
    for kind, path in paths.items():
        print(f"wrote {kind}: {path}")
    return paths


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="bf16, training and decode_b64 only, shorter timing")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "perf" / "results", help="output directory")
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny shapes on CPU via the Triton interpreter")
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failing providers")
    args = parser.parse_args(argv)

    if args.cpu_smoke:
        device = "cpu"
    elif torch.cuda.is_available():
        device = "cuda"
    else:
        print("bench_rotary: no CUDA device; nothing to measure (use --cpu-smoke to check the script).")
        return 0

    warmup_ms, rep_ms = (10, 40) if args.quick else (25, 100)
    started = time.perf_counter()
    configs = get_configs(quick=args.quick, cpu_smoke=args.cpu_smoke)
    results = run(configs, device, warmup_ms, rep_ms, cpu_smoke=args.cpu_smoke, debug=args.debug)
    report(results, args.out, device)
    print(f"total {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
