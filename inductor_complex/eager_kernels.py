"""Complex matrix products on CPU through eager's complex BLAS, on the pairs.

On CPU a product of two complex matrices is one BLAS call either way: Inductor
calls an extern GEMM for real matrices too, so the rewrite buys no fusion.
Eager's complex BLAS reads the interleaved layout natively and took 0.39 to
0.78 of the time of four real GEMMs; the fastest real form took 0.55 to 0.90,
slower in 15 of 16 shape/dtype/mode rows and tied in the last
(``perf/results/matmul_forms_cpu_2026-11-30.md``).

So under ``torch.compile`` on CPU such a product can become
``inductor_complex::complex_matmul_cpu``: an opaque op that takes and returns
real ``[..., 2]`` pairs and inside views them as complex for eager's kernel.
Inductor sees real tensors only, as with any extern GEMM; the op's gradients
are the same op on the adjoints, so autograd (and a double backward) stays real
too. Past autograd the graphs call its twin, which has no autograd kernel and a
C++ CPU kernel, and takes complex operands and results as they are at a graph's
edges (:mod:`.matmul_calls`): a call then costs 8 us against eager ``mm``'s 3
(8x8, one thread; through Python it was 33-63 us). By default
(``complex_blas_on_cpu=None``) it takes products of at least
``MIN_MACS_PER_THREAD`` multiply-adds per thread, and products of a dynamic
size not known to be smaller (the real form measured 0.85x of stock's speed at
128^3 with ``dynamic=True``, where the op holds stock's). Training steps of
square complex64 products, one thread (``python -m perf.matmul_cpu_threshold``,
2026-12-04, three runs): the op beat the real GEMM form at every size from
16^3 to 384^3 (by 0.5 to 19%) and was within 6% of stock compile either way
but once (128^3, 12% slower in one run, equal in two: 0.93 ms against the
real form's 1.07 and stock's 0.93). The LRU benchmark's products ([4, 16, 32]
by [32, 32], 2^16 multiply-adds) made its training step 9-11% slower with the op,
so the threshold sits above them (both runs: ``perf/results/matmul_cpu_2026-12-04.md``).
It scales with torch's thread count, on the assumption that the GEMM's time
shrinks with threads and the call's does not. ``True`` sends every product
to the op, ``False`` none. Exported programs and AOTInductor, whose runtimes
cannot call the op, always get the real GEMM form.
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from .values import Pair, fake_value, real_dtype

MATRIX_PRODUCTS = frozenset({"mm", "bmm", "matmul"})
REASON = "eager's complex BLAS on the pairs (CPU; measured faster than the real GEMM forms, perf/results/matmul_forms_cpu_2026-11-30.md)"
OP_NAME = "inductor_complex::complex_matmul_cpu"
_SUPPORTED = (torch.complex64, torch.complex128)


# 2^18: 64^3, where the op took 0.43-0.61 ms against the real form's 0.53-0.73 (three runs);
# above the LRU benchmark's products (2^16), which measured slower with the op.
MIN_MACS_PER_THREAD = 2**18


def faster_in_eager(name: str, node: torch.fx.Node, any_size: bool = False) -> str | None:
    """Why eager's complex BLAS should run ``node`` (an op named ``name``), or None.
    Unless ``any_size``, not for a product known to be small."""
    if name not in MATRIX_PRODUCTS:
        return None
    result = fake_value(node)
    operands = [fake_value(a) for a in node.args[:2] if isinstance(a, torch.fx.Node)]
    if not (isinstance(result, torch.Tensor) and result.dtype in _SUPPORTED and result.device.type == "cpu"):
        return None
    if len(operands) != 2 or not all(isinstance(t, torch.Tensor) and t.dtype == result.dtype for t in operands):
        return None  # a real operand (eager refuses mixed matmul): nothing of eager's to prefer
    if any(t.ndim < 2 for t in operands):
        return None  # matmul of a vector: its gradient shapes differ; the real form serves it
    if any_size:
        return REASON
    # Each result element takes K multiply-adds (K: the left operand's last dim).
    macs = result.numel() * operands[0].shape[-1]
    threshold = MIN_MACS_PER_THREAD * torch.get_num_threads()
    if statically_known_true(macs < threshold):
        return None
    if statically_known_true(macs >= threshold):
        return f"{REASON}; {macs} multiply-adds, at least {MIN_MACS_PER_THREAD} per thread"
    # A dynamic size: one compile serves every size, and the op is the form that stayed
    # within noise of stock at all sizes measured (the real form: 0.85x at 128^3, dynamic=True).
    return f"{REASON}; {macs} multiply-adds, a dynamic size not known to be below {MIN_MACS_PER_THREAD} per thread"


def eager_blas_product(a, b, *, out) -> Pair:
    """The rule for a product :func:`faster_in_eager` chose: the op on the pairs."""
    return Pair(torch.ops.inductor_complex.complex_matmul_cpu(a.data, b.data), out.dtype, out.ndim)


def _as_complex(x: torch.Tensor, adjoint: bool) -> torch.Tensor:
    """Pairs (or, for the twin op, a complex operand as it is) as the complex value."""
    if not x.is_complex():
        if x.stride(-1) != 1 or x.storage_offset() % 2 or any(s % 2 for s in x.stride()[:-1]):
            x = x.contiguous()  # view_as_complex needs whole complex elements
        x = torch.view_as_complex(x)
    return x.mH if adjoint else x  # a lazy view: BLAS takes the adjoint as a flag


def _new_product(left, right, complex_out: bool) -> torch.Tensor:
    """An empty result of ``left @ right`` (complex operands, broadcast batch dims):
    complex, or its real pairs."""
    batch = left.shape[:-2]
    if batch != right.shape[:-2]:  # broadcast_shapes alone took a fifth of a small product's call
        batch = torch.broadcast_shapes(batch, right.shape[:-2])
    shape = (*batch, left.shape[-2], right.shape[-1])
    # (torch.empty: new_empty of a lazily conjugated operand copies it first)
    if complex_out:
        return torch.empty(shape, dtype=left.dtype, device=left.device)
    return torch.empty((*shape, 2), dtype=real_dtype(left.dtype), device=left.device)


def _complex_matmul(a, b, adjoint_a=False, adjoint_b=False, complex_out=False):
    left, right = _as_complex(a, adjoint_a), _as_complex(b, adjoint_b)
    # BLAS writes straight into a tensor of our own: the result must not be a
    # view (of matmul's complex result), or autograd treats it as one.
    result = _new_product(left, right, complex_out)
    out = result if complex_out else torch.view_as_complex(result)
    # mm and bmm hand an adjoint to BLAS as a flag. matmul, called here below the
    # op's autograd kernel, first copies a conjugated operand (a 128^3 gradient
    # product measured ~100 us of copy in 450 us); it serves broadcast batches.
    if left.ndim == right.ndim == 2:
        torch.mm(left, right, out=out)
    elif right.ndim == 2 and not adjoint_a and left.shape[-1] and right.shape[-1]:
        # a batch times one matrix: the batch's rows, one mm (an empty K or N has no -1 to infer)
        torch.mm(left.reshape(-1, left.shape[-1]), right, out=out.view(-1, right.shape[-1]))
    elif left.ndim == right.ndim == 3 and left.shape[0] == right.shape[0]:
        torch.bmm(left, right, out=out)
    else:
        torch.matmul(left, right, out=out)
    return result


def _fake(a, b, adjoint_a=False, adjoint_b=False, complex_out=False):
    left, right = (x if x.is_complex() else torch.view_as_complex(x.new_empty(x.shape)) for x in (a, b))
    left, right = left.mT if adjoint_a else left, right.mT if adjoint_b else right
    torch._check(left.shape[-1] == right.shape[-2], lambda: f"complex_matmul_cpu: {left.shape} @ {right.shape}")
    torch._check(left.dtype == right.dtype, lambda: f"complex_matmul_cpu: {a.dtype} and {b.dtype} operands")
    return _new_product(left, right, complex_out)


def _setup_context(ctx, inputs, output) -> None:
    a, b, adjoint_a, adjoint_b = inputs
    ctx.save_for_backward(a, b)
    ctx.adjoints = (adjoint_a, adjoint_b)


def _backward(ctx, grad):
    # For C = X @ Y: dX = G @ Y^H and dY = X^H @ G, with X = A or A^H (Y alike);
    # a broadcast batch dim sums back to the operand's shape.
    a, b = ctx.saved_tensors
    adjoint_a, adjoint_b = ctx.adjoints
    product = torch.ops.inductor_complex.complex_matmul_cpu
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = product(b, grad, adjoint_b, True) if adjoint_a else product(grad, b, False, not adjoint_b)
        grad_a = grad_a.sum_to_size(a.shape)
    if ctx.needs_input_grad[1]:
        if not (adjoint_a or adjoint_b) and a.ndim > 3 and b.ndim == 3:
            # A batch of a times one matrix b: the batch's rows side by side, one product
            # (as matmul's own gradient takes it) rather than a product per batch, summed.
            grad_b = product(a.flatten(0, -3), grad.flatten(0, -3), True, False)
        else:
            grad_b = product(grad, a, True, adjoint_a) if adjoint_b else product(a, grad, not adjoint_a, False)
            grad_b = grad_b.sum_to_size(b.shape)
    return grad_a, grad_b, None, None


# torch.library.Library rather than custom_op, as the rotary CPU twins are (custom_op's
# call costs more); with the Python autograd kernel a call still measured 33-63 us.
_library = torch.library.Library("inductor_complex", "FRAGMENT")
_library.define("complex_matmul_cpu(Tensor a, Tensor b, bool adjoint_a=False, bool adjoint_b=False) -> Tensor")
_library.impl("complex_matmul_cpu", _complex_matmul, "CPU")
torch.library.register_fake(OP_NAME, _fake, lib=_library)
torch.library.register_autograd(OP_NAME, _backward, setup_context=_setup_context, lib=_library)

# The same product for graphs past autograd, which need no autograd kernel: its
# CPU kernel is C++ (kernels/complex_matmul_op.py) once the kernel library has
# loaded; this Python one, under CompositeExplicitAutograd (which a backend's own
# kernel outranks), serves before that or where the library could not be built.
def _kernel_op_in_python(a, b, adjoint_a=False, adjoint_b=False, complex_out=False):
    from .kernels import rotary_cpu

    if a.device.type == "cpu" and rotary_cpu.hand_over_to_cpp():  # a compile-cache hit: load, then C++
        return torch.ops.inductor_complex.complex_matmul_cpu_kernel(a, b, adjoint_a, adjoint_b, complex_out)
    with torch._C._AutoDispatchBelowADInplaceOrView():  # past autograd: nothing to record
        return _complex_matmul(a, b, adjoint_a, adjoint_b, complex_out)


# Its operands may also be complex and its result complex (complex_out): at a
# graph's edges that spares Inductor's view_as_real / view_as_complex calls.
KERNEL_OP_NAME = "inductor_complex::complex_matmul_cpu_kernel"
_library.define("complex_matmul_cpu_kernel(Tensor a, Tensor b, bool adjoint_a=False, bool adjoint_b=False,"
                " bool complex_out=False) -> Tensor")
_library.impl("complex_matmul_cpu_kernel", _kernel_op_in_python, "CompositeExplicitAutograd")
torch.library.register_fake(KERNEL_OP_NAME, _fake, lib=_library)
