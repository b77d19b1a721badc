"""Shared helpers: capture the graphs the hook receives, run the pass, compare with eager."""

from __future__ import annotations

import contextlib
import functools
import re

import torch
import torch.fx

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks

# The pass's options for testing its rules: every site rewritten on this CPU
# (no fused kernel; no complex matrix product left to eager's BLAS, the
# default too, whose opt-in has its own tests in test_eager_kernels.py).
RULES_ONLY = {"fused_rotary": False, "complex_blas_on_cpu": False}

# Tolerances per dtype of the compared tensors (fp32 math reassociated by Inductor).
TOLERANCES = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.complex64: dict(atol=2e-5, rtol=2e-5),
    torch.float64: dict(atol=1e-12, rtol=1e-12),
    torch.complex128: dict(atol=1e-12, rtol=1e-12),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
}


def assert_close(actual, expected, **kwargs):
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, **kwargs)
        return
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, **{**TOLERANCES.get(expected.dtype, {}), **kwargs})
    else:
        assert actual == expected


def dynamo_graph(fn, *args, dynamic=False) -> torch.fx.GraphModule:
    """The torch-level graph Dynamo hands Inductor (what the pre-grad hook sees)."""
    captured = []

    def backend(gm, example_inputs):
        gm.example_inputs = list(example_inputs)  # in Dynamo's order, lifted closures included
        captured.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)(*args)
    assert len(captured) == 1, "expected one graph"
    return captured[0]


class FunctionModule(torch.nn.Module):
    """A plain function as a module, for torch.export."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def aten_graph(module, *args, dynamic_shapes=None) -> torch.fx.GraphModule:
    """The aten-level graph torch.export produces (what AOTInductor's hook sees).

    ``module`` may be a plain function.
    """
    if not isinstance(module, torch.nn.Module):
        module = FunctionModule(module)
    return torch.export.export(module, args, dynamic_shapes=dynamic_shapes).module()


def run_pass(gm: torch.fx.GraphModule, **options):
    complex_pass = ComplexToRealPass(**{**RULES_ONLY, **options})
    complex_pass(gm.graph)
    gm.graph.lint()
    gm.recompile()
    return complex_pass.last_report


# (torch ≥ 2.14 also heads backward nodes with "# Backward of forward node: File: ...".)
_NOISE = re.compile(r"^\s*(# File:|# No stacktrace|# code:|# Backward of forward node)")


def normalize_graph(gm: torch.fx.GraphModule) -> str:
    """``print_readable`` without source-line comments, blank lines and pytree plumbing."""
    text = gm.print_readable(print_output=False)
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line.strip() and not _NOISE.match(line))


def clone_args(args, requires_grad=False):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.detach().clone()
            if requires_grad and (a.is_floating_point() or a.is_complex()):
                a.requires_grad_(True)
        out.append(a)
    return out


def compile_and_compare(
    fn, *args, dynamic=None, grad=True, options=None, mark_dynamic=None, complex_pass=None, post_grad=False, **tol
):
    """Compile ``fn`` with the pass, compare outputs and input gradients with eager.

    Returns ``(report, fallbacks)``: what the pass did to the last graph and which
    complex ops Inductor still refused. Pass ``complex_pass`` to read the reports
    of every graph afterwards; ``post_grad=True`` installs its post-grad
    companion too, so the fallbacks count the backward graph's.
    """
    options = {**RULES_ONLY, **(options or {})}
    eager_args = clone_args(args, requires_grad=grad)
    compiled_args = clone_args(args, requires_grad=grad)
    if mark_dynamic:
        for index, dim in mark_dynamic:
            torch._dynamo.mark_dynamic(compiled_args[index], dim)
    expected = fn(*eager_args)
    torch._dynamo.reset()
    if complex_pass is None:
        complex_pass = ComplexToRealPass(**options)
    hooks = complex_pass.inductor_options() if post_grad else {"pre_grad_custom_pass": complex_pass}
    compiled = torch.compile(fn, dynamic=dynamic, options=hooks, fullgraph=True)
    with count_complex_fallbacks() as fallbacks:
        actual = compiled(*compiled_args)
    assert_close(actual, expected, **tol)
    if grad:
        outs = [o for o in (expected if isinstance(expected, (list, tuple)) else [expected])]
        seeds = [torch.randn_like(o) for o in outs]
        loss_e = sum((torch.view_as_real(o) if o.is_complex() else o).mul(
            torch.view_as_real(s) if s.is_complex() else s).sum() for o, s in zip(outs, seeds))
        outs_c = actual if isinstance(actual, (list, tuple)) else [actual]
        loss_c = sum((torch.view_as_real(o) if o.is_complex() else o).mul(
            torch.view_as_real(s) if s.is_complex() else s).sum() for o, s in zip(outs_c, seeds))
        loss_e.backward()
        loss_c.backward()
        for a_c, a_e in zip(compiled_args, eager_args):
            if isinstance(a_e, torch.Tensor) and a_e.requires_grad:
                assert (a_c.grad is None) == (a_e.grad is None)
                if a_e.grad is not None:
                    assert_close(a_c.grad, a_e.grad, **tol)
    return complex_pass.last_report, fallbacks


def _train(model, data, run, optimizer_cls, steps):
    optimizer = optimizer_cls(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = run(data)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses, [p.detach().clone() for p in model.parameters()]


def compare_training(make_model, data, optimizer_cls=torch.optim.SGD, steps=3, dynamic=None, complex_pass=None, **tol):
    """Train ``make_model()`` a few steps eagerly and compiled with the pass
    (before and after autograd), from the same initial parameters; compare the
    losses and the parameters after each run. Returns ``(report, fallbacks)``
    as :func:`compile_and_compare` does."""
    torch.manual_seed(0)
    eager_model = make_model()
    torch.manual_seed(0)
    compiled_model = make_model()
    eager_losses, eager_params = _train(eager_model, data, eager_model, optimizer_cls, steps)
    torch._dynamo.reset()
    complex_pass = complex_pass or ComplexToRealPass(**RULES_ONLY)
    compiled = torch.compile(compiled_model, fullgraph=True, dynamic=dynamic, options=complex_pass.inductor_options())
    with count_complex_fallbacks() as fallbacks:
        losses, params = _train(compiled_model, data, compiled, optimizer_cls, steps)
    assert_close(losses, eager_losses, **tol)
    assert_close(params, eager_params, **tol)
    return complex_pass.last_report, fallbacks


@contextlib.contextmanager
def captured_logs(caplog, level="INFO"):
    import logging

    with caplog.at_level(getattr(logging, level), logger="inductor_complex"):
        yield caplog


def assert_unary_gradients_match_eager(op, points):
    """float64 gradients of ``view_as_real(op(z))`` through the rewritten graph vs eager autograd.

    ``points`` are (re, im) pairs; every one must get a finite gradient.
    """
    def fn(x):
        return torch.view_as_real(op(torch.view_as_complex(x)))

    x = torch.tensor(points, dtype=torch.float64)
    gm = dynamo_graph(fn, x.clone().requires_grad_())  # captured for autograd, as torch.compile would
    report = run_pass(gm)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    seed = torch.randn(len(points), 2, dtype=torch.float64)
    eager_x, rewritten_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    (fn(eager_x) * seed).sum().backward()
    (gm(rewritten_x)[0] * seed).sum().backward()
    assert torch.isfinite(rewritten_x.grad).all()
    torch.testing.assert_close(rewritten_x.grad, eager_x.grad, rtol=1e-10, atol=1e-10)


@functools.cache
def _executorch_runtime_problem() -> str | None:
    """Why ExecuTorch's runtime cannot run even ``x + 1`` beside this torch, or None."""
    try:
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
    except ImportError as error:
        return f"executorch is not installed ({error})"

    class AddOne(torch.nn.Module):
        def forward(self, x):
            return x + 1

    x = torch.zeros(2)
    try:
        lowered = to_edge_transform_and_lower(torch.export.export(AddOne(), (x,))).to_executorch()
        (result,) = Runtime.get().load_program(lowered.buffer).load_method("forward").execute([x])
        assert torch.equal(result, x + 1)
    except Exception as error:  # noqa: BLE001 - any failure here is ExecuTorch's with this torch, not ours
        return f"executorch cannot run a real x + 1 beside torch {torch.__version__} (it is built for another): {error}"
    return None


def require_executorch_runtime() -> None:
    """Skip unless ExecuTorch's runtime works with this torch: executorch 1.5.1
    is built against torch 2.13, and its runtime refuses programs exported by
    other releases ("tensor does not have a device" on torch 2.11)."""
    import pytest

    problem = _executorch_runtime_problem()
    if problem:
        pytest.skip(problem)
