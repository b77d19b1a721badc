"""Results as JSON (every row with its conditions), a markdown table and a PNG plot."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

import torch

from .compile_cost import CompileCost
from .providers import PROVIDERS
from .run import Row

REPO_ROOT = Path(__file__).resolve().parents[1]


def environment(device: str) -> dict:
    """What every result row is conditioned on."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
    except Exception:  # noqa: BLE001 - no git or no commit: say so
        sha = "unknown"
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if device == "cuda":
        name = torch.cuda.get_device_name()
    else:
        name = f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads ({os.cpu_count()} cores)"
    return {
        "device": device, "device_name": name, "torch": torch.__version__, "triton": triton_version,
        "git_sha": sha, "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def _cell(row: Row) -> str:
    if row.status != "ok":
        return "n/a" if row.status == "unavailable" else "failed"
    speed = f" ({row.speed_vs_stock:.2f}x)" if row.speed_vs_stock is not None else ""
    return f"{row.median_ms:.3g}{speed}"


def markdown(rows: list[Row], costs: list[CompileCost], env: dict, size: str, dynamic: bool = False) -> str:
    providers = [p for p in PROVIDERS if any(r.provider == p for r in rows)]
    shapes = ", dynamic shapes: every compile with dynamic=True" if dynamic else ""
    lines = [
        f"# Benchmarks on {env['device_name']} ({size} sizes{shapes})",
        "",
        f"torch {env['torch']}, triton {env['triton']}, git {env['git_sha'][:12]}, {env['date']}.",
        "Cells: median ms per step over interleaved rounds (speed relative to stock compile: above 1 is faster);",
        "`limit` is the same model with the rope removed, or a copy of the rope's inputs (the memory floor).",
        "`n/a`: does not apply here, `failed`: see the JSON for why. Min and max per cell are in the JSON and the",
        "spread table below.",
        "",
        "| subject | shapes | " + " | ".join(providers) + " |",
        "|---|---|" + "---|" * len(providers),
    ]
    by_subject: dict[str, dict[str, Row]] = {}
    for row in rows:
        by_subject.setdefault(row.subject, {})[row.provider] = row
    for subject, cells in by_subject.items():
        note = next(iter(cells.values())).note
        lines.append(f"| {subject} | {note} | " + " | ".join(_cell(cells[p]) if p in cells else "" for p in providers) + " |")
    lines += ["", "Spread of `pass` and `stock` (min / median / max ms):", "", "| subject | stock | pass |", "|---|---|---|"]
    for subject, cells in by_subject.items():
        spread = [
            f"{cells[p].min_ms:.3g} / {cells[p].median_ms:.3g} / {cells[p].max_ms:.3g}" if p in cells and cells[p].status == "ok" else "-"
            for p in ("stock", "pass")
        ]
        lines.append(f"| {subject} | {spread[0]} | {spread[1]} |")
    failures = [r for r in rows if r.status == "failed"]
    if failures:
        lines += ["", "Failed:", ""] + [f"- {r.subject} / {r.provider}: {r.reason}" for r in failures]
    if costs:
        lines += [
            "", "Compile time (caches off; first step minus a later one, forward and backward) and the pass's share:", "",
            "| what | layers | Dynamo graph nodes | compile s | pass s (calls) | pass share |", "|---|---|---|---|---|---|",
        ]
        for c in costs:
            lines.append(f"| {c.what} | {c.layers or '-'} | {c.graph_nodes} | {c.compile_s:.2f} | {c.pass_s:.3f} ({c.pass_calls}) | {c.pass_share:.1%} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: Path, env: dict, dynamic: bool = False) -> Path | None:
    """Speed relative to stock compile, a bar per provider per subject."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    subjects = list(dict.fromkeys(r.subject for r in rows))
    providers = [p for p in PROVIDERS if p != "stock" and any(r.provider == p and r.speed_vs_stock for r in rows)]
    speeds = {(r.subject, r.provider): r.speed_vs_stock for r in rows if r.speed_vs_stock}
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(subjects) * max(1, len(providers)) / 2 + 1.5))
    height = 0.8 / max(1, len(providers))
    for i, provider in enumerate(providers):
        ys = [s + i * height for s in range(len(subjects))]
        ax.barh(ys, [speeds.get((s, provider), 0) for s in subjects], height=height, label=provider)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([s + 0.4 - height / 2 for s in range(len(subjects))], subjects)
    ax.invert_yaxis()
    ax.set_xlabel("speed relative to stock torch.compile (median step time; > 1 is faster)")
    shapes = ", dynamic shapes" if dynamic else ""
    ax.set_title(f"{env['device_name']}, torch {env['torch']}, git {env['git_sha'][:8]}{shapes}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(rows: list[Row], costs: list[CompileCost], out_dir: Path, device: str, size: str,
          dynamic: bool = False) -> dict[str, Path]:
    env = environment(device)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"perf_{device}_{size}{'_dynamic' if dynamic else ''}"
    paths = {"json": stem.with_suffix(".json"), "md": stem.with_suffix(".md")}
    payload = {
        "environment": env, "size": size, "dynamic": dynamic,
        "rows": [{**dataclasses.asdict(r), **env} for r in rows],
        "compile_cost": [{**dataclasses.asdict(c), "pass_share": c.pass_share, **env} for c in costs],
    }
    paths["json"].write_text(json.dumps(payload, indent=1) + "\n")
    paths["md"].write_text(markdown(rows, costs, env, size, dynamic))
    png = plot(rows, stem.with_suffix(".png"), env, dynamic)
    if png is not None:
        paths["png"] = png
    return paths
