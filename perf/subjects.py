"""What the benchmarks time: each subject builds a :class:`Case` at a size.

Sizes: ``tiny`` (CI: seconds, numbers meaningless), ``quick`` (CPU, a few
minutes for all), ``full`` (the real shapes; on CUDA the Llama-3 ones).
A case's ``limit`` is the best any implementation could do: the same model
with the rotary embedding removed, or a plain copy of the rope's inputs.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import torch
from torch import nn

from inductor_complex.demo import ModelArgs
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

from . import models

SIZES = ("tiny", "quick", "full")


@dataclasses.dataclass
class Case:
    forward: Callable  # what is compiled: a module or a function of ``inputs``
    inputs: tuple
    train: bool  # time forward + backward (of fixed output gradients), else forward under no_grad
    limit: Callable | None = None  # the same inputs through the limit
    limit_name: str = ""
    rotary: bool = False  # holds the rotary idiom (the fused kernel applies)
    complex_matmul: bool = False  # holds a product of complex matrices (complex_blas_on_cpu applies)
    tolerance: float = 1e-3  # allowed max |compiled - eager| over max(1, max |eager|)
    note: str = ""  # the shapes, for the tables


class _Copy(torch.autograd.Function):
    """The rope's memory floor: read the input, write an output of its size,
    forward and (for training) backward alike."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()


def copy_floor(q, k, freqs_cis):
    return _Copy.apply(q), _Copy.apply(k)


def _pick(size: str, device: str, tiny, quick, full, gpu=None):
    if size == "tiny":
        return tiny
    if size == "quick":
        return quick
    return gpu if (device == "cuda" and gpu is not None) else full


def _activations_dtype(device: str) -> torch.dtype:
    return torch.bfloat16 if device == "cuda" else torch.float32


# ------------------------------------------------------------- rope alone


def _rope(size, device, *, train, shapes) -> Case:
    batch, seq, q_heads, kv_heads, head_dim, position = _pick(size, device, *shapes)
    dtype = _activations_dtype(device)
    q = torch.randn(batch, seq, q_heads, head_dim, device=device, dtype=dtype, requires_grad=train)
    k = torch.randn(batch, seq, kv_heads, head_dim, device=device, dtype=dtype, requires_grad=train)
    table = precompute_freqs_cis(head_dim, position + seq).to(device)[position:]
    return Case(
        apply_rotary_emb_complex, (q, k, table), train, copy_floor, "copy floor", rotary=True,
        tolerance=5e-2 if dtype == torch.bfloat16 else 1e-3,
        note=f"B={batch} S={seq} heads {q_heads}/{kv_heads} D={head_dim} {str(dtype)[6:]}",
    )


def rope_train(size, device):
    return _rope(size, device, train=True, shapes=(
        (1, 8, 2, 1, 8, 0), (2, 256, 8, 2, 64, 0), (4, 1024, 16, 4, 64, 0), (4, 8192, 32, 8, 128, 0)))


def rope_long_context(size, device):
    return _rope(size, device, train=False, shapes=(
        (1, 32, 2, 1, 8, 0), (1, 2048, 8, 2, 64, 0), (1, 8192, 16, 4, 64, 0), (1, 131072, 32, 8, 128, 0)))


def rope_decode(size, device):
    return _rope(size, device, train=False, shapes=(
        (2, 1, 2, 1, 8, 5), (16, 1, 8, 2, 64, 100), (64, 1, 32, 8, 128, 1000), (64, 1, 32, 8, 128, 1000)))


# ----------------------------------------------------- Llama-style decoder


def _llama_args(size, device, shape: str, rope=True) -> tuple[ModelArgs, int, int]:
    """(args, batch, seq). ``shape`` "1b"/"8b": Llama-3.2-1B's and Llama-3-8B's
    layer shapes at full size; scaled down, same proportions, below that."""
    full = {
        "1b": dict(dim=2048, n_heads=32, n_kv_heads=8, ffn_hidden=8192),
        "8b": dict(dim=4096, n_heads=32, n_kv_heads=8, ffn_hidden=14336),
    }[shape]
    quick = {
        "1b": dict(dim=256, n_heads=4, n_kv_heads=1, ffn_hidden=1024),
        "8b": dict(dim=512, n_heads=4, n_kv_heads=1, ffn_hidden=1792),
    }[shape]
    tiny = dict(dim=32, n_heads=4, n_kv_heads=2, ffn_hidden=64)
    dims, layers, batch, seq = _pick(size, device, (tiny, 1, 1, 8), (quick, 2, 2, 128), (full, 1, 1, 128), (full, 4, 4, 2048))
    return ModelArgs(**dims, n_layers=layers, max_seq_len=max(seq, 64), rope=rope), batch, seq


def _llama_layers(size, device, shape, train) -> Case:
    args, batch, seq = _llama_args(size, device, shape)
    dtype = _activations_dtype(device)
    torch.manual_seed(0)
    model = models.Layers(args).to(device=device)
    _cast_weights(model, dtype)
    limit = models.Layers(dataclasses.replace(args, rope=False)).to(device=device)
    limit.load_state_dict(model.state_dict())
    _cast_weights(limit, dtype)
    h = torch.randn(batch, seq, args.dim, device=device, dtype=dtype, requires_grad=train)
    return Case(model, (h,), train, limit, "rope removed", rotary=True, tolerance=_model_tolerance(dtype),
                note=f"{args.n_layers} layers dim {args.dim} heads {args.n_heads}/{args.n_kv_heads} B={batch} S={seq}")


def _cast_weights(model: nn.Module, dtype: torch.dtype) -> None:
    """Parameters to ``dtype``, the complex rope table left complex64 (as Llama keeps it)."""
    for parameter in model.parameters():
        parameter.data = parameter.data.to(dtype)


def _model_tolerance(dtype):
    return 5e-2 if dtype == torch.bfloat16 else 2e-3


def llama_1b_train(size, device):
    return _llama_layers(size, device, "1b", train=True)


def llama_8b_train(size, device):
    return _llama_layers(size, device, "8b", train=True)


def llama_1b_prefill(size, device):
    return _llama_layers(size, device, "1b", train=False)


def _llama_decode(size, device, shape) -> Case:
    args, batch, seq = _llama_args(size, device, shape)
    dtype = _activations_dtype(device)
    torch.manual_seed(0)
    model = models.CachedDecoder(args, batch).to(device)
    _cast_weights(model, dtype)
    model.cache_k, model.cache_v = model.cache_k.to(dtype), model.cache_v.to(dtype)
    limit = models.CachedDecoder(dataclasses.replace(args, rope=False), batch).to(device)
    limit.load_state_dict(model.state_dict())
    _cast_weights(limit, dtype)
    limit.cache_k, limit.cache_v = limit.cache_k.to(dtype), limit.cache_v.to(dtype)
    position = torch.tensor([seq // 2], device=device)  # one token, half way into the cache
    h = torch.randn(batch, 1, args.dim, device=device, dtype=dtype)
    return Case(model, (h, position), False, limit, "rope removed", rotary=True, tolerance=_model_tolerance(dtype),
                note=f"{args.n_layers} layers dim {args.dim} B={batch}, static cache of {args.max_seq_len}")


def llama_1b_decode(size, device):
    return _llama_decode(size, device, "1b")


def llama_8b_decode(size, device):
    return _llama_decode(size, device, "8b")


# ------------------------------------------------------------ other models


def wan_block_train(size, device):
    dim, heads, grid, batch = _pick(size, device, (48, 2, (2, 2, 2), 1), (256, 4, (4, 8, 8), 1),
                                    (768, 12, (4, 16, 16), 1), (1536, 12, (8, 30, 52), 1))
    torch.manual_seed(0)
    model = models.WanBlock(dim, heads, grid).to(device)
    limit = models.WanBlock(dim, heads, grid, rope=False).to(device)
    limit.load_state_dict(model.state_dict())
    f, h, w = grid
    x = torch.randn(batch, f * h * w, dim, device=device, requires_grad=True)
    return Case(model, (x,), True, limit, "rope removed", tolerance=2e-3,
                note=f"dim {dim} heads {heads} grid {f}x{h}x{w}, complex128 table")


def fno_train(size, device):
    width, modes, grid, batch = _pick(size, device, (4, 2, 8, 1), (16, 8, 32, 4), (32, 12, 64, 8), (64, 16, 128, 16))
    torch.manual_seed(0)
    x = torch.randn(batch, width, grid, grid, device=device, requires_grad=True)
    return Case(models.SpectralConv2d(width, modes).to(device), (x,), True, complex_matmul=True,
                note=f"width {width} modes {modes} grid {grid}^2 B={batch}")


def s4d_train(size, device):
    d_model, n_state, length, batch = _pick(size, device, (4, 4, 16, 1), (64, 32, 512, 4), (256, 64, 2048, 8), (512, 64, 4096, 16))
    torch.manual_seed(0)
    u = torch.randn(batch, d_model, length, device=device, requires_grad=True)
    return Case(models.S4DLayer(d_model, n_state, length).to(device), (u,), True, complex_matmul=True,
                note=f"d_model {d_model} states {n_state} L={length} B={batch}")


def lru_train(size, device):
    d_model, n_state, length, batch = _pick(size, device, (4, 4, 4, 1), (32, 32, 16, 4), (64, 64, 32, 8), (256, 256, 64, 16))
    torch.manual_seed(0)
    u = torch.randn(batch, length, d_model, device=device, requires_grad=True)
    return Case(models.LRULayer(d_model, n_state).to(device), (u,), True, tolerance=2e-3, complex_matmul=True,
                note=f"d_model {d_model} states {n_state} L={length} (sequential scan) B={batch}")


def complex_product(a, b):
    return a * b


def complex_product_inference(size, device):
    """A lone elementwise product of two complex inputs: nothing for the pass's code to
    fuse with, so stock's one call of eager's vectorized complex kernel is its bar."""
    n = _pick(size, device, 64, 1 << 20, 1 << 22, 1 << 24)
    torch.manual_seed(0)
    a, b = (torch.randn(n, dtype=torch.complex64, device=device) for _ in range(2))
    return Case(complex_product, (a, b), False, note=f"complex64 a * b, {n} elements")


def complex_matmul(a, b):
    return a @ b


def complex_matmul_train(size, device):
    n = _pick(size, device, 8, 128, 512, 4096)
    torch.manual_seed(0)
    a = torch.randn(n, n, dtype=torch.complex64, device=device, requires_grad=True)
    b = torch.randn(n, n, dtype=torch.complex64, device=device, requires_grad=True)
    return Case(complex_matmul, (a, b), True, tolerance=1e-3 * max(1, n // 64), complex_matmul=True,
                note=f"complex64 {n}x{n} @ {n}x{n}")


SUBJECTS: dict[str, Callable[[str, str], Case]] = {
    "rope_train": rope_train,
    "rope_long_context": rope_long_context,
    "rope_decode": rope_decode,
    "llama_1b_train": llama_1b_train,
    "llama_8b_train": llama_8b_train,
    "llama_1b_prefill": llama_1b_prefill,
    "llama_1b_decode": llama_1b_decode,
    "llama_8b_decode": llama_8b_decode,
    "wan_block_train": wan_block_train,
    "fno_train": fno_train,
    "s4d_train": s4d_train,
    "lru_train": lru_train,
    "complex_matmul_train": complex_matmul_train,
    "complex_product_inference": complex_product_inference,
}
