"""Meta Llama's rotary embedding, written with complex numbers.

The idiom the pass and the fused kernel exist for, kept in one place for the
demo, the benchmark and the tests (and as the eager reference users compare
against). Behaviour matches the Llama reference code.
"""

from __future__ import annotations

import torch


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0, dtype=torch.float32) -> torch.Tensor:
    """The rotary table: complex ``[end, dim/2]`` from ``torch.polar`` (complex128 for float64)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].to(dtype) / dim))
    t = torch.arange(end, dtype=dtype)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[S, D/2]`` → ``[1, S, 1, D/2]`` against ``x`` of ``[B, S, H, D/2]``."""
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb_complex(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    """The Llama reference ``apply_rotary_emb``: complex multiply of interleaved pairs."""
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)
