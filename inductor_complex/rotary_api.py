"""Eager entry point for the fused rotary embedding.

``apply_rotary_emb`` is a drop-in for the Llama reference function of the same name::

    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
        xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

It runs the fused kernel (``inductor_complex::rotary_embedding``): Triton on CUDA
tensors; on CPU tensors the C kernel (``kernels/rotary_cpu.py``, built on first use), or
the Triton kernel in its interpreter when ``TRITON_INTERPRET=1`` is set (for CI).
Everywhere else (CUDA without Triton, a CPU with no compiler, other devices) it computes
the same with complex math. The kernels are imported only when one is actually used.
"""

from __future__ import annotations

import os

import torch

__all__ = ["apply_rotary_emb", "rotary_table"]

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_COMPLEX_DTYPES = (torch.complex32, torch.complex64, torch.complex128)


def rotary_table(freqs_cis: torch.Tensor, batch: int, seq_len: int, head_dim: int) -> torch.Tensor:
    """Normalise a rotary table to the kernel's layout, real pairs ``[Bt, S, D/2, 2]``.

    Accepts complex ``freqs_cis`` or its ``view_as_real`` form, shaped ``[S, D/2]``,
    ``[Bt, S, D/2]`` (``Bt`` 1 or ``batch``: per-batch positions) or broadcast-shaped
    ``[Bt, S, 1, D/2]`` (Llama's ``reshape_for_broadcast``). Returns a view where possible.
    Raises ``TypeError``/``ValueError`` describing what does not fit.
    """
    if not isinstance(freqs_cis, torch.Tensor):
        raise TypeError(f"freqs_cis must be a tensor, got {type(freqs_cis).__name__}")
    if freqs_cis.dtype in _COMPLEX_DTYPES:
        pairs = torch.view_as_real(freqs_cis)
    elif freqs_cis.dtype in _FLOAT_DTYPES:
        if freqs_cis.dim() == 0 or freqs_cis.shape[-1] != 2:
            raise ValueError(
                "a real freqs_cis must be view_as_real pairs with a last dim of 2, "
                f"got shape {tuple(freqs_cis.shape)}"
            )
        pairs = freqs_cis
    else:
        raise TypeError(f"freqs_cis must be complex (or its real-pair view), got dtype {freqs_cis.dtype}")

    lead = tuple(pairs.shape[:-2])  # everything before [D/2, 2]
    if len(lead) == 3 and lead[2] == 1:  # [Bt, S, 1, D/2]: drop the head axis
        pairs = pairs.squeeze(2)
        lead = lead[:2]
    if len(lead) == 1:  # [S, D/2]: shared by the batch
        pairs = pairs.unsqueeze(0)
        lead = (1,) + lead
    if len(lead) != 2:
        raise ValueError(
            "freqs_cis must be shaped [S, D/2], [B, S, D/2] or [B, S, 1, D/2] (complex), "
            f"got {_describe(freqs_cis)}"
        )

    table_batch, table_len, table_pairs = pairs.shape[0], pairs.shape[1], pairs.shape[2]
    if table_len != seq_len:
        raise ValueError(
            f"freqs_cis covers {table_len} positions but the inputs have sequence length {seq_len} "
            "(slice the table to the positions being rotated)"
        )
    if 2 * table_pairs != head_dim:
        raise ValueError(
            f"freqs_cis has {table_pairs} frequencies but the head dim {head_dim} needs {head_dim // 2} "
            "(D/2); to rotate part of each head, pass that slice of xq and xk"
        )
    if table_batch not in (1, batch):
        raise ValueError(f"freqs_cis batch {table_batch} must be 1 or the inputs' batch {batch}")
    return pairs


def apply_rotary_emb(
    xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate ``xq [B, S, Hq, D]`` and ``xk [B, S, Hk, D]`` by ``freqs_cis``.

    Outputs are contiguous, in the inputs' dtypes, computed in float32 (float64 for a
    complex128 table) like the Llama reference. Differentiable in ``xq`` and ``xk``; a
    ``freqs_cis`` that requires grad (a learned table) is rotated by the reference math,
    which gives it its gradient (the kernel's backward has none for the table).
    """
    _check_input("xq", xq)
    _check_input("xk", xk)
    batch, seq_len, _, head_dim = xq.shape
    if xk.shape[0] != batch or xk.shape[1] != seq_len:
        raise ValueError(
            f"xq and xk must share batch and sequence length, got xq {tuple(xq.shape)} and xk {tuple(xk.shape)}"
        )
    if xk.shape[3] != head_dim:
        raise ValueError(f"xq and xk must share the head dim, got {head_dim} and {xk.shape[3]}")
    table = rotary_table(freqs_cis, batch, seq_len, head_dim)
    for name, x in (("xq", xq), ("xk", xk)):
        if x.device != table.device:
            raise ValueError(f"{name} is on {x.device} but freqs_cis is on {table.device}")

    table_needs_grad = torch.is_grad_enabled() and freqs_cis.requires_grad
    if _use_kernel(xq) and not table_needs_grad:
        from .kernels import rotary  # noqa: F401  (registers the ops)

        if xq.dtype == xk.dtype:
            return torch.ops.inductor_complex.rotary_embedding(xq, xk, table)
        single = torch.ops.inductor_complex.rotary_embedding_single
        return single(xq, table), single(xk, table)

    from .kernels.rotary import rotary_reference_single

    return rotary_reference_single(xq, table), rotary_reference_single(xk, table)


def _check_input(name: str, x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a tensor, got {type(x).__name__}")
    if x.dtype not in _FLOAT_DTYPES:
        raise TypeError(
            f"{name} must be a real floating tensor (float16, bfloat16, float32 or float64), got {x.dtype}"
        )
    if x.dim() != 4:
        raise ValueError(f"{name} must be [batch, seq, heads, head_dim], got shape {tuple(x.shape)}")
    if x.shape[3] % 2 != 0:
        raise ValueError(f"{name} head dim must be even (it holds (real, imag) pairs), got {x.shape[3]}")


def _use_kernel(x: torch.Tensor) -> bool:
    """Triton on CUDA; on CPU the C kernel or, when asked for, the Triton interpreter;
    otherwise reference math."""
    from .kernels.rotary import HAS_TRITON

    if x.device.type == "cuda":
        return HAS_TRITON
    if x.device.type != "cpu":
        return False
    if os.environ.get("TRITON_INTERPRET", "0") == "1" and HAS_TRITON:
        return True
    from .kernels import rotary_cpu

    return rotary_cpu.available()


def _describe(t: torch.Tensor) -> str:
    return f"shape {tuple(t.shape)} dtype {t.dtype}"
