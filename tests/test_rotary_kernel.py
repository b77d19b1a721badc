"""Numerics and registration of the fused rotary kernel (inductor_complex::rotary_embedding).

On CPU the Triton kernel runs in the Triton interpreter (TRITON_INTERPRET=1, set by the
fixture below), so shapes stay tiny. Every kernel test checks ``rotary.launch_count`` to
prove the Triton kernel ran, not the reference fallback. The CPU C kernel, which CPU
tensors take without the interpreter, has its own tests (test_rotary_cpu_kernel.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton")

from inductor_complex.kernels import rotary, rotary_cpu  # noqa: E402
from inductor_complex.llama_rope import (
    apply_rotary_emb_complex as llama_apply_rotary_emb,  # noqa: E402
)
from inductor_complex.rotary_api import apply_rotary_emb  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# (atol, rtol) per dtype; assert_close takes the coarser of the output dtype and the dtype
# the product is computed in (float32, or float64 for a float64 table).
TOLERANCE = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (2e-2, 2e-2),
}

rotary_op = torch.ops.inductor_complex.rotary_embedding
rotary_single_op = torch.ops.inductor_complex.rotary_embedding_single


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """On CPU, run CPU tensors through the Triton interpreter (without it they take the C
    kernel). On CUDA the compiled kernel must run, and TRITON_INTERPRET would also switch
    Inductor's own Triton kernels to the interpreter."""
    if DEVICE == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    else:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def without_cpu_kernels(monkeypatch):
    """CPU tensors as on a machine where neither the interpreter nor the C kernel runs."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(rotary_cpu, "_library", lambda: (None, "no compiler (the test says so)"))


def make_table(batch, seq, pairs, dtype=torch.float32):
    """Real pairs [Bt, S, P, 2]; general complex values (not unit) so scale errors show."""
    return torch.randn(batch, seq, pairs, 2, dtype=dtype, device=DEVICE)


def make_freqs_cis(seq, pairs, dtype=torch.complex64):
    angles = torch.randn(seq, pairs, dtype=torch.float64, device=DEVICE)
    return torch.polar(torch.ones_like(angles), angles).to(dtype)


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=DEVICE).to(dtype)


def assert_close(actual, expected, math_dtype=torch.float32):
    """Tolerance of the coarser of the output dtype and the dtype the product is computed in."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    atol, rtol = max(TOLERANCE[expected.dtype], TOLERANCE[math_dtype])
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


def check_forward_backward(q, k, table, out_dtype=None, conjugate=False):
    """Op vs rotary_reference: outputs, then gradients for the same random cotangents."""
    q_kernel = q.detach().clone().requires_grad_()
    k_kernel = k.detach().clone().requires_grad_()
    q_ref = q.detach().clone().requires_grad_()
    k_ref = k.detach().clone().requires_grad_()

    launches = rotary.launch_count
    out_kernel = rotary_op(q_kernel, k_kernel, table, out_dtype, conjugate)
    assert rotary.launch_count == launches + 1, "the Triton kernel did not run"
    out_ref = rotary.rotary_reference(q_ref, k_ref, table, out_dtype, conjugate)
    math_dtype = rotary.math_dtype_for(table.dtype)
    for got, want in zip(out_kernel, out_ref):
        assert got.shape == want.shape
        assert_close(got, want, math_dtype)

    cotangents = [torch.randn_like(o) for o in out_ref]
    torch.autograd.backward(out_kernel, cotangents)
    assert rotary.launch_count == launches + 2, "backward did not run the kernel"
    torch.autograd.backward(out_ref, cotangents)
    assert_close(q_kernel.grad, q_ref.grad, math_dtype)
    assert_close(k_kernel.grad, k_ref.grad, math_dtype)


# --------------------------------------------------------------------------------------
# kernel numerics
# --------------------------------------------------------------------------------------


def test_reference_matches_llama_idiom():
    q, k = rand(2, 3, 2, 8), rand(2, 3, 1, 8)
    freqs = make_freqs_cis(3, 4)
    table = torch.view_as_real(freqs).unsqueeze(0)
    for got, want in zip(rotary.rotary_reference(q, k, table), llama_apply_rotary_emb(q, k, freqs)):
        torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("head_dim", [2, 4, 6, 80, 96, 128, 192, 256])
def test_head_dims(head_dim):
    check_forward_backward(rand(1, 2, 2, head_dim), rand(1, 2, 1, head_dim), make_table(1, 2, head_dim // 2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_input_dtypes(dtype):
    check_forward_backward(rand(2, 3, 2, 8, dtype=dtype), rand(2, 3, 2, 8, dtype=dtype), make_table(1, 3, 4))


def test_one_head_one_token():
    check_forward_backward(rand(1, 1, 1, 16), rand(1, 1, 1, 16), make_table(1, 1, 8))


def test_different_head_counts():
    check_forward_backward(rand(2, 2, 3, 8), rand(2, 2, 1, 8), make_table(1, 2, 4))
    check_forward_backward(rand(2, 2, 1, 8), rand(2, 2, 3, 8), make_table(1, 2, 4))


def test_views_of_fused_qkv_projection():
    batch, seq, n_q, n_kv, head_dim = 2, 3, 3, 1, 8
    qkv = rand(batch, seq, (n_q + 2 * n_kv) * head_dim)
    q, k, _v = qkv.split([n_q * head_dim, n_kv * head_dim, n_kv * head_dim], dim=-1)
    q = q.view(batch, seq, n_q, head_dim)
    k = k.view(batch, seq, n_kv, head_dim)
    assert not q.is_contiguous() and not k.is_contiguous()
    check_forward_backward(q, k, make_table(1, seq, head_dim // 2))


def test_heads_first_layout_transposed():
    q = rand(2, 3, 4, 8).transpose(1, 2)  # [B, H, S, D] storage seen as [B, S, H, D]
    k = rand(2, 1, 4, 8).transpose(1, 2)
    check_forward_backward(q, k, make_table(1, 4, 4))


def test_strided_head_dim_is_made_contiguous():
    q = rand(1, 2, 2, 16)[..., ::2]  # head-dim stride 2
    k = rand(1, 2, 1, 8)
    check_forward_backward(q, k, make_table(1, 2, 4))


def test_non_contiguous_and_broadcast_tables():
    q, k = rand(2, 3, 2, 8), rand(2, 3, 1, 8)
    transposed = torch.randn(1, 3, 2, 4, device=DEVICE).transpose(-1, -2)  # [1, S, P, 2], strided
    check_forward_backward(q, k, transposed)
    expanded = make_table(1, 3, 4).expand(2, 3, 4, 2)  # batch stride 0
    check_forward_backward(q, k, expanded)


def test_per_batch_table():
    check_forward_backward(rand(2, 3, 2, 8), rand(2, 3, 1, 8), make_table(2, 3, 4))


def test_float64_table_computes_in_float64():
    q, k = rand(1, 2, 2, 8), rand(1, 2, 1, 8)
    table = make_table(1, 2, 4, dtype=torch.float64)
    check_forward_backward(q, k, table, out_dtype=torch.float64)
    # Default output is the input dtype, as in the idiom's type_as.
    assert rotary_op(q, k, table)[0].dtype == torch.float32


def test_bf16_input_float32_output():
    check_forward_backward(
        rand(1, 2, 2, 8, dtype=torch.bfloat16),
        rand(1, 2, 1, 8, dtype=torch.bfloat16),
        make_table(1, 2, 4),
        out_dtype=torch.float32,
    )


def test_conjugate_is_the_inverse_rotation():
    q, k = rand(1, 2, 2, 8), rand(1, 2, 1, 8)
    angles = torch.randn(1, 2, 4, device=DEVICE)
    table = torch.view_as_real(torch.polar(torch.ones_like(angles), angles))
    check_forward_backward(q, k, table, conjugate=True)
    q_back, k_back = rotary_op(*rotary_op(q, k, table), table, None, True)
    assert_close(q_back, q)
    assert_close(k_back, k)


def test_rope_on_a_slice_of_the_head():
    """MLA style: rotate only the last 4 of 12 channels by passing that slice."""
    q_full, k_full = rand(2, 3, 2, 12), rand(2, 3, 1, 12)
    check_forward_backward(q_full[..., 8:], k_full[..., 8:], make_table(1, 3, 2))


def test_single_tensor_op():
    x = rand(2, 3, 2, 6, dtype=torch.bfloat16).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    table = make_table(2, 3, 3)
    launches = rotary.launch_count
    out = rotary_single_op(x, table, torch.float32)
    assert rotary.launch_count == launches + 1
    want = rotary.rotary_reference_single(x_ref, table, torch.float32)
    assert_close(out, want)
    cotangent = torch.randn_like(want)
    out.backward(cotangent)
    want.backward(cotangent)
    assert_close(x.grad, x_ref.grad)


def test_double_backward():
    """Backward calls the op itself, so second derivatives come for free."""
    q = rand(1, 2, 2, 8).requires_grad_()
    k = rand(1, 2, 1, 8).requires_grad_()
    table = make_table(1, 2, 4)
    cotangents = [rand(1, 2, 2, 8).requires_grad_(), rand(1, 2, 1, 8).requires_grad_()]

    def second_order(rotate):
        grads = torch.autograd.grad(rotate(q, k, table), (q, k), cotangents, create_graph=True)
        return torch.autograd.grad(sum((g * g).sum() for g in grads), cotangents)

    got = second_order(rotary_op)
    want = second_order(rotary.rotary_reference)
    for g, w in zip(got, want):
        assert_close(g, w)


def test_empty_batch():
    q_out, k_out = rotary_op(rand(0, 2, 2, 8), rand(0, 2, 1, 8), make_table(1, 2, 4))
    assert q_out.shape == (0, 2, 2, 8) and k_out.shape == (0, 2, 1, 8)


@pytest.mark.parametrize("path", ["kernel", "reference"])
def test_apply_rotary_emb_empty_batch_on_either_path(path, monkeypatch):
    if path == "reference":
        without_cpu_kernels(monkeypatch)
    xq, xk = rand(0, 3, 2, 8), rand(0, 3, 1, 8)
    for out, x in zip(apply_rotary_emb(xq, xk, make_freqs_cis(3, 4)), (xq, xk)):
        assert out.shape == x.shape and out.dtype == x.dtype


def test_apply_rotary_emb_gives_a_learned_table_its_gradient():
    # The kernel's backward has no gradient for the table: a table that requires
    # grad is rotated by the reference math instead, as the Llama function would.
    angles = torch.randn(3, 4, device=DEVICE, requires_grad=True)
    xq, xk = rand(1, 3, 2, 8), rand(1, 3, 1, 8)
    launches = rotary.launch_count
    got = apply_rotary_emb(xq, xk, torch.polar(torch.ones_like(angles), angles))
    sum(o.sum() for o in got).backward()
    want_angles = angles.detach().clone().requires_grad_()
    want = llama_apply_rotary_emb(xq, xk, torch.polar(torch.ones_like(want_angles), want_angles))
    sum(o.sum() for o in want).backward()
    assert rotary.launch_count == launches
    assert_close(angles.grad, want_angles.grad)


def test_op_rejects_bad_arguments():
    q, k = rand(1, 2, 2, 8), rand(1, 2, 1, 8)
    with pytest.raises(RuntimeError, match="twice the table's"):
        rotary_op(q, k, make_table(1, 2, 3))
    with pytest.raises(RuntimeError, match="q and k must share a dtype"):
        rotary_op(q, k.double(), make_table(1, 2, 4))
    with pytest.raises(RuntimeError, match="table must be real pairs"):
        rotary_op(q, k, make_table(1, 2, 4)[..., :1])


def test_opcheck_registrations():
    """Schema, autograd registration and fake-tensor checks. test_aot_dispatch_dynamic
    runs the traced Triton kernel for real, which needs a GPU driver (see the compile test)."""
    args = (rand(1, 2, 2, 8), rand(1, 2, 1, 8).requires_grad_(), make_table(1, 2, 4), None, False)
    utils = ("test_schema", "test_autograd_registration", "test_faketensor")
    if DEVICE == "cuda":
        utils += ("test_aot_dispatch_dynamic",)
    torch.library.opcheck(rotary_op.default, args, test_utils=utils)
    torch.library.opcheck(rotary_single_op.default, (args[0], args[2], torch.float32, True), test_utils=utils)


def test_kernel_compiles_for_sm90_with_vectorised_access():
    """Ahead-of-time compile for an H100/H200 target (no GPU needed: Triton ships ptxas)
    and check the head rows are moved as 16-byte vectors, not element by element."""
    import re

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = rotary._rotary_kernel
    constexprs = {"CONJUGATE": False, "MATH_FP64": False, "BLOCK_H": 16, "BLOCK_P": 64, "t_stride_c": 1}
    pointer_types = {"q_ptr": "*bf16", "k_ptr": "*bf16", "table_ptr": "*fp32", "q_out_ptr": "*bf16", "k_out_ptr": "*bf16"}
    signature = {name: pointer_types.get(name, "constexpr" if name in constexprs else "i32") for name in kernel.arg_names}
    # What Triton's launcher infers for 16-byte aligned pointers and strides divisible by 16.
    divisible = [name for name in kernel.arg_names if name not in constexprs and name != "seq_len"]
    try:
        source = ASTSource(
            kernel,
            signature,
            constexprs={(kernel.arg_names.index(n),): v for n, v in constexprs.items()},
            attrs={(kernel.arg_names.index(n),): [["tt.divisibility", 16]] for n in divisible},
        )
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    except (ImportError, TypeError, AttributeError) as error:  # other Triton versions' AOT API
        pytest.skip(f"ahead-of-time compile API unavailable: {error!r}")
    ptx = compiled.asm["ptx"]
    assert re.search(r"ld\.global(\.\w+)*\.v4", ptx), "head rows are not loaded as vectors"
    assert re.search(r"st\.global(\.\w+)*\.v4", ptx), "outputs are not stored as vectors"


def test_fake_tensor_shapes_and_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    launches = rotary.launch_count
    with FakeTensorMode():
        q = torch.empty(4, 7, 3, 80, dtype=torch.bfloat16)
        k = torch.empty(4, 7, 1, 80, dtype=torch.bfloat16)
        q_out, k_out = rotary_op(q, k, torch.empty(4, 7, 40, 2), torch.float32)
    assert (q_out.shape, k_out.shape) == ((4, 7, 3, 80), (4, 7, 1, 80))
    assert q_out.dtype == k_out.dtype == torch.float32
    assert rotary.launch_count == launches


# --------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------


# The freqs_cis layouts apply_rotary_emb accepts, all meaning the same [S, D/2] table.
TABLE_FORMS = {
    "complex [S, D/2]": lambda f: f,
    "real [S, D/2, 2]": lambda f: torch.view_as_real(f),
    "complex [1, S, 1, D/2]": lambda f: f.view(1, f.shape[0], 1, f.shape[1]),
    "real [1, S, 1, D/2, 2]": lambda f: torch.view_as_real(f).view(1, f.shape[0], 1, f.shape[1], 2),
    "complex [B, S, D/2] (per batch)": lambda f: f.expand(2, *f.shape),
}


@pytest.mark.parametrize("form", list(TABLE_FORMS))
def test_apply_rotary_emb_matches_llama(form):
    xq, xk = rand(2, 3, 2, 8, dtype=torch.bfloat16), rand(2, 3, 1, 8, dtype=torch.bfloat16)
    freqs = make_freqs_cis(3, 4)
    launches = rotary.launch_count
    got = apply_rotary_emb(xq, xk, TABLE_FORMS[form](freqs))
    assert rotary.launch_count == launches + 1
    for g, w in zip(got, llama_apply_rotary_emb(xq, xk, freqs)):
        assert_close(g, w)


def test_apply_rotary_emb_complex128_and_autograd():
    xq = rand(1, 2, 2, 8).requires_grad_()
    xk = rand(1, 2, 1, 8).requires_grad_()
    freqs = make_freqs_cis(2, 4, torch.complex128)
    xq_ref = xq.detach().clone().requires_grad_()
    xk_ref = xk.detach().clone().requires_grad_()
    got = apply_rotary_emb(xq, xk, freqs)
    want = llama_apply_rotary_emb(xq_ref, xk_ref, freqs)
    for g, w in zip(got, want):
        assert_close(g, w)
    (sum(o.sum() for o in got)).backward()
    (sum(o.sum() for o in want)).backward()
    assert_close(xq.grad, xq_ref.grad)
    assert_close(xk.grad, xk_ref.grad)


def test_apply_rotary_emb_mixed_dtypes_use_single_op():
    xq, xk = rand(1, 2, 2, 8, dtype=torch.bfloat16), rand(1, 2, 1, 8)
    freqs = make_freqs_cis(2, 4)
    launches = rotary.launch_count
    got = apply_rotary_emb(xq, xk, freqs)
    assert rotary.launch_count == launches + 2
    for g, w in zip(got, llama_apply_rotary_emb(xq, xk, freqs)):
        assert_close(g, w)


def test_apply_rotary_emb_without_interpreter_uses_the_c_kernel(monkeypatch):
    if DEVICE == "cuda":
        pytest.skip("CUDA tensors always use the Triton kernel")
    monkeypatch.delenv("TRITON_INTERPRET")
    xq, xk, freqs = rand(1, 2, 2, 8), rand(1, 2, 1, 8), make_freqs_cis(2, 4)
    launches, c_launches = rotary.launch_count, rotary_cpu.launches()
    got = apply_rotary_emb(xq, xk, freqs)
    assert rotary.launch_count == launches and rotary_cpu.launches() == c_launches + 1
    for g, w in zip(got, llama_apply_rotary_emb(xq, xk, freqs)):
        # (4 pairs: eager's scalar loop, which contracts into FMA; bit for bit with
        # its vectorized loop is in test_rotary_cpu_kernel.py)
        assert_close(g, w)


def test_apply_rotary_emb_without_any_cpu_kernel_uses_reference(monkeypatch):
    if DEVICE == "cuda":
        pytest.skip("CUDA tensors always use the Triton kernel")
    without_cpu_kernels(monkeypatch)
    xq, xk, freqs = rand(1, 2, 2, 8), rand(1, 2, 1, 8), make_freqs_cis(2, 4)
    launches, c_launches = rotary.launch_count, rotary_cpu.launches()
    got = apply_rotary_emb(xq, xk, freqs)
    assert rotary.launch_count == launches and rotary_cpu.launches() == c_launches
    for g, w in zip(got, llama_apply_rotary_emb(xq, xk, freqs)):
        assert_close(g, w)


_GOOD_Q, _GOOD_K = (1, 3, 2, 8), (1, 3, 1, 8)


@pytest.mark.parametrize(
    "xq_shape, xk_shape, dtype, freqs, error, match",
    [
        (_GOOD_Q, _GOOD_K, torch.float32, ("c", (4, 4)), ValueError, "covers 4 positions but .* sequence length 3"),
        ((1, 3, 2, 7), (1, 3, 1, 7), torch.float32, ("c", (3, 3)), ValueError, "head dim must be even"),
        (_GOOD_Q, _GOOD_K, torch.int32, ("c", (3, 4)), TypeError, "real floating tensor .* torch.int32"),
        (_GOOD_Q, _GOOD_K, torch.complex64, ("c", (3, 4)), TypeError, "real floating tensor .* torch.complex64"),
        (_GOOD_Q, _GOOD_K, torch.float32, ("c", (3, 3)), ValueError, "has 3 frequencies but the head dim 8 needs 4"),
        (_GOOD_Q, (2, 3, 1, 8), torch.float32, ("c", (3, 4)), ValueError, "share batch and sequence length"),
        (_GOOD_Q, (1, 2, 1, 8), torch.float32, ("c", (3, 4)), ValueError, "share batch and sequence length"),
        (_GOOD_Q, (1, 3, 1, 6), torch.float32, ("c", (3, 4)), ValueError, "share the head dim"),
        ((3, 2, 8), _GOOD_K, torch.float32, ("c", (3, 4)), ValueError, r"xq must be \[batch, seq, heads, head_dim\]"),
        (_GOOD_Q, _GOOD_K, torch.float32, ("r", (3, 4, 3)), ValueError, "last dim of 2"),
        (_GOOD_Q, _GOOD_K, torch.float32, ("c", (2, 3, 4)), ValueError, "batch 2 must be 1 or the inputs' batch 1"),
        (_GOOD_Q, _GOOD_K, torch.float32, ("i", (3, 4)), TypeError, "freqs_cis must be complex"),
        (_GOOD_Q, _GOOD_K, torch.float32, ("c", (1, 1, 3, 4)), ValueError, r"must be shaped \[S, D/2\]"),
    ],
)
def test_apply_rotary_emb_errors(xq_shape, xk_shape, dtype, freqs, error, match):
    kind, shape = freqs
    freqs_cis = {
        "c": lambda: torch.randn(*shape, dtype=torch.complex64),
        "r": lambda: torch.randn(*shape),
        "i": lambda: torch.ones(*shape, dtype=torch.int64),
    }[kind]()
    xq = torch.zeros(xq_shape, dtype=dtype)
    xk = torch.zeros(xk_shape, dtype=dtype)
    with pytest.raises(error, match=match):
        apply_rotary_emb(xq, xk, freqs_cis)


def test_api_imports_and_falls_back_without_triton():
    """`import inductor_complex.rotary_api` must not need Triton; on CPU the C kernel
    serves the ops, which are plain custom ops then."""
    script = (
        "import sys; sys.modules['triton'] = None\n"  # makes `import triton` raise ImportError
        "import torch\n"
        "from inductor_complex.rotary_api import apply_rotary_emb\n"
        "from inductor_complex.kernels import rotary\n"
        "assert not rotary.HAS_TRITON\n"
        "q, k = torch.randn(1, 2, 2, 8), torch.randn(1, 2, 1, 8)\n"
        "f = torch.polar(torch.ones(2, 4), torch.randn(2, 4))\n"
        "print(apply_rotary_emb(q, k, f)[0].shape)\n"
        "from inductor_complex.kernels import rotary_cpu\n"
        "assert rotary_cpu.launches() == 1, 'the C kernel did not run'\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), TRITON_INTERPRET="1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "torch.Size([1, 2, 2, 8])" in result.stdout


# --------------------------------------------------------------------------------------
# torch.compile
# --------------------------------------------------------------------------------------


def test_compile_reference_path_on_cpu(monkeypatch):
    """Without a CPU kernel, CPU compiles the complex reference math like any model."""
    if DEVICE == "cuda":
        pytest.skip("CPU-only path")
    without_cpu_kernels(monkeypatch)
    torch._dynamo.reset()
    xq, xk, freqs = rand(1, 3, 2, 8), rand(1, 3, 1, 8), make_freqs_cis(3, 4)
    got = torch.compile(apply_rotary_emb, fullgraph=True)(xq, xk, freqs)
    for g, w in zip(got, apply_rotary_emb(xq, xk, freqs)):
        assert_close(g, w)


def test_compile_calls_the_kernel():
    """torch.compile of apply_rotary_emb runs the kernel, forward and backward.

    On CUDA the op decomposes into the Triton kernel, which Inductor launches from its
    generated code. Inductor generates Triton launches for GPUs only, so on CPU the op
    becomes its opaque CPU twin (``rotary_embedding_cpu``), which Inductor calls and which
    runs the kernel in the Triton interpreter.
    """
    torch._dynamo.reset()
    xq = rand(2, 3, 2, 8, dtype=torch.bfloat16).requires_grad_()
    xk = rand(2, 3, 1, 8, dtype=torch.bfloat16).requires_grad_()
    freqs = make_freqs_cis(3, 4)
    compiled = torch.compile(apply_rotary_emb, fullgraph=True)
    launches = rotary.launch_count
    got = compiled(xq, xk, freqs)
    if DEVICE == "cpu":
        assert rotary.launch_count == launches + 1  # the interpreted kernel ran
    xq_ref = xq.detach().clone().requires_grad_()
    xk_ref = xk.detach().clone().requires_grad_()
    want = apply_rotary_emb(xq_ref, xk_ref, freqs)
    for g, w in zip(got, want):
        assert_close(g, w)
    launches = rotary.launch_count
    sum(o.float().sum() for o in got).backward()
    if DEVICE == "cpu":
        assert rotary.launch_count == launches + 1  # the backward rotates by the conjugate
    sum(o.float().sum() for o in want).backward()
    assert_close(xq.grad, xq_ref.grad)
    assert_close(xk.grad, xk_ref.grad)
