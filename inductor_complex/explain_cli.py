"""``python -m inductor_complex explain path/to/file.py:name``: what the pass
does to a whole model, graph by graph.

``name`` in the file is a function of no arguments that returns
``(model, args)`` or ``(model, args, kwargs)``: the callable to explain (an
``nn.Module`` or a function) and example inputs. The file is imported as a
module, so its ``if __name__ == "__main__":`` block does not run.

The report, per graph Dynamo captures: the complex ops found and what became
of each (rewritten, by op; bridged or kept, with the reason and the source
line), the rotary sites fused or refused (with the reason), and the zero-copy
views at the graph's edges. Then, unless ``--no-compile``, the model is
compiled by Inductor with the pass and run once (forward and, with
``--backward``, backward), and the complex ops Inductor still left to eager
are listed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib.util
import sys
from pathlib import Path

import torch
from torch.utils._pytree import tree_leaves

from .complex_to_real_pass import ComplexToRealPass
from .explain import Explanation, explain
from .fallbacks import ComplexFallbacks, count_complex_fallbacks
from .report import Report


class TargetError(ValueError):
    """The ``file.py:name`` given cannot be explained; the message says why."""


def load_target(spec: str):
    """``(model, args, kwargs)`` from ``path/to/file.py:name``."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise TargetError(f"{spec!r}: expected path/to/file.py:name")
    path = Path(path_text)
    if not path.is_file():
        raise TargetError(f"{path}: no such file")
    module_spec = importlib.util.spec_from_file_location(f"_explained_{path.stem}", path)
    if module_spec is None or module_spec.loader is None:
        raise TargetError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module  # (Dynamo finds a frame's globals by its module's name)
    sys.path.insert(0, str(path.resolve().parent))  # the file's own imports of its neighbours
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    make = getattr(module, name, None)
    if not callable(make):
        raise TargetError(f"{path} defines no function {name!r}")
    made = make()
    if not (isinstance(made, tuple) and len(made) in (2, 3) and callable(made[0])):
        raise TargetError(f"{name}() must return (model, args) or (model, args, kwargs); it returned {type(made).__name__}")
    model, args = made[0], made[1]
    kwargs = made[2] if len(made) == 3 else {}
    if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
        raise TargetError(f"{name}(): args must be a tuple and kwargs a dict")
    return model, tuple(args), kwargs


_NOT_OPS = ("entry_view", "exit_view", "bridge_view", "inlined")


def _graph_section(name: str, report: Report) -> str:
    decisions = report.decisions
    # Views the pass adds (at the edges, around bridged ops) and calls it
    # inlined are not ops of the model.
    ops = [d for d in decisions if d.action not in _NOT_OPS]
    if not decisions:
        return f"{name}: no complex values"
    by_action = collections.Counter(d.action for d in ops)
    lines = [f"{name}: {len(ops)} complex ops ("
             + ", ".join(f"{n} {a}" for a, n in sorted(by_action.items())) + "); zero-copy views: "
             f"{report.count('entry_view')} entry, {report.count('exit_view')} exit, {report.count('bridge_view')} around bridges"]
    rewritten = collections.Counter(d.op for d in ops if d.action == "rewritten")
    if rewritten:
        lines.append("  rewritten: " + ", ".join(f"{op} x{n}" if n > 1 else op for op, n in rewritten.most_common()))
    for decision in ops:
        if decision.action in ("bridged", "kept", "pass_failed"):
            lines.append(f"  {decision.action} {decision.op}: {decision.reason} [at {decision.source}]")
    for decision in ops:
        if decision.action == "fused":
            lines.append(f"  rotary site fused into the kernel [at {decision.source}]")
        elif decision.action == "fused_refused":
            lines.append(f"  rotary site not fused: {decision.reason} [at {decision.source}]")
    note = report.slow_compile_note()
    if note:
        lines.append(f"  {note}")
    return "\n".join(lines)


def format_explanation(explanation: Explanation) -> str:
    names = explanation.graph_names or [f"graph {i}" for i in range(len(explanation.reports))]
    if not names:
        return "no graphs captured"
    return "\n\n".join(_graph_section(n, r) for n, r in zip(names, explanation.reports))


def _clone_inputs(args, kwargs):
    """Fresh copies of the example inputs (the explained run may write into them)."""
    def copy(value):
        if isinstance(value, torch.Tensor):
            return value.detach().clone().requires_grad_(value.requires_grad)
        return value

    return tuple(map(copy, args)), {k: copy(v) for k, v in kwargs.items()}


def inductor_leftovers(model, args, kwargs, backward: bool, **options) -> ComplexFallbacks:
    """The complex ops Inductor left to eager, compiling ``model`` with the pass
    (compile caches off: a hit would lower nothing to count)."""
    compiled = torch.compile(model, options=ComplexToRealPass(**options).inductor_options())
    caches = contextlib.ExitStack()
    caches.enter_context(torch._inductor.config.patch(fx_graph_cache=False))
    caches.enter_context(torch._functorch.config.patch(enable_autograd_cache=False))
    with caches, count_complex_fallbacks() as fallbacks:
        output = compiled(*args, **kwargs)
        outputs = [t for t in tree_leaves(output) if isinstance(t, torch.Tensor) and t.requires_grad]
        if backward and outputs:
            torch.autograd.backward(outputs, [torch.ones_like(t) for t in outputs])
    return fallbacks


def _counted(ops: list[str]) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in collections.Counter(ops).most_common())


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("target", help="path/to/file.py:name, name() returning (model, args[, kwargs])")
    parser.add_argument("--backward", action="store_true", help="also the graphs after autograd, forward and backward")
    parser.add_argument("--no-compile", action="store_true", help="skip compiling with Inductor (no list of what it left to eager)")
    parser.add_argument("--fused-rotary", choices=("auto", "on", "off"), default="auto",
                        help="the pass's fused_rotary option (auto: decided per site)")
    return parser


def run(args: argparse.Namespace) -> int:
    try:
        model, inputs, kwargs = load_target(args.target)
    except TargetError as error:
        print(f"explain: {error}", file=sys.stderr)
        return 2
    options = {"fused_rotary": {"auto": None, "on": True, "off": False}[args.fused_rotary]}
    call_args, call_kwargs = _clone_inputs(inputs, kwargs)
    explanation = explain(lambda *a: model(*a, **call_kwargs), *call_args, backward=args.backward, **options)
    print(format_explanation(explanation))
    if not args.no_compile:
        call_args, call_kwargs = _clone_inputs(inputs, kwargs)
        left = inductor_leftovers(model, call_args, call_kwargs, args.backward, **options)
        computing = left.beyond_edges
        others = [op for op in left.ops if op not in computing]
        print()
        print(f"Inductor left to eager: {len(computing)} complex ops that compute"
              + (f" ({_counted(computing)})" if computing else "")
              + f"; {len(others)} zero-copy views and output copies" + (f" ({_counted(others)})" if others else ""))
    return 0
