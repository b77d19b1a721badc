"""Fused rotary position embedding (the Llama complex-multiply idiom) as a Triton op.

The idiom being replaced is::

    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(xc * freqs_cis).flatten(3).type_as(x)

i.e. every interleaved pair ``(x[..., 2i], x[..., 2i + 1])`` is multiplied by the complex
table entry ``i`` of its position. Unfused, Inductor materialises the float32 copy, the
complex product and the cast; the kernel here reads each input once and writes each output
once, for q and k in a single launch.

Two ops are registered (when Triton is importable):

``inductor_complex::rotary_embedding(q, k, table, out_dtype=None, conjugate=False) -> (q_out, k_out)``
    q ``[B, S, Hq, D]``, k ``[B, S, Hk, D]`` (any strides, same dtype), rotated by one table.
``inductor_complex::rotary_embedding_single(x, table, out_dtype=None, conjugate=False) -> x_out``
    the same for one tensor (only q, or q and k with different tables).

``table`` holds the complex factors as real pairs, ``[Bt, S, D // 2, 2]`` (``view_as_real``
of ``freqs_cis``), with ``Bt`` 1 (shared by the batch) or ``B`` (per batch). The whole head
dim is rotated: for partial rope (DeepSeek MLA's 64-of-192) pass the sliced view, and the
output holds only that slice. ``conjugate=True`` rotates by the conjugate table, which is
the backward of the rotation; autograd uses it, and gives no gradient to the table.

Numerics follow the idiom: the input is rounded to float32 (``x.float()``), the product is
computed in float32, or float64 when the table is float64 (complex128 promotion), and the
result is cast to ``out_dtype`` (default: the input dtype, the idiom's ``type_as``).

On CPU tensors a C kernel computes the same (:mod:`.rotary_cpu`, compiled on first use;
Triton has no CPU backend), or, with ``TRITON_INTERPRET=1`` set, the Triton interpreter
runs this kernel (slowly: that is how CI checks the Triton kernel's numerics).
Inductor generates Triton launches for GPUs only, so under torch.compile a CPU call stays
an opaque op (``inductor_complex::rotary_embedding_cpu`` and ``..._single_cpu``), which
Inductor lowers to one direct call of the C kernel's Python binding per rope site
(:mod:`.rotary_cpu_lowering`), or, where that binding is missing, calls as an op.
Without Triton the ops are plain custom ops that serve CPU tensors only.
``rotary_reference`` computes the same with complex math.
"""

from __future__ import annotations

import os
from typing import Optional

import torch
from torch.library import wrap_triton

from . import rotary_cpu, rotary_cpu_lowering

try:
    import triton
    import triton.language as tl
    from triton.runtime.jit import JITFunction
except ImportError:  # the reference math below must stay usable without Triton
    triton = None
    tl = None

HAS_TRITON = triton is not None

OP_NAME = "inductor_complex::rotary_embedding"
SINGLE_OP_NAME = "inductor_complex::rotary_embedding_single"

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# How many elements one program moves per tensor tile; enough to hide latency on
# current GPUs while keeping register use small.
_TILE_ELEMENTS = 2048

# Incremented on every eager (non-traced) kernel launch, so tests can prove the kernel
# ran rather than a fallback.
launch_count = 0


def math_dtype_for(table_dtype: torch.dtype) -> torch.dtype:
    """Dtype the product is computed in: complex64 * table promotes to complex128 only
    for a float64 (complex128) table."""
    return torch.float64 if table_dtype == torch.float64 else torch.float32


# --------------------------------------------------------------------------------------
# Reference (pure torch, complex math). Used by tests and by the non-Triton fallback.
# --------------------------------------------------------------------------------------


def _rotate_reference(
    x: torch.Tensor,
    table: torch.Tensor,
    out_dtype: Optional[torch.dtype],
    conjugate: bool,
) -> torch.Tensor:
    math_dtype = math_dtype_for(table.dtype)
    # .float() first, exactly like the idiom (a float64 input is rounded to float32).
    # The pair count spelled out: `-1` cannot be inferred for an empty batch.
    pairs = x.float().to(math_dtype).reshape(*x.shape[:-1], x.shape[-1] // 2, 2).contiguous()
    x_complex = torch.view_as_complex(pairs)  # [B, S, H, D/2]
    factors = torch.view_as_complex(table.to(math_dtype).contiguous())  # [Bt, S, D/2]
    if conjugate:
        factors = factors.conj()
    rotated = x_complex * factors.unsqueeze(2)  # broadcast over heads (and batch if Bt=1)
    return torch.view_as_real(rotated).flatten(3).to(out_dtype or x.dtype)


def rotary_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    table: torch.Tensor,
    out_dtype: Optional[torch.dtype] = None,
    conjugate: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """What ``rotary_embedding`` computes, written with ``torch.view_as_complex``.

    Same arguments and layout contract as the op; differentiable by ordinary autograd.
    """
    return (
        _rotate_reference(q, table, out_dtype, conjugate),
        _rotate_reference(k, table, out_dtype, conjugate),
    )


def rotary_reference_single(
    x: torch.Tensor,
    table: torch.Tensor,
    out_dtype: Optional[torch.dtype] = None,
    conjugate: bool = False,
) -> torch.Tensor:
    """Single-tensor form of :func:`rotary_reference`."""
    return _rotate_reference(x, table, out_dtype, conjugate)


# --------------------------------------------------------------------------------------
# Triton kernel
# --------------------------------------------------------------------------------------


def _rotary_kernel(
    # Inputs [B, S, HQ, head_dim] and [B, S, HK, head_dim], head dim contiguous.
    q_ptr,
    k_ptr,
    # Table [Bt, S, head_dim / 2, 2] (cos, sin) = (real, imag) pairs; batch stride 0 when Bt == 1.
    table_ptr,
    # Outputs, contiguous [B, S, HQ, head_dim] and [B, S, HK, head_dim].
    q_out_ptr,
    k_out_ptr,
    # Sizes. HK == 0 means "no k" (the single-tensor op). The head dim is passed rather
    # than the pair count so Triton's divisible-by-16 specialisation keeps masked loads
    # vectorised for head dims like 80 (40 pairs).
    seq_len,
    HQ,
    HK,
    head_dim,
    # Strides of q and k (batch, position, head); the head-dim stride is 1.
    q_stride_b,
    q_stride_s,
    q_stride_h,
    k_stride_b,
    k_stride_s,
    k_stride_h,
    # Strides of the table (batch, position, pair, component).
    t_stride_b,
    t_stride_s,
    t_stride_p,
    t_stride_c,
    # Meta.
    CONJUGATE: tl.constexpr,  # rotate by conj(table): the backward pass
    MATH_FP64: tl.constexpr,  # float64 table -> float64 math
    BLOCK_H: tl.constexpr,  # heads per program
    BLOCK_P: tl.constexpr,  # pairs per head, padded to a power of two
):
    """Grid: (B * S rows, head blocks of q followed by head blocks of k).

    Only Triton builtins here, no @triton.jit helpers: see _cpu_kernel.

    A program loads the table row of its (batch, position) once and applies it to
    BLOCK_H heads of q or of k. Heads are loaded as contiguous rows of the head dim and
    split into (real, imag) in registers, so memory access stays vectorised.
    """
    math_dtype = tl.float64 if MATH_FP64 else tl.float32
    row = tl.program_id(0).to(tl.int64)  # flattened (batch, position); int64 offsets
    block = tl.program_id(1)
    batch = row // seq_len
    pos = row % seq_len

    # Table row: [BLOCK_P, 2] -> cos, sin of shape [BLOCK_P].
    pair = tl.arange(0, BLOCK_P)
    component = tl.arange(0, 2)
    t_offsets = pair[:, None] * t_stride_p + component[None, :] * t_stride_c
    t_mask = (2 * pair[:, None] < head_dim) & (component[None, :] < 2)
    t_row = table_ptr + batch * t_stride_b + pos * t_stride_s
    cos, sin = tl.split(tl.load(t_row + t_offsets, mask=t_mask, other=0.0).to(math_dtype))
    if CONJUGATE:
        sin = -sin

    # Pick q or k for this program. Scalar selects (not an if/else) keep one code path.
    q_blocks = (HQ + BLOCK_H - 1) // BLOCK_H
    is_q = block < q_blocks
    head_block = tl.where(is_q, block, block - q_blocks)
    n_heads = tl.where(is_q, HQ, HK)
    stride_h = tl.where(is_q, q_stride_h, k_stride_h)
    x_row = tl.where(
        is_q,
        q_ptr + batch * q_stride_b + pos * q_stride_s,
        k_ptr + batch * k_stride_b + pos * k_stride_s,
    )
    out_row = tl.where(is_q, q_out_ptr + row * HQ * head_dim, k_out_ptr + row * HK * head_dim)

    # Tile [BLOCK_H, 2 * BLOCK_P]: whole head rows, read contiguously.
    head = head_block * BLOCK_H + tl.arange(0, BLOCK_H)
    col = tl.arange(0, 2 * BLOCK_P)
    mask = (head[:, None] < n_heads) & (col[None, :] < head_dim)
    x = tl.load(x_row + head[:, None] * stride_h + col[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32).to(math_dtype)  # the idiom's x.float(), then promotion
    x_re, x_im = tl.split(tl.reshape(x, [BLOCK_H, BLOCK_P, 2]))

    out_re = x_re * cos[None, :] - x_im * sin[None, :]
    out_im = x_re * sin[None, :] + x_im * cos[None, :]
    out = tl.reshape(tl.join(out_re, out_im), [BLOCK_H, 2 * BLOCK_P])
    out_offsets = head[:, None] * head_dim + col[None, :]
    tl.store(out_row + out_offsets, out.to(out_row.dtype.element_ty), mask=mask)


# Built explicitly rather than with @triton.jit, which would return an interpreter object
# when TRITON_INTERPRET=1 is set at import time; torch.library.wrap_triton (and so
# torch.compile) needs the JIT form. CPU tensors get an interpreted twin (_cpu_kernel).
_rotary_kernel_source = _rotary_kernel
_rotary_kernel = JITFunction(_rotary_kernel_source) if HAS_TRITON else None

_interpreted_kernel = None


def _cpu_kernel():
    """The kernel run by the Triton interpreter, the only way Triton runs on CPU.

    Works whether or not TRITON_INTERPRET was set when Triton was imported, because the
    kernel calls only Triton builtins (no @triton.jit helpers such as tl.cdiv, which the
    interpreter can only call when they too were created in interpreter mode).
    """
    global _interpreted_kernel
    if _interpreted_kernel is None:
        from triton.runtime.interpreter import InterpretedFunction

        _interpreted_kernel = InterpretedFunction(_rotary_kernel_source)
    return _interpreted_kernel


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _block_sizes(max_heads: int, pairs: int) -> tuple[int, int, int]:
    """(BLOCK_H, BLOCK_P, num_warps) for a head count and pair count."""
    block_p = max(2, _next_power_of_2(pairs))  # >= 2 keeps every tile dimension > 1 wide
    block_h = max(1, min(_next_power_of_2(max_heads), _TILE_ELEMENTS // (2 * block_p)))
    num_warps = max(1, min(8, block_h * 2 * block_p // 512))
    return block_h, block_p, num_warps


# --------------------------------------------------------------------------------------
# Host side
# --------------------------------------------------------------------------------------


def _check_input(name: str, x: torch.Tensor, table: torch.Tensor) -> None:
    torch._check(x.dim() == 4, lambda: f"rotary_embedding: {name} must be [B, S, H, D], got {tuple(x.shape)}")
    torch._check(
        x.dtype in FLOAT_DTYPES,
        lambda: f"rotary_embedding: {name} must be float16/bfloat16/float32/float64, got {x.dtype}",
    )
    torch._check(
        x.device == table.device,
        lambda: f"rotary_embedding: {name} is on {x.device} but the table is on {table.device}",
    )
    torch._check(
        x.shape[3] == 2 * table.shape[2],
        lambda: (
            f"rotary_embedding: {name} head dim {x.shape[3]} must be twice the table's "
            f"{table.shape[2]} pairs (pass a slice of the head to rotate part of it)"
        ),
    )
    torch._check(
        x.shape[1] == table.shape[1],
        lambda: f"rotary_embedding: {name} has {x.shape[1]} positions but the table has {table.shape[1]}",
    )
    torch._check(
        table.shape[0] == 1 or table.shape[0] == x.shape[0],
        lambda: f"rotary_embedding: table batch {table.shape[0]} must be 1 or {name}'s batch {x.shape[0]}",
    )


def _check_table(table: torch.Tensor, out_dtype: Optional[torch.dtype]) -> None:
    torch._check(
        table.dim() == 4 and table.shape[3] == 2,
        lambda: f"rotary_embedding: table must be real pairs [Bt, S, D/2, 2], got {tuple(table.shape)}",
    )
    torch._check(
        table.dtype in FLOAT_DTYPES,
        lambda: f"rotary_embedding: table must be a real float tensor (view_as_real of freqs_cis), got {table.dtype}",
    )
    torch._check(
        out_dtype is None or out_dtype in FLOAT_DTYPES,
        lambda: f"rotary_embedding: out_dtype must be a float dtype, got {out_dtype}",
    )


def _head_dim_contiguous(x: torch.Tensor) -> torch.Tensor:
    # The kernel reads head rows contiguously; any other stride pattern is fine.
    return x if x.stride(3) == 1 else x.contiguous()


def _head_strides(x: torch.Tensor, n_heads: int) -> tuple:
    """(batch, position, head) strides; zeros for the empty stand-in of an absent k."""
    return (x.stride(0), x.stride(1), x.stride(2)) if n_heads else (0, 0, 0)


def _is_traced(t: torch.Tensor) -> bool:
    """True for fake tensors (also under functionalization): tracing, no data to run on."""
    from torch._subclasses.fake_tensor import is_fake

    return is_fake(t)


def _twin_out_dtype(x: torch.Tensor, out_dtype: Optional[torch.dtype]) -> Optional[torch.dtype]:
    # None for the input's own dtype: compiled code then passes None, not a torch.dtype,
    # which the dispatcher takes ~1.3 us to convert (a fifth of a decode-size call).
    return None if out_dtype == x.dtype else out_dtype


def _cpu_runs_interpreter() -> bool:
    """Real CPU tensors: the Triton interpreter when asked for (``TRITON_INTERPRET=1``,
    to test the Triton kernel) or when the C kernel could not be built; else the C kernel."""
    return HAS_TRITON and (os.environ.get("TRITON_INTERPRET", "0") == "1" or not rotary_cpu.available())


def _launch(q, k, table, q_out, k_out, n_k_heads: int, conjugate: bool) -> None:
    """One launch over q and k (k unused when ``n_k_heads == 0``)."""
    global launch_count
    torch._check(HAS_TRITON, lambda: f"rotary_embedding on {q.device.type} needs Triton, which is not importable")
    batch, seq_len, n_q_heads, head_dim = q.shape
    pairs = head_dim // 2
    block_h, block_p, num_warps = _block_sizes(max(n_q_heads, n_k_heads), pairs)
    head_blocks = triton.cdiv(n_q_heads, block_h) + triton.cdiv(n_k_heads, block_h)
    grid = (batch * seq_len, head_blocks)
    if batch * seq_len == 0 or head_blocks == 0:
        return
    args = (
        q, k, table, q_out, k_out,
        seq_len, n_q_heads, n_k_heads, head_dim,
        q.stride(0), q.stride(1), q.stride(2),
        *_head_strides(k, n_k_heads),
        table.stride(0) if table.shape[0] != 1 else 0, table.stride(1), table.stride(2), table.stride(3),
    )
    meta = dict(
        CONJUGATE=conjugate,
        MATH_FP64=table.dtype == torch.float64,
        BLOCK_H=block_h,
        BLOCK_P=block_p,
        num_warps=num_warps,
    )
    if _is_traced(q) or q.device.type != "cpu":
        # wrap_triton lets fake-tensor propagation and torch.compile see the kernel, so
        # Inductor launches it from generated code. Traced CPU tensors take this path too:
        # the graph is the same on every device (running it needs a GPU driver).
        wrap_triton(_rotary_kernel)[grid](*args, **meta)
    else:
        meta.pop("num_warps")  # not a launch option of the interpreter
        _cpu_kernel()[grid](*args, **meta)
    if not _is_traced(q):
        launch_count += 1


def _rotary_embedding(
    q: torch.Tensor,
    k: torch.Tensor,
    table: torch.Tensor,
    out_dtype: Optional[torch.dtype] = None,
    conjugate: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Body of ``inductor_complex::rotary_embedding`` (see the module docstring)."""
    _check_table(table, out_dtype)
    _check_input("q", q, table)
    _check_input("k", k, table)
    torch._check(
        q.dtype == k.dtype,
        lambda: f"rotary_embedding: q and k must share a dtype (got {q.dtype}, {k.dtype}); "
        "use rotary_embedding_single for each otherwise",
    )
    torch._check(
        q.shape[0] == k.shape[0] and q.shape[1] == k.shape[1] and q.shape[3] == k.shape[3],
        lambda: f"rotary_embedding: q {tuple(q.shape)} and k {tuple(k.shape)} must agree on B, S and D",
    )
    if _is_traced(q) and q.device.type == "cpu":
        return torch.ops.inductor_complex.rotary_embedding_cpu(q, k, table, _twin_out_dtype(q, out_dtype), conjugate)
    q = _head_dim_contiguous(q)
    k = _head_dim_contiguous(k)
    if q.device.type == "cpu" and not _cpu_runs_interpreter():
        return rotary_cpu.rotate(q, k, table, out_dtype, conjugate)
    q_out = torch.empty(q.shape, dtype=out_dtype or q.dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=out_dtype or k.dtype, device=k.device)
    _launch(q, k, table, q_out, k_out, k.shape[2], conjugate)
    return q_out, k_out


def _rotary_embedding_single(
    x: torch.Tensor,
    table: torch.Tensor,
    out_dtype: Optional[torch.dtype] = None,
    conjugate: bool = False,
) -> torch.Tensor:
    """Body of ``inductor_complex::rotary_embedding_single`` (see the module docstring)."""
    _check_table(table, out_dtype)
    _check_input("x", x, table)
    if _is_traced(x) and x.device.type == "cpu":
        return torch.ops.inductor_complex.rotary_embedding_single_cpu(x, table, _twin_out_dtype(x, out_dtype), conjugate)
    x = _head_dim_contiguous(x)
    if x.device.type == "cpu" and not _cpu_runs_interpreter():
        return rotary_cpu.rotate(x, None, table, out_dtype, conjugate)[0]
    out = torch.empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    # Zero k heads: the kernel never touches the k slots. They get distinct empty tensors
    # (not x and out again) so functionalization sees no aliased kernel arguments.
    unused_k = torch.empty(0, dtype=x.dtype, device=x.device)
    unused_k_out = torch.empty(0, dtype=out.dtype, device=x.device)
    _launch(x, unused_k, table, out, unused_k_out, 0, conjugate)
    return out


# --------------------------------------------------------------------------------------
# Op registration and autograd
# --------------------------------------------------------------------------------------


def _setup_context_pair(ctx, inputs, output) -> None:
    q, _k, table, _out_dtype, conjugate = inputs
    ctx.save_for_backward(table)  # the only tensor backward needs
    ctx.input_dtype = q.dtype  # gradients come back in the input dtype
    ctx.conjugate = conjugate


def _setup_context_single(ctx, inputs, output) -> None:
    x, table, _out_dtype, conjugate = inputs
    ctx.save_for_backward(table)
    ctx.input_dtype = x.dtype
    ctx.conjugate = conjugate


def _backward_pair(ctx, grad_q, grad_k):
    # Multiplying by c is a real-linear map whose transpose is multiplying by conj(c).
    (table,) = ctx.saved_tensors
    grad_q, grad_k = torch.ops.inductor_complex.rotary_embedding(
        grad_q, grad_k, table, ctx.input_dtype, not ctx.conjugate
    )
    return grad_q, grad_k, None, None, None  # no gradient for the table


def _backward_single(ctx, grad):
    (table,) = ctx.saved_tensors
    grad = torch.ops.inductor_complex.rotary_embedding_single(grad, table, ctx.input_dtype, not ctx.conjugate)
    return grad, None, None, None


def _fake_pair(q, k, table, out_dtype=None, conjugate=False):
    rotary_cpu_lowering.register_if_inductor_is_loaded()
    return (
        torch.empty(q.shape, dtype=out_dtype or q.dtype, device=q.device),
        torch.empty(k.shape, dtype=out_dtype or k.dtype, device=k.device),
    )


def _fake_single(x, table, out_dtype=None, conjugate=False):
    rotary_cpu_lowering.register_if_inductor_is_loaded()
    return torch.empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)


def _check_cpu_twin_device(x: torch.Tensor) -> None:
    # Registered for every backend (see below), but only CPU sites emit these ops.
    torch._check(x.device.type == "cpu", lambda: f"rotary_embedding_cpu: tensors on {x.device}, not CPU")


def _table_pairs(table: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The CPU twins' table as real pairs ``[Bt, S, D/2, 2]``. Past autograd a graph may
    hand them the complex table as it holds it (``rotary/table_edges.py``): contiguous,
    the same elements in the same order, so a reshape of its pairs is that view."""
    if not table.is_complex():
        return table
    pairs = torch.view_as_real(table.contiguous())
    return pairs.reshape(-1, x.shape[1], x.shape[3] // 2, 2)


def _cpu_twin_pair(q, k, table, out_dtype=None, conjugate=False):
    # Called from compiled code, whose trace already checked the arguments (the op's
    # body ran on fake tensors): no checks again on a path that decode steps take.
    _check_cpu_twin_device(q)
    table = _table_pairs(table, q)
    if _cpu_runs_interpreter():
        return _rotary_embedding(q, k, table, out_dtype, conjugate)
    if rotary_cpu.hand_over_to_cpp():
        return torch.ops.inductor_complex.rotary_embedding_cpu(q, k, table, out_dtype, conjugate)
    return rotary_cpu.rotate(_head_dim_contiguous(q), _head_dim_contiguous(k), table, out_dtype, conjugate)


def _cpu_twin_single(x, table, out_dtype=None, conjugate=False):
    _check_cpu_twin_device(x)
    table = _table_pairs(table, x)
    if _cpu_runs_interpreter():
        return _rotary_embedding_single(x, table, out_dtype, conjugate)
    if rotary_cpu.hand_over_to_cpp():
        return torch.ops.inductor_complex.rotary_embedding_single_cpu(x, table, out_dtype, conjugate)
    return rotary_cpu.rotate(_head_dim_contiguous(x), None, table, out_dtype, conjugate)[0]


# CPU twins for torch.compile, which Inductor calls as opaque ops. Registered with
# torch.library.Library rather than custom_op: a call costs ~8 us instead of ~30 us.
# No defaults in their schemas: Inductor writes an argument left at its default as a
# keyword, which costs the call about a microsecond to parse (5% of a small decode rope).
# Their Python kernels take CompositeExplicitAutograd, below the CPU kernel that the
# C++ build registers when it loads (rotary_cpu_op): that one serves CPU tensors from
# then on, these before it loads or where it could not be built.
_cpu_twins = torch.library.Library("inductor_complex", "FRAGMENT")
_cpu_twins.define(
    "rotary_embedding_cpu(Tensor q, Tensor k, Tensor table, ScalarType? out_dtype, bool conjugate)"
    " -> (Tensor, Tensor)")
_cpu_twins.define(
    "rotary_embedding_single_cpu(Tensor x, Tensor table, ScalarType? out_dtype, bool conjugate) -> Tensor")
_cpu_twins.impl("rotary_embedding_cpu", _cpu_twin_pair, "CompositeExplicitAutograd")
_cpu_twins.impl("rotary_embedding_single_cpu", _cpu_twin_single, "CompositeExplicitAutograd")
torch.library.register_fake(f"{OP_NAME}_cpu", _fake_pair, lib=_cpu_twins)
torch.library.register_fake(f"{SINGLE_OP_NAME}_cpu", _fake_single, lib=_cpu_twins)

# The ops; call them as torch.ops.inductor_complex.rotary_embedding(...) etc. Without
# Triton they are opaque custom ops too, which serve CPU tensors.
_make_op = torch.library.triton_op if HAS_TRITON else torch.library.custom_op
rotary_embedding = _make_op(OP_NAME, mutates_args=())(_rotary_embedding)
rotary_embedding_single = _make_op(SINGLE_OP_NAME, mutates_args=())(_rotary_embedding_single)
if not HAS_TRITON:
    rotary_embedding.register_fake(_fake_pair)
    rotary_embedding_single.register_fake(_fake_single)
rotary_embedding.register_autograd(_backward_pair, setup_context=_setup_context_pair)
rotary_embedding_single.register_autograd(_backward_single, setup_context=_setup_context_single)
