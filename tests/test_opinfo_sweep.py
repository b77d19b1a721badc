"""Every OpInfo op with complex support, through the pass, against eager.

For each op in PyTorch's ``op_db`` whose CPU dtypes include complex64 and
complex128, each sample input is captured by Dynamo (samples it cannot
capture in one graph are recorded as "not captured"), the pass rewrites the
graph, and the rewritten graph (not an Inductor compile: too slow) runs and
is compared with eager, NaNs included. Each op is then

* ``rewritten``: some node rewritten and nothing kept or bridged,
* ``bridged``: some complex op kept as it was (correct, not compiled),
* ``failing``: wrong numbers or an exception from the rewritten graph,
* ``not captured`` / ``no complex graph``: nothing the pass could act on.

Any failing op fails the test. CI runs a bounded subset; set
``INDUCTOR_COMPLEX_FULL_SWEEP=1`` for every op, which also writes
``perf/results/opinfo_sweep.md``.
"""

from __future__ import annotations

import collections
import os
import pathlib
import time

import torch
from complex_testing import TOLERANCES, run_pass

from inductor_complex import ComplexToRealPass
from inductor_complex.complex_to_real_pass import is_backward_graph
from torch.utils._pytree import tree_flatten, tree_unflatten

FULL = os.environ.get("INDUCTOR_COMPLEX_FULL_SWEEP") == "1"
CI_OPS = 60  # first ops alphabetically in CI
# A comma-separated list of OpInfo names sweeps only those (all their samples), e.g. while writing a rule.
ONLY = [name for name in os.environ.get("INDUCTOR_COMPLEX_SWEEP_OPS", "").split(",") if name]
SAMPLES = 6 if FULL or ONLY else 2
RESULTS = pathlib.Path(__file__).resolve().parent.parent / "perf" / "results" / "opinfo_sweep.md"
BACKWARD_RESULTS = RESULTS.with_name("opinfo_sweep_backward.md")


def _complex_ops():
    from torch.testing._internal.common_methods_invocations import op_db

    ops = []
    for op in op_db:
        try:
            dtypes = op.supported_dtypes("cpu")
        except Exception:
            continue
        if torch.complex64 in dtypes and torch.complex128 in dtypes:
            ops.append(op)
    return sorted(ops, key=lambda op: (op.name, op.variant_test_name))


def _op_id(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _clone(tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach().clone() if isinstance(x, torch.Tensor) else x for x in leaves], spec)


def _same(actual, expected) -> str | None:
    """None when equal (per-dtype tolerance, NaNs in the same places), else why not."""
    a_leaves, _ = tree_flatten(actual)
    e_leaves, _ = tree_flatten(expected)
    if len(a_leaves) != len(e_leaves):
        return "different number of outputs"
    for a, e in zip(a_leaves, e_leaves):
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor) or a.dtype != e.dtype or a.shape != e.shape:
                return f"output {getattr(a, 'dtype', type(a))}{tuple(getattr(a, 'shape', ()))} for {e.dtype}{tuple(e.shape)}"
            tol = TOLERANCES.get(e.dtype, {})
            # Reassociated sums (matmul, reductions) drift a little more than elementwise math.
            tol = {k: v * 50 for k, v in tol.items()}
            try:
                torch.testing.assert_close(a, e, equal_nan=True, **tol)
            except AssertionError as error:
                return str(error).splitlines()[0] + " " + " ".join(str(error).splitlines()[1:4])
        elif a != e and not (a != a and e != e):
            return f"{a!r} != {e!r}"
    return None


def _sample_function(op, sample):
    """(fn, tensors): the sample's call as a function of its tensors."""
    args = (sample.input, *sample.args)
    leaves, spec = tree_flatten((args, sample.kwargs))
    positions = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]

    def fn(*tensors):
        filled = list(leaves)
        for i, t in zip(positions, tensors):
            filled[i] = t
        call_args, call_kwargs = tree_unflatten(filled, spec)
        return op.op(*call_args, **call_kwargs)

    return fn, [leaves[i] for i in positions]


def _run_sample(op, sample):
    """(status, detail) for one sample: rewritten | bridged | failing | not captured | no complex graph."""
    fn, tensors = _sample_function(op, sample)
    try:
        expected = fn(*_clone(tensors))
        again = fn(*_clone(tensors))
    except Exception as error:  # eager itself refuses this sample
        return "not captured", f"eager: {type(error).__name__}"
    if _same(again, expected) is not None:
        return "not captured", "nondeterministic"
    reports = []

    def backend(gm, example_inputs):
        reports.append(run_pass(gm))
        return gm.forward

    torch._dynamo.reset()
    try:
        compiled = torch.compile(fn, backend=backend, fullgraph=True)
        actual = compiled(*_clone(tensors))
    except Exception as error:
        if not reports:
            return "not captured", f"{type(error).__name__}"
        # The pass ran. Is it the rewrite, or does Dynamo's graph fail by itself
        # (e.g. its own runtime asserts on data-dependent sizes)?
        torch._dynamo.reset()
        try:
            torch.compile(fn, backend=lambda gm, example_inputs: gm.forward, fullgraph=True)(*_clone(tensors))
        except Exception:
            return "not captured", f"fails without the pass too: {type(error).__name__}"
        return "failing", f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    report = reports[0] if reports else None
    if report is None or not report.decisions:
        return "no complex graph", ""
    why = _same(actual, expected)
    if why is not None:
        return "failing", why
    if report.count("kept") + report.count("bridged"):
        reasons = sorted({f"{d.op}: {d.reason}" for d in report.decisions if d.action in ("kept", "bridged")})
        return "bridged", "; ".join(reasons)[:300]
    if report.count("rewritten"):
        return "rewritten", ""
    return "no complex graph", ""


def _differentiable(tensors) -> list:
    return [t.detach().clone().requires_grad_(t.is_floating_point() or t.is_complex()) for t in tensors]


def _gradients(fn, inputs, seed: int):
    """Gradients of ``fn``'s outputs that require grad, seeded with fixed random
    cotangents, w.r.t. the inputs that require grad; None when nothing does."""
    outputs = [o for o in tree_flatten(fn(*inputs))[0] if isinstance(o, torch.Tensor) and o.requires_grad]
    wrt = [t for t in inputs if t.requires_grad]
    if not outputs or not wrt:
        return None
    gen = torch.Generator().manual_seed(seed)
    seeds = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in outputs]
    grads = torch.autograd.grad(outputs, wrt, seeds, allow_unused=True)
    return [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, wrt)]


def _run_backward(op, sample):
    """(status, detail) of the sample's backward graph after the post-grad pass:
    rewritten | bridged | failing | no complex graph | not captured (no gradient)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._inductor.decomposition import select_decomp_table

    if not op.supports_autograd:
        return "not captured", "no autograd"
    fn, tensors = _sample_function(op, sample)
    try:
        expected = _gradients(fn, _differentiable(tensors), seed=0)
    except Exception as error:
        return "not captured", f"eager backward: {type(error).__name__}"
    if expected is None:
        return "not captured", "no gradient"
    complex_pass = ComplexToRealPass(fused_rotary=False)
    backward_reports = []

    def compiler(gm, example_inputs):
        complex_pass.post_grad(gm.graph)
        gm.recompile()
        if is_backward_graph(gm.graph):
            backward_reports.append(complex_pass.post_grad.last_report)
        return make_boxed_func(gm.forward)

    aot = aot_autograd(fw_compiler=compiler, bw_compiler=compiler, decompositions=select_decomp_table())

    def backend(gm, example_inputs):
        complex_pass(gm.graph)
        gm.recompile()
        return aot(gm, example_inputs)

    def stock():  # the same pipeline without the passes
        def boxed(gm, example_inputs):
            return make_boxed_func(gm.forward)

        torch._dynamo.reset()
        stock_aot = aot_autograd(fw_compiler=boxed, bw_compiler=boxed, decompositions=select_decomp_table())
        return _gradients(torch.compile(fn, backend=stock_aot, fullgraph=True), _differentiable(tensors), seed=0)

    torch._dynamo.reset()
    try:
        actual = _gradients(torch.compile(fn, backend=backend, fullgraph=True), _differentiable(tensors), seed=0)
    except Exception as error:
        try:
            stock()
        except Exception:
            return "not captured", f"fails without the pass too: {type(error).__name__}"
        return "failing", f"backward {type(error).__name__}: {str(error).splitlines()[0][:200]}"
    why = _same(actual, expected)
    if why is not None:
        try:
            stock_differs = _same(stock(), expected) is not None
        except Exception:
            stock_differs = False
        if stock_differs:  # AOTAutograd's own decompositions depart from eager here
            return "stock differs too", f"gradient: {why}"
        return "failing", f"gradient: {why}"
    decisions = [d for report in backward_reports for d in report.decisions]
    if not decisions:
        return "no complex graph", ""
    kept = sorted({f"{d.op}: {d.reason}" for d in decisions if d.action in ("kept", "bridged")})
    if kept:
        return "bridged", "; ".join(kept)[:300]
    return "rewritten", ""


_ORDER = ["failing", "stock differs too", "bridged", "rewritten", "no complex graph", "not captured"]


# Ops whose results are uninitialized memory: nothing to compare.
_UNINITIALIZED = ("empty", "new_empty", "new_empty_strided", "empty_like", "empty_strided", "empty_permuted")


def _classify(op, run=_run_sample):
    """The op's status over its samples (the worst one) and the details; ``run``
    checks one sample (:func:`_run_sample`, or :func:`_run_backward`)."""
    if op.name in _UNINITIALIZED:
        return "not captured", ["uninitialized memory"]
    statuses, details = [], []
    for dtype in (torch.complex64, torch.complex128):
        for index, sample in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
            if index >= SAMPLES:
                break
            status, detail = run(op, sample)
            statuses.append(status)
            if detail:
                details.append(f"{status}: {detail}")
    for status in _ORDER:
        if status in statuses:
            return status, details
    return "not captured", ["no samples"]


def _write_table(results, seconds, title: str, path: pathlib.Path, total: int):
    counts = collections.Counter(status for status, _ in results.values())
    swept = "" if len(results) == total else f" (a run in progress: {len(results)} of {total} swept so far, alphabetically)"
    lines = [
        f"# OpInfo sweep: {title}",
        "",
        f"torch {torch.__version__}; ops in op_db with CPU complex64+complex128 support: {total}{swept}; "
        f"up to {SAMPLES} samples each in complex64 and in complex128; {seconds:.0f} s.",
        "",
        "| status | ops |",
        "|---|---|",
        *[f"| {status} | {counts.get(status, 0)} |" for status in _ORDER],
        "",
        f"Covered (rewritten): {counts.get('rewritten', 0)} of {len(results)}.",
        "",
        "| op | status | detail |",
        "|---|---|---|",
    ]
    for name, (status, details) in sorted(results.items()):
        details = list(dict.fromkeys(details))  # complex64 and complex128 samples often agree
        detail = "<br>".join(d.replace("|", "\\|") for d in details[:2])
        lines.append(f"| {name} | {status} | {detail} |")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _sweep(run, title: str, path: pathlib.Path) -> None:
    import warnings

    ops = _complex_ops()
    if ONLY:
        ops = [op for op in ops if op.name in ONLY]
        assert ops, f"no OpInfo named {ONLY}"
    elif not FULL:
        ops = ops[:CI_OPS]
    start = time.time()
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in ops:
            results[_op_id(op)] = _classify(op, run)
            if FULL and not ONLY:  # after each op: a long run stopped early still leaves its table
                _write_table(results, time.time() - start, title, path, len(ops))
    failing = {name: details for name, (status, details) in results.items() if status == "failing"}
    counts = collections.Counter(status for status, _ in results.values())
    print(f"\n{title} over {len(results)} ops: {dict(counts)}")
    assert not failing, "\n".join(f"{name}: {details}" for name, details in failing.items())


def test_opinfo_sweep():
    _sweep(_run_sample, "complex ops through the pass", RESULTS)


def test_opinfo_sweep_backward():
    # The backward graph of each sample (through AOTAutograd with Inductor's
    # decompositions) after the post-grad pass, gradients against eager's.
    _sweep(_run_backward, "backward graphs after the post-grad pass", BACKWARD_RESULTS)
