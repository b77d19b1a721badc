"""The CPU rotary kernel (kernels/rotary_cpu.py): eager's numbers bit for bit, and the
pass sending the rotary idiom to it under torch.compile on CPU."""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks
from inductor_complex.kernels import rotary_cpu
from inductor_complex.kernels.rotary import rotary_reference_single
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

pytestmark = pytest.mark.skipif(not rotary_cpu.available(), reason=f"no CPU kernel: {rotary_cpu.unavailable_reason()}")

DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


@pytest.fixture(autouse=True)
def no_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def awkward_input(shape, dtype):
    """Non-contiguous (heads before positions in memory) with specials in the first pairs."""
    batch, seq, heads, dim = shape
    x = (torch.randn(batch, heads, seq, dim) * 3).to(dtype).transpose(1, 2)
    x[0, 0, 0, :6] = torch.tensor([math.inf, math.nan, -0.0, 1e30, 0.0, -math.inf]).to(dtype)
    return x


@pytest.mark.parametrize("conjugate", [False, True])
@pytest.mark.parametrize("table_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("x_dtype", DTYPES)
def test_bit_for_bit_with_the_reference_math(x_dtype, table_dtype, conjugate):
    q, k = awkward_input((3, 5, 4, 16), x_dtype), awkward_input((3, 5, 2, 16), x_dtype)
    for table_batch in (1, 3):
        table = torch.randn(table_batch, 5, 8, 2, dtype=table_dtype)
        for out_dtype in (None, *DTYPES):
            q_out, k_out = rotary_cpu.rotate(q, k, table, out_dtype, conjugate)
            for got, x in ((q_out, q), (k_out, k)):
                want = rotary_reference_single(x, table, out_dtype, conjugate)
                assert got.is_contiguous() and got.dtype == want.dtype
                assert torch.equal(bits(got), bits(want)), (x_dtype, table_dtype, out_dtype, conjugate)


@pytest.mark.parametrize("conjugate", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_pairs_beyond_the_vector_width_take_the_same_product(dtype, conjugate):
    # 13 pairs a head: three steps of four pairs, one left to the scalar loop. Eager's
    # own remainder loop is compiled with fused multiply-adds on some builds, so its
    # last pairs are no reference here; the product (ac - bd, ad + bc), each step
    # rounded to float32 as separate torch ops round it, is.
    x = torch.randn(2, 3, 4, 26).to(dtype)
    table = torch.randn(1, 3, 13, 2)
    got, _ = rotary_cpu.rotate(x, None, table, None, conjugate)
    a, b = x.float().unflatten(-1, (13, 2)).unbind(-1)
    c, d = table.unsqueeze(2).unbind(-1)
    d = -d if conjugate else d
    want = torch.stack((a * c - b * d, a * d + b * c), dim=-1).flatten(-2).to(dtype)
    assert torch.equal(bits(got), bits(want))


@pytest.mark.parametrize("conjugate", [False, True])
@pytest.mark.parametrize("x_dtype", DTYPES)
@pytest.mark.parametrize("head_dim", [32, 64, 128])
def test_head_dims_with_their_own_unrolled_copy_match_the_reference(head_dim, x_dtype, conjugate):
    # Head dims 32, 64 and 128 run copies of the kernel compiled for that pair count.
    q, k = awkward_input((2, 3, 3, head_dim), x_dtype), awkward_input((2, 3, 1, head_dim), x_dtype)
    table = torch.randn(2, 3, head_dim // 2, 2)
    q_out, k_out = rotary_cpu.rotate(q, k, table, None, conjugate)
    for got, x in ((q_out, q), (k_out, k)):
        want = rotary_reference_single(x, table, None, conjugate)
        assert torch.equal(bits(got), bits(want)), (head_dim, x_dtype, conjugate)


def test_many_threads_and_no_k():
    # Enough pairs to run on several threads (and the single-tensor form).
    x = torch.randn(2, 64, 8, 64)
    table = torch.view_as_real(precompute_freqs_cis(64, 64))[None]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        got, none = rotary_cpu.rotate(x, None, table, None, False)
    finally:
        torch.set_num_threads(threads)
    assert none is None
    assert torch.equal(got, rotary_reference_single(x, table))


def test_empty_and_strided_head_dim_refused():
    empty = torch.randn(0, 3, 2, 8)
    q_out, k_out = rotary_cpu.rotate(empty, empty, torch.randn(1, 3, 4, 2), None, False)
    assert q_out.shape == (0, 3, 2, 8) and k_out.shape == (0, 3, 2, 8)
    with pytest.raises(ValueError, match="contiguous head dim"):
        rotary_cpu.rotate(torch.randn(1, 3, 2, 16)[..., ::2], None, torch.randn(1, 3, 4, 2), None, False)


def test_a_compiler_that_fails_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setattr(rotary_cpu, "_compiler", lambda: "/nonexistent/c++")
    monkeypatch.setattr(rotary_cpu, "_machine_key", lambda: "a machine with no compiler")
    rotary_cpu._library.cache_clear()
    try:
        assert not rotary_cpu.available()
        assert "could not compile" in rotary_cpu.unavailable_reason()
    finally:
        rotary_cpu._library.cache_clear()  # the next call, unpatched, builds it again


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_llama_rope_runs_the_c_kernel_with_eagers_numbers(dtype):
    q = torch.randn(2, 16, 4, 32).to(dtype).requires_grad_()
    k = torch.randn(2, 16, 2, 32).to(dtype).requires_grad_()
    freqs_cis = precompute_freqs_cis(32, 16)
    want = apply_rotary_emb_complex(q, k, freqs_cis)
    cotangents = [torch.randn_like(w) for w in want]
    want_grads = torch.autograd.grad(want, (q, k), cotangents)

    complex_pass = ComplexToRealPass(fused_rotary=True)  # (the default fuses only large ropes on CPU)
    compiled = torch.compile(apply_rotary_emb_complex, options=complex_pass.inductor_options())
    launches = rotary_cpu.launches()
    with count_complex_fallbacks() as fallbacks:
        got, (code,) = run_and_get_code(compiled, q, k, freqs_cis)
    assert rotary_cpu.launches() == launches + 1  # q and k in one call
    assert "rotary_embedding_cpu" in code
    assert fallbacks.beyond_edges == [], fallbacks  # only the table's zero-copy view
    assert counters["inductor_complex"]["fused"] == 2
    grads = torch.autograd.grad(got, (q, k), cotangents)
    assert rotary_cpu.launches() == launches + 2  # the backward rotates by the conjugate
    for a, b in zip((*got, *grads), (*want, *want_grads)):
        assert torch.equal(a, b)


def test_the_default_gives_ropes_of_dynamic_size_the_kernel_with_eagers_numbers():
    # Small enough that a static compile keeps Inductor's pair math; a dynamic
    # batch may grow past the threshold, so the default calls the kernel.
    freqs_cis = precompute_freqs_cis(16, 8)

    def rope(x):  # q and k from one tensor share the batch symbol: one call for both
        return apply_rotary_emb_complex(x[:, :, :4], x[:, :, 4:], freqs_cis)

    compiled = torch.compile(rope, options=ComplexToRealPass().inductor_options())
    torch._dynamo.reset()
    counters.clear()
    for batch in (3, 5):
        x = torch.randn(batch, 8, 6, 16, requires_grad=True)
        torch._dynamo.mark_dynamic(x, 0)
        want = rope(x)
        cotangents = [torch.randn_like(w) for w in want]
        want_grad = torch.autograd.grad(want, x, cotangents)
        launches = rotary_cpu.launches()
        got = compiled(x)
        assert rotary_cpu.launches() == launches + 1
        (grad,) = torch.autograd.grad(got, x, cotangents)
        assert rotary_cpu.launches() == launches + 2
        assert all(torch.equal(a, b) for a, b in zip((*got, grad), (*want, *want_grad)))
    assert counters["stats"]["unique_graphs"] == 1  # one compile served both batches
    assert counters["inductor_complex"]["fused"] == 2


def test_compiled_code_calls_the_kernel_from_cpp_without_python_between():
    if not rotary_cpu.op_kernel_registered():
        pytest.skip(f"the C++ registration was not built: {rotary_cpu.op_kernel_unregistered_reason()}")
    q, k = torch.randn(1, 4, 2, 16), torch.randn(1, 4, 1, 16)
    freqs_cis = precompute_freqs_cis(16, 4)
    compiled = torch.compile(apply_rotary_emb_complex,
                             options=ComplexToRealPass(fused_rotary=True).inductor_options())
    python_calls, all_calls = rotary_cpu.launch_count, rotary_cpu.launches()
    got = compiled(q, k, freqs_cis)
    assert rotary_cpu.launches() == all_calls + 1 and rotary_cpu.launch_count == python_calls
    for a, b in zip(got, apply_rotary_emb_complex(q, k, freqs_cis)):
        assert torch.equal(a, b)


def test_cpp_op_errors_name_the_mismatch():
    if not rotary_cpu.op_kernel_registered():
        pytest.skip(f"the C++ registration was not built: {rotary_cpu.op_kernel_unregistered_reason()}")
    q, table = torch.randn(1, 3, 2, 8), torch.randn(1, 3, 4, 2)
    with pytest.raises(RuntimeError, match="does not match the table"):
        torch.ops.inductor_complex.rotary_embedding_single_cpu(q, torch.randn(1, 5, 4, 2), None, False)
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        torch.ops.inductor_complex.rotary_embedding_single_cpu(q.to(torch.int32), table, None, False)
    with pytest.raises(RuntimeError, match="4-d CPU tensor"):
        torch.ops.inductor_complex.rotary_embedding_single_cpu(q[0], table, None, False)


def test_without_the_cpp_build_the_python_kernels_serve_compiled_code():
    """A torch without headers (or a compiler that cannot build against them): the plain
    C kernel behind the ops' Python kernels, with eager's numbers and gradients."""
    script = (
        "import torch\n"
        "from inductor_complex import ComplexToRealPass\n"
        "from inductor_complex.kernels import rotary_cpu\n"
        "from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis\n"
        "def no_headers(): raise RuntimeError('no torch headers (the test says so)')\n"
        "rotary_cpu._build_op_library = no_headers\n"
        "assert rotary_cpu.available() and not rotary_cpu.op_kernel_registered()\n"
        "assert 'no torch headers' in rotary_cpu.op_kernel_unregistered_reason()\n"
        "q = torch.randn(2, 4, 2, 16, requires_grad=True); k = torch.randn(2, 4, 1, 16, requires_grad=True)\n"
        "f = precompute_freqs_cis(16, 4)\n"
        "c = torch.compile(apply_rotary_emb_complex, options=ComplexToRealPass(fused_rotary=True).inductor_options())\n"
        "got, want = c(q, k, f), apply_rotary_emb_complex(q, k, f)\n"
        "assert rotary_cpu.launch_count == 1, 'the Python kernel did not run the C kernel'\n"
        "g = [torch.ones_like(x) for x in want]\n"
        "pairs = zip((*got, *torch.autograd.grad(got, (q, k), g)), (*want, *torch.autograd.grad(want, (q, k), g)))\n"
        "assert all(torch.equal(a, b) for a, b in pairs)\n"
        "print('ok')\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1])
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-3000:]


def test_aten_graphs_keep_the_generic_rewrite_on_cpu():
    # AOTInductor hands the pass an aten graph; its C++ runtime cannot call the kernel.
    class Rope(torch.nn.Module):
        def forward(self, q, k, freqs_cis):
            return apply_rotary_emb_complex(q, k, freqs_cis)

    args = (torch.randn(1, 8, 2, 16), torch.randn(1, 8, 1, 16), precompute_freqs_cis(16, 8))
    graph = torch.export.export(Rope(), args).run_decompositions().graph_module.graph
    complex_pass = ComplexToRealPass()
    complex_pass(graph)
    reasons = [d.reason for d in complex_pass.last_report.decisions if d.action == "fused_refused"]
    assert reasons and all("aten graph" in r for r in reasons), complex_pass.last_report.format()
    assert counters["inductor_complex"]["fused"] == 0


@pytest.mark.parametrize("allocate", ["via_inductor", "via_torch"])
def test_both_output_allocators_give_rotate_a_contiguous_tensor_of_the_shape_and_dtype(allocate):
    # rotate allocates through Inductor's private _empty_strided_cpu, or torch.empty
    # where a torch release lacks it: the kernel writes both as one contiguous block.
    if allocate == "via_inductor" and rotary_cpu._EMPTY_STRIDED_CPU is None:
        pytest.skip("this torch has no _empty_strided_cpu")
    empty = getattr(rotary_cpu, f"_empty_contiguous_{allocate}")
    out = empty((2, 3, 5, 8), torch.bfloat16)
    assert (tuple(out.shape), out.stride(), out.dtype) == ((2, 3, 5, 8), (120, 40, 8, 1), torch.bfloat16)
    assert out.device.type == "cpu" and out.storage_offset() == 0


# ---------------------------------------------- the complex table, past autograd


def _code_of_call(code: str) -> str:
    return code[code.index("def call("):]


@pytest.mark.parametrize("table_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("table_batch", [1, 3])
def test_the_cpu_ops_take_a_complex_table_as_its_pairs(table_batch, table_dtype):
    # (the C++ kernel reads a complex table's data in place, with no view of its pairs)
    q, k = torch.randn(3, 4, 2, 16), torch.randn(3, 4, 1, 16)
    table = torch.polar(torch.ones(table_batch, 4, 8, dtype=table_dtype), torch.randn(table_batch, 4, 8, dtype=table_dtype))
    pairs = torch.view_as_real(table)
    ops = torch.ops.inductor_complex
    want = ops.rotary_embedding_cpu(q, k, pairs, None, False)
    strided = table.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, not contiguous
    for given in (table, table.view(table_batch, 4, 1, 8), strided):
        got = ops.rotary_embedding_cpu(q, k, given, None, False)
        assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.equal(ops.rotary_embedding_single_cpu(q, table, None, False), want[0])
    from inductor_complex.kernels import rotary as kernel  # the Python kernel, as a cache hit runs it first

    assert all(torch.equal(a, b) for a, b in zip(kernel._cpu_twin_pair(q, k, table), want))
    if rotary_cpu.op_kernel_registered():
        with pytest.raises(RuntimeError, match="does not hold whole rows"):
            ops.rotary_embedding_cpu(q, k, table[..., :5], None, False)


def test_a_decode_step_hands_the_kernel_its_complex_table_input():
    q, k = torch.randn(4, 1, 4, 16), torch.randn(4, 1, 2, 16)
    table = precompute_freqs_cis(16, 40)[30:31]
    compiled = torch.compile(apply_rotary_emb_complex, options=ComplexToRealPass(fused_rotary=True).inductor_options())
    with torch.no_grad():
        got, (code,) = run_and_get_code(compiled, q, k, table)
    call = _code_of_call(code)
    assert "rotary_embedding_cpu" in call and "view_as_real" not in call, call
    assert all(torch.equal(a, b) for a, b in zip(got, apply_rotary_emb_complex(q, k, table)))


def _rope_grads(outs, q, k, cotangents):
    return torch.autograd.grad(outs, (q, k), cotangents)


def test_training_saves_the_complex_table_itself_for_backward():
    # The joint-graph hook hands both ops the table before the forward and backward
    # split, so neither graph makes the pairs view (an extern call) and the forward
    # saves its table input as it came.
    q = torch.randn(2, 4, 2, 16, requires_grad=True)
    k = torch.randn(2, 4, 1, 16, requires_grad=True)
    table = precompute_freqs_cis(16, 8)[2:6]
    compiled = torch.compile(apply_rotary_emb_complex, options=ComplexToRealPass(fused_rotary=True).inductor_options())
    want = apply_rotary_emb_complex(q, k, table)
    cotangents = [torch.randn_like(t) for t in want]

    def step():
        got = compiled(q, k, table)
        return got, _rope_grads(got, q, k, cotangents)

    (got, grads), (forward, backward) = run_and_get_code(step)
    for code in (forward, backward):
        call = _code_of_call(code)
        assert "view_as_real" not in call and "rotary_pair_into(" in call, call
    assert "primals_3, " in _code_of_call(backward).splitlines()[1], backward  # the table, saved as given
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert all(torch.equal(a, b) for a, b in zip(grads, _rope_grads(want, q, k, cotangents)))


def test_tables_that_are_not_the_same_view_keep_their_pairs():
    # A strided table's pairs are not a reshape of it, in training or inference.
    q = torch.randn(2, 4, 2, 16, requires_grad=True)
    k = torch.randn(2, 4, 1, 16, requires_grad=True)
    strided = precompute_freqs_cis(16, 8).T.contiguous().T[2:6]  # [4, 8], strides (1, 8)
    for train in (True, False):
        torch._dynamo.reset()
        compiled = torch.compile(apply_rotary_emb_complex, options=ComplexToRealPass(fused_rotary=True).inductor_options())
        with torch.set_grad_enabled(train):
            got, codes = run_and_get_code(compiled, q, k, strided)
            want = apply_rotary_emb_complex(q, k, strided)
        assert "view_as_real" in _code_of_call(codes[0]), train
        # (eager's product with a strided table leaves its vectorized loop: the last bit)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
        if train:
            cotangents = [torch.randn_like(t) for t in want]
            for a, b in zip(_rope_grads(got, q, k, cotangents), _rope_grads(want, q, k, cotangents)):
                torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
