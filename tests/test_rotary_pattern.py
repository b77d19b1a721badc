"""The rotary pattern: which spellings of the idiom reach the fused kernel, and which do not.

On CPU the kernel runs under the Triton interpreter here (set for this module's
tests only: elsewhere CPU tensors take the C kernel); the pattern is forced on
with ``fused_rotary=True`` where a test runs a graph that is not Dynamo's.
"""

from __future__ import annotations

import unittest.mock

import expecttest
import pytest
import torch

pytest.importorskip("triton")

from complex_testing import (
    assert_close,
    aten_graph,
    clone_args,
    dynamo_graph,
    normalize_graph,
    run_pass,
)
from rotary_models import (
    BufferRotary,
    deepseek_apply_rotary_emb,
    llama_apply_rotary_emb,
    precompute_freqs_cis,
)

import inductor_complex
from inductor_complex.kernels import rotary as kernel
from inductor_complex.kernels import rotary_cpu

@pytest.fixture(autouse=True)
def triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


KERNEL_TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2),  # one bf16 ulp: rounding of the same f32 value
    torch.float16: dict(atol=2e-3, rtol=2e-3),
    torch.float64: dict(atol=1e-12, rtol=1e-12),
}


def _fused(report):
    return [d for d in report.decisions if d.action == "fused"]


def _refusals(report):
    return [d.reason for d in report.decisions if d.action == "fused_refused"]


def _kernel_calls(gm) -> int:
    return sum(1 for n in gm.graph.nodes if "rotary_embedding" in str(n.target))


def _check_rewritten(fn, *args):
    """Capture, rewrite with the fused path forced, run; return (gm, report)."""
    gm = dynamo_graph(fn, *args)
    report = run_pass(gm, fused_rotary=True)
    expected = fn(*args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    actual = gm(*gm.example_inputs)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want, **KERNEL_TOL[want.dtype])
    return gm, report


class TestRotaryPattern(expecttest.TestCase):
    def test_llama_idiom_q_and_k_share_one_launch(self):
        table = precompute_freqs_cis(8, 6)
        xq = torch.randn(2, 6, 4, 8, dtype=torch.bfloat16)
        xk = torch.randn(2, 6, 2, 8, dtype=torch.bfloat16)
        gm, report = _check_rewritten(lambda q, k: llama_apply_rotary_emb(q, k, table), xq, xk)
        self.assertEqual(len(_fused(report)), 2)
        self.assertEqual(_kernel_calls(gm), 1)
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_q_: "bf16[2, 6, 4, 8]", L_k_: "bf16[2, 6, 2, 8]", L_table_: "c64[6, 4]"):
        l_q_ = L_q_
        l_k_ = L_k_
        l_table_ = L_table_
        view_as_real_3: "f32[6, 4, 2]" = torch.view_as_real(l_table_);  l_table_ = None
        view_1: "f32[1, 6, 1, 4, 2]" = view_as_real_3.view(1, 6, 1, 4, 2);  view_as_real_3 = None
        squeeze: "f32[1, 6, 4, 2]" = view_1.squeeze(2);  view_1 = None
        rotary_embedding_default = torch.ops.inductor_complex.rotary_embedding.default(l_q_, l_k_, squeeze, torch.bfloat16);  l_q_ = l_k_ = squeeze = None
        getitem: "bf16[2, 6, 4, 8]" = rotary_embedding_default[0]
        getitem_1: "bf16[2, 6, 2, 8]" = rotary_embedding_default[1];  rotary_embedding_default = None
        return (getitem, getitem_1)""")

    def test_aten_graph_form(self):
        model = BufferRotary(head_dim=8, max_seq=16)
        xq, xk = torch.randn(1, 5, 2, 8), torch.randn(1, 5, 2, 8)
        gm = aten_graph(model, xq, xk)
        report = run_pass(gm, fused_rotary=True)
        self.assertEqual(len(_fused(report)), 2)
        self.assertEqual(_kernel_calls(gm), 1)
        assert_close(gm(xq, xk), model(xq, xk))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, xq, xk):
        xq: "f32[1, 5, 2, 8]"; xk: "f32[1, 5, 2, 8]";
        xq, xk, = fx_pytree.tree_flatten_spec(([xq, xk], {}), self._in_spec)
        freqs_cis: "c64[16, 4]" = self.freqs_cis
        view_as_real_3: "f32[16, 4, 2]" = torch.view_as_real(freqs_cis);  freqs_cis = None
        _guards_fn = self._guards_fn(xq, xk);  _guards_fn = None
        slice_tensor: "f32[5, 4, 2]" = torch.ops.aten.slice.Tensor(view_as_real_3, 0, 0, 5, 1);  view_as_real_3 = None
        _assert_tensor_metadata_default = torch.ops.aten._assert_tensor_metadata.default(xq, dtype = torch.float32, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata_default = None
        _assert_tensor_metadata_default_1 = torch.ops.aten._assert_tensor_metadata.default(xk, dtype = torch.float32, device = device(type='cpu'), layout = torch.strided);  _assert_tensor_metadata_default_1 = None
        view_1: "f32[1, 5, 1, 4, 2]" = slice_tensor.view(1, 5, 1, 4, 2);  slice_tensor = None
        squeeze: "f32[1, 5, 4, 2]" = view_1.squeeze(2);  view_1 = None
        rotary_embedding_default = torch.ops.inductor_complex.rotary_embedding.default(xq, xk, squeeze, torch.float32);  xq = xk = squeeze = None
        getitem: "f32[1, 5, 2, 8]" = rotary_embedding_default[0]
        getitem_1: "f32[1, 5, 2, 8]" = rotary_embedding_default[1];  rotary_embedding_default = None
        return pytree.tree_unflatten((getitem, getitem_1), self._out_spec)""")

    def test_view_into_pairs_flatten_minus_two_and_no_final_cast(self):
        table = precompute_freqs_cis(8, 5)

        def fn(x):
            xc = torch.view_as_complex(x.float().view(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * table[:, None, :]).flatten(-2)  # float32 out, no cast

        gm, report = _check_rewritten(fn, torch.randn(2, 5, 3, 8, dtype=torch.bfloat16))
        self.assertEqual(len(_fused(report)), 1)
        self.assertEqual(_kernel_calls(gm), 1)
        self.assertEqual(gm(*gm.example_inputs)[0].dtype, torch.float32)

    def test_deepseek_single_tensor_to_dtype_on_a_slice_of_the_head(self):
        table = precompute_freqs_cis(4, 6)

        def mla(q):
            q_nope, q_pe = torch.split(q, [8, 4], dim=-1)
            return torch.cat([q_nope, deepseek_apply_rotary_emb(q_pe, table)], dim=-1)

        gm, report = _check_rewritten(mla, torch.randn(2, 6, 3, 12, dtype=torch.bfloat16))
        self.assertEqual(len(_fused(report)), 1)

    def test_head_first_layout_and_packed_tokens(self):
        table = precompute_freqs_cis(8, 6)

        def head_first(q):  # [B, H, S, D], table [1, 1, S, D/2]
            qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
            return torch.view_as_real(qc * table[None, None]).flatten(3)

        def packed(x, positions):  # [T, H, D], table gathered per token
            xc = torch.view_as_complex(x.float().reshape(x.shape[0], x.shape[1], -1, 2))
            return torch.view_as_real(xc * table[positions].unsqueeze(1)).flatten(2).type_as(x)

        _, report = _check_rewritten(head_first, torch.randn(2, 3, 6, 8))
        self.assertEqual(len(_fused(report)), 1)
        _, report = _check_rewritten(packed, torch.randn(7, 2, 8, dtype=torch.bfloat16), torch.randint(0, 6, (7,)))
        self.assertEqual(len(_fused(report)), 1)

    def test_per_batch_table_and_complex128(self):
        table = precompute_freqs_cis(8, 10, dtype=torch.float64)  # complex128

        def fn(x, positions):  # positions [B, S] → table [B, S, 1, D/2]
            xc = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * table[positions][:, :, None, :]).flatten(3).float()

        _, report = _check_rewritten(fn, torch.randn(2, 4, 2, 8), torch.randint(0, 10, (2, 4)))
        self.assertEqual(len(_fused(report)), 1)

    # ------------------------------------------------------------ negative cases
    def test_default_mode_fuses_large_cpu_ropes_into_the_c_kernel(self):
        table = precompute_freqs_cis(64, 256)  # q and k of 65536 pairs each, above the threshold
        gm = dynamo_graph(lambda q, k: llama_apply_rotary_emb(q, k, table),
                          torch.randn(1, 256, 8, 64), torch.randn(1, 256, 8, 64))
        complex_pass = inductor_complex.ComplexToRealPass()  # fused_rotary=None
        complex_pass(gm.graph)
        report = complex_pass.last_report
        self.assertEqual(len(_fused(report)), 2, report.format())
        self.assertEqual(report.count("bridged") + report.count("kept"), 0)

    def test_default_mode_leaves_small_cpu_ropes_to_the_generic_rewrite(self):
        # (decode steps: the kernel's call measured slower than Inductor's code)
        table = precompute_freqs_cis(8, 6)
        gm = dynamo_graph(lambda q, k: llama_apply_rotary_emb(q, k, table), torch.randn(1, 6, 2, 8), torch.randn(1, 6, 2, 8))
        complex_pass = inductor_complex.ComplexToRealPass()
        complex_pass(gm.graph)
        report = complex_pass.last_report
        self.assertEqual(len(_fused(report)), 0)
        self.assertEqual(_refusals(report), ["48 pairs on CPU, below 4096: the kernel's call "
                                             "measured no faster than Inductor's code there; fused_rotary=True forces it"] * 2)
        self.assertEqual(report.count("bridged") + report.count("kept"), 0)

    def test_default_mode_lets_a_small_k_join_the_call_of_a_large_q(self):
        # q (16 x 8 heads x 32 pairs = 4096) takes the kernel; k (1024 pairs) shares its
        # table, so it rides in the same call: apart, k cost Inductor's own kernel and a
        # view of the table besides q's call (quick decode: 34.8 us against 26.3 together).
        table = precompute_freqs_cis(64, 1)
        gm = dynamo_graph(lambda q, k: llama_apply_rotary_emb(q, k, table),
                          torch.randn(16, 1, 8, 64), torch.randn(16, 1, 2, 64))
        complex_pass = inductor_complex.ComplexToRealPass()
        complex_pass(gm.graph)
        report = complex_pass.last_report
        self.assertEqual(len(_fused(report)), 2, report.format())
        self.assertEqual(_refusals(report), [])
        calls = [n for n in gm.graph.nodes if n.target is torch.ops.inductor_complex.rotary_embedding.default]
        self.assertEqual(len(calls), 1)

    def test_default_mode_fuses_cpu_ropes_of_dynamic_size(self):
        # The same small rope, dynamic: compiled code serves every size, large ones too.
        table = precompute_freqs_cis(8, 6)
        gm = dynamo_graph(lambda q, k: llama_apply_rotary_emb(q, k, table),
                          torch.randn(2, 6, 2, 8), torch.randn(2, 6, 2, 8), dynamic=True)
        complex_pass = inductor_complex.ComplexToRealPass()
        complex_pass(gm.graph)
        report = complex_pass.last_report
        self.assertEqual(len(_fused(report)), 2, report.format())
        self.assertEqual(_refusals(report), [])

    def test_default_mode_without_the_cpu_kernel_leaves_cpu_tensors_to_the_generic_rewrite(self):
        table = precompute_freqs_cis(8, 6)
        gm = dynamo_graph(lambda q, k: llama_apply_rotary_emb(q, k, table), torch.randn(1, 6, 2, 8), torch.randn(1, 6, 2, 8))
        complex_pass = inductor_complex.ComplexToRealPass()
        with unittest.mock.patch.object(rotary_cpu, "_library", lambda: (None, "no compiler")):
            complex_pass(gm.graph)
        report = complex_pass.last_report
        self.assertEqual(len(_fused(report)), 0)
        self.assertEqual(
            _refusals(report),
            ["the CPU kernel could not be built (no compiler); fused_rotary=True runs the Triton kernel "
             "in its interpreter, slowly"] * 2,
        )
        self.assertGreater(report.count("rewritten"), 0)  # the generic rewrite took over
        self.assertEqual(report.count("bridged") + report.count("kept"), 0)

    def test_fused_rotary_false_does_not_look(self):
        table = precompute_freqs_cis(8, 6)
        gm = dynamo_graph(lambda q: llama_apply_rotary_emb(q, q, table)[0], torch.randn(1, 6, 2, 8))
        report = run_pass(gm, fused_rotary=False)
        self.assertEqual(report.count("fused") + report.count("fused_refused"), 0)

    def test_refusals_say_why(self):
        table64 = precompute_freqs_cis(8, 6, dtype=torch.float64)
        table = precompute_freqs_cis(8, 6)

        def promoted(x):  # complex64 × complex128: the kernel does not promote
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * table64[:, None]).flatten(3)

        def product_reused(x):  # the complex product is needed elsewhere
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            p = xc * table[:, None]
            return torch.view_as_real(p).flatten(3), p.abs()

        def double_input(x):  # float64 input: the kernel rounds to float32
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * table64[:, None]).flatten(3)

        per_head = precompute_freqs_cis(8, 12).view(6, 2, 4)

        def not_a_rotation_layout(x):  # the table varies over sequence AND heads
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * per_head).flatten(3)

        angles = torch.randn(6, 4, requires_grad=True)

        def learned_table(x):  # the kernel gives the table no gradient: must not fuse
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * torch.polar(torch.ones_like(angles), angles)[:, None]).flatten(3)

        cases = [
            (learned_table, torch.randn(1, 6, 2, 8), "the table requires grad"),
            (promoted, torch.randn(1, 6, 2, 8), "differ in complex dtype"),
            (product_reused, torch.randn(1, 6, 2, 8), "used other than by one view_as_real"),
            (double_input, torch.randn(1, 6, 2, 8, dtype=torch.float64), "is not bf16/fp16/fp32"),
            (not_a_rotation_layout, torch.randn(1, 6, 2, 8), "table is not"),
        ]
        for fn, x, reason in cases:
            gm = dynamo_graph(fn, x)
            report = run_pass(gm, fused_rotary=True)
            self.assertEqual(len(_fused(report)), 0, fn.__name__)
            refusals = _refusals(report)
            self.assertEqual(len(refusals), 1, fn.__name__)
            self.assertIn(reason, refusals[0])
            with torch.no_grad():
                assert_close(gm(*gm.example_inputs), fn(x) if isinstance(fn(x), tuple) else (fn(x),))


def test_compiled_model_with_forced_fused_path_matches_eager_forward_and_backward():
    """torch.compile with the pass and ``fused_rotary=True`` on CPU.

    On CUDA, Inductor decomposes the triton_op and launches the kernel from its
    own generated code; Inductor cannot generate Triton launches for CPU tensors,
    so there the op becomes its opaque CPU twin, which Inductor calls and which
    runs the kernel in the Triton interpreter. Everything around it is compiled
    by Inductor.
    """
    torch.manual_seed(0)
    model = BufferRotary(head_dim=8, max_seq=16)
    args = (torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8))
    eager_args, compiled_args = clone_args(args, True), clone_args(args, True)
    complex_pass = inductor_complex.ComplexToRealPass(fused_rotary=True)
    compiled = torch.compile(model, options={"pre_grad_custom_pass": complex_pass})
    launches = kernel.launch_count
    out = compiled(*compiled_args)
    assert kernel.launch_count == launches + 1  # one launch for q and k
    expected = model(*eager_args)
    for got, want in zip(out, expected):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    seeds = [torch.randn_like(o) for o in expected]
    sum((o * s).sum() for o, s in zip(expected, seeds)).backward()
    sum((o * s).sum() for o, s in zip(out, seeds)).backward()
    for got, want in zip(compiled_args, eager_args):
        torch.testing.assert_close(got.grad, want.grad, atol=1e-5, rtol=1e-5)
    assert len(_fused(complex_pass.last_report)) == 2


def test_head_first_q_and_k_with_different_head_counts_share_one_launch():
    table = precompute_freqs_cis(8, 6)

    def rotary(q, k):  # [B, H, S, D] with 4 q heads and 2 k heads
        qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
        kc = torch.view_as_complex(k.reshape(*k.shape[:-1], -1, 2))
        freqs = table[None, None]
        return torch.view_as_real(qc * freqs).flatten(3), torch.view_as_real(kc * freqs).flatten(3)

    gm, report = _check_rewritten(rotary, torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8))
    assert len(_fused(report)) == 2
    assert _kernel_calls(gm) == 1
