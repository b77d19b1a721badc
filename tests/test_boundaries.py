"""Where complex values meet code the pass does not rewrite, and graphs it must not touch."""

from __future__ import annotations

import logging

import torch
from complex_testing import compile_and_compare, dynamo_graph, normalize_graph, run_pass
from rotary_models import BufferRotary
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code
from torch.testing import FileCheck

import inductor_complex


def test_op_without_rule_mid_chain_is_bridged_and_correct(caplog):
    # An FFT has no real-pair rule: the chain is rewritten up to it, bridged
    # around it, and rewritten again after it.
    def fn(x, t):
        z = torch.view_as_complex(x) * t
        w = torch.fft.fft(z, dim=0)
        return torch.view_as_real(w * t)

    with caplog.at_level(logging.INFO, logger="inductor_complex"):
        report, fallbacks = compile_and_compare(fn, torch.randn(4, 3, 2), torch.randn(3, dtype=torch.complex64))
    assert report.count("bridged") == 1 and report.count("rewritten") >= 3
    # torch.fft.fft is a composite: eager runs it as aten._fft_c2c, which the
    # pass puts in its place and bridges.
    (inlined,) = [d for d in report.decisions if d.action == "inlined"]
    assert inlined.op == "torch.fft.fft"
    bridged = [d for d in report.decisions if d.action == "bridged"]
    assert bridged[0].op == "aten._fft_c2c.default" and "no rule for _fft_c2c" in bridged[0].reason
    # The log names the op and the user's source line.
    message = next(r.getMessage() for r in caplog.records if "bridged" in r.getMessage())
    assert "_fft_c2c" in message and "w = torch.fft.fft(z, dim=0)" in message
    assert "test_boundaries.py" in message
    # Inductor still runs the FFT (forward and backward) eagerly; the
    # multiplications around it became generated code.
    assert "aten._fft_c2c.default" in fallbacks.beyond_edges
    assert not any("mul" in op for op in fallbacks.ops), fallbacks.ops
    assert counters["inductor_complex"]["bridged"] == 1


def test_new_complex_output_of_an_inference_graph_has_a_storage_of_its_own():
    # Eager's product is a new tensor; returned as a view of a real buffer made
    # under the inference graph's no_grad, a later in-place write with grad
    # would raise. One copy (aten.complex) at the edge gives it its own storage.
    def fn(x, t):
        return torch.view_as_complex(x) * t

    report, fallbacks = compile_and_compare(fn, torch.randn(5, 2), torch.randn(5, dtype=torch.complex64), grad=False)
    assert report.count("exit_view") == 1
    assert fallbacks.beyond_edges == []
    assert fallbacks.ops.count("aten.complex.default") == 1, fallbacks.ops
    compiled = torch.compile(fn, options={"pre_grad_custom_pass": inductor_complex.ComplexToRealPass()})
    out = compiled(torch.randn(5, 2), torch.randn(5, dtype=torch.complex64))
    assert out._base is None
    out.mul_(torch.randn(5, dtype=torch.complex64, requires_grad=True))  # as eager allows


def test_graph_without_complex_values_is_left_exactly_as_it_was():
    def fn(x):
        return torch.relu(x) * 2

    gm = dynamo_graph(fn, torch.randn(3))
    before = normalize_graph(gm)
    nodes_before = list(gm.graph.nodes)
    report = run_pass(gm)
    assert normalize_graph(gm) == before
    assert list(gm.graph.nodes) == nodes_before
    assert report.decisions == []


def test_graph_without_fake_tensors_is_left_unchanged(caplog):
    # Metadata claims complex values, but there is no fake mode to run rules
    # under and the only op is an unknown callable: the pass must not touch it.
    # (A rewrite that fails midway is covered by the undo test below.)
    graph = torch.fx.Graph()
    z = graph.placeholder("z")
    z.meta["val"] = torch.empty(3, dtype=torch.complex64, device="meta")
    odd = graph.call_function(lambda v: v, (z,))
    odd.meta["val"] = z.meta["val"]
    graph.output((odd,))
    text_before = str(graph)
    with caplog.at_level(logging.INFO, logger="inductor_complex"):
        inductor_complex.ComplexToRealPass()(graph)  # must not raise
    assert str(graph) == text_before


def test_rewrite_that_fails_midway_is_undone(monkeypatch):
    # Break the graph lint at the end of the walk: everything done must be undone.
    def fn(x, t):
        return torch.view_as_real(torch.view_as_complex(x) * t)

    gm = dynamo_graph(fn, torch.randn(3, 2), torch.randn(3, dtype=torch.complex64))
    before = normalize_graph(gm)
    nodes_before = list(gm.graph.nodes)

    def broken_lint():
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(gm.graph, "lint", broken_lint)
    complex_pass = inductor_complex.ComplexToRealPass()
    complex_pass(gm.graph)  # must not raise
    monkeypatch.undo()
    gm.recompile()
    assert list(gm.graph.nodes) == nodes_before
    assert normalize_graph(gm) == before
    assert counters["inductor_complex"]["pass_failed"] == 1


def test_generated_code_has_no_complex_kernel_fallback():
    model = BufferRotary(head_dim=8, max_seq=16)
    xq, xk = torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8)
    for fused in (True, False):  # the CPU kernel for the rope (the default for large ones only), the generic rewrite
        torch._dynamo.reset()
        complex_pass = inductor_complex.ComplexToRealPass(fused_rotary=fused)
        compiled = torch.compile(model, options={"pre_grad_custom_pass": complex_pass})
        with torch.no_grad():
            _, (code,) = run_and_get_code(compiled, xq, xk)
        FileCheck().check_not("aten.mul").check_not("view_as_complex").run(code)
        # The rotation is the fused kernel, or generated code: a C++ loop reads the table.
        FileCheck().check("inductor_complex.rotary_embedding_cpu" if fused else "cpp_fused").run(code)
    # Stock torch.compile, for contrast, calls the complex multiply eagerly.
    torch._dynamo.reset()
    with torch.no_grad():
        _, (stock_code,) = run_and_get_code(torch.compile(model), xq, xk)
    FileCheck().check("aten.mul").run(stock_code)


def test_writes_into_a_complex_input_reach_the_callers_tensor_when_compiled():
    def fn(z, t):
        z[0] = 2 + 3j  # a complex input, written in place
        z[1:] = z[1:] * t
        return torch.view_as_real(z).sum()

    z, t = torch.randn(3, 4, dtype=torch.complex64), torch.randn(4, dtype=torch.complex64)
    z_eager, z_compiled = z.clone(), z.clone()
    expected = fn(z_eager, t)
    complex_pass = inductor_complex.ComplexToRealPass()
    actual = torch.compile(fn, options={"pre_grad_custom_pass": complex_pass}, fullgraph=True)(z_compiled, t)
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(z_compiled, z_eager)
    report = complex_pass.last_report
    assert report.count("bridged") == 0 and report.count("kept") == 0, report.format()
    assert report.count("entry_view") == 2


def test_explain_lists_decisions_with_reasons_and_runs_the_function():
    def fn(x, t):
        z = torch.view_as_complex(x) * t
        return torch.view_as_real(torch.fft.fft(z, dim=0) * t)

    x, t = torch.randn(4, 3, 2), torch.randn(3, dtype=torch.complex64)
    explanation = inductor_complex.explain(fn, x, t)
    torch.testing.assert_close(explanation.output, fn(x, t))
    assert explanation.count("bridged") == 1 and explanation.count("rewritten") >= 3
    text = str(explanation)
    assert "bridged" in text and "no rule for _fft_c2c" in text and "torch.fft.fft(z, dim=0)" in text


def test_explain_with_backward_reports_the_graphs_after_autograd():
    def fn(x, w):
        return torch.fft.irfft(torch.fft.rfft(x) * w, n=8).square().sum()

    x, w = torch.randn(2, 8, requires_grad=True), torch.randn(5, dtype=torch.complex64, requires_grad=True)
    explanation = inductor_complex.explain(fn, x, w, backward=True, fused_rotary=False)
    assert explanation.graph_names == ["graph 0", "graph 0 (forward, after autograd)", "graph 0 (backward, after autograd)"]
    backward = explanation.reports[-1]
    # The FFT gradient's complex slice_scatter and scaling are rewritten; only the FFTs stay.
    assert backward.count("rewritten") >= 5, str(explanation)
    assert {d.op for d in backward.decisions if d.action in ("kept", "bridged")} <= {
        "aten._fft_r2c.default", "aten._fft_c2r.default", "aten._fft_c2c.default"}, str(explanation)
    assert x.grad is None and w.grad is None  # put back as they were


def test_explain_enters_higher_order_op_bodies_first_as_inductor_does():
    def inner(z):
        return (z * z.conj()).exp()

    def fn(z):
        return torch.utils.checkpoint.checkpoint(inner, z, use_reentrant=False).abs()

    z = torch.randn(4, dtype=torch.complex64)
    explanation = inductor_complex.explain(fn, z)
    torch.testing.assert_close(explanation.output, fn(z))
    assert len(explanation.graph_names) == 2, str(explanation)
    body_name, parent_name = explanation.graph_names
    assert parent_name == "graph 0" and body_name.startswith("graph 0 / "), explanation.graph_names
    body, parent = explanation.reports
    assert body.count("rewritten") == 3 and body.count("bridged") + body.count("kept") == 0, str(explanation)
    assert "tag_activation_checkpoint" in str(explanation)
