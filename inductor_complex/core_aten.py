"""Core ATen forms of the ops the rules emit outside Core ATen.

ExecuTorch and other Core ATen consumers refuse ``hypot``, ``copysign`` and
``signbit``, which have no decomposition in torch's Core ATen table. These
keep eager's numerics where they matter: ``hypot`` neither overflows nor
underflows for large or tiny parts and is ``inf`` when either part is
(NaN or not); ``signbit`` is exact for ``-0.0``. Given up: the sign bit of
NaN (``signbit`` of any NaN is False, so ``copysign(x, nan)`` is ``|x|``),
and ``hypot`` may differ from the C library's in the last bit.

``where`` over bools becomes logic (exact): onnxruntime has no bool ``Where``.
``var_mean`` (eager's one-pass kernel, which the statistics rules emit) becomes
``var`` and ``mean`` of the same tensor, and ``diagonal_scatter`` (the scatter
rule's, also the backward of ``diagonal``) a ``where`` over the diagonal's
positions: torch's Core ATen table keeps both, and ExecuTorch refuses them.
"""

from __future__ import annotations

import functools

import torch

aten = torch.ops.aten


def _signbit(x: torch.Tensor) -> torch.Tensor:
    if not x.is_floating_point():
        return x < 0
    # -0.0 compares equal to 0; its reciprocal is -inf.
    return (x < 0) | ((x == 0) & (torch.reciprocal(x) < 0))


def _copysign(x, sign) -> torch.Tensor:
    if not isinstance(sign, torch.Tensor):
        sign = torch.scalar_tensor(sign, dtype=x.dtype if x.is_floating_point() else torch.get_default_dtype(), device=x.device)
    magnitude = torch.abs(x if x.is_floating_point() else x.to(torch.promote_types(x.dtype, sign.dtype)))
    return torch.where(_signbit(sign), -magnitude, magnitude)


def _hypot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = torch.abs(x), torch.abs(y)
    big, small = torch.maximum(x, y), torch.minimum(x, y)
    # Scaled by the larger part, so neither squaring over- nor underflows.
    ratio = torch.where(big == 0, torch.zeros_like(big), small / big)
    result = big * torch.sqrt(1 + ratio * ratio)
    return torch.where(torch.isinf(x) | torch.isinf(y), torch.full_like(result, float("inf")), result)


def _where(condition, a, b):
    """``where`` over bools as logic: onnxruntime has no bool ``Where`` kernel."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype == torch.bool):
        return NotImplemented  # (the op itself, as torch's table leaves it)
    return torch.logical_or(torch.logical_and(condition, a), torch.logical_and(torch.logical_not(condition), b))


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    return (aten.var.correction(x, dim, correction=correction, keepdim=keepdim),
            aten.mean.dim(x, dim, keepdim) if dim is not None else aten.mean.default(x))


def _diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    """``x`` with its diagonal replaced by ``src``: element ``[..., r, c]`` of the
    diagonal's plane is ``src[..., i]`` where ``c - r == offset``, ``i`` its place
    along the diagonal (``r``, or ``c`` for a negative offset)."""
    plane = torch.movedim(x, (dim1, dim2), (-2, -1))
    rows, cols = plane.shape[-2], plane.shape[-1]
    r = torch.arange(rows, device=x.device).unsqueeze(-1)
    c = torch.arange(cols, device=x.device).unsqueeze(0)
    on_diagonal = (c - r) == offset
    if src.shape[-1] == 0:
        return x.clone()
    along = torch.clamp(r if offset >= 0 else c, 0, src.shape[-1] - 1).expand(rows, cols)
    # [..., rows, cols]: one index tensor on dim 0 (runtimes' index kernels take no None indices)
    values = torch.movedim(torch.movedim(src, -1, 0)[along], (0, 1), (-2, -1))
    return torch.movedim(torch.where(on_diagonal, values, plane), (-2, -1), (dim1, dim2))


@functools.lru_cache(1)
def _ours() -> dict:
    return {
        aten.where.self: _where,
        aten.signbit.default: _signbit,
        aten.copysign.Tensor: _copysign,
        aten.copysign.Scalar: _copysign,
        aten.hypot.default: _hypot,
        aten.var_mean.correction: _var_mean,
        aten.diagonal_scatter.default: _diagonal_scatter,
    }


def core_aten_decompositions() -> dict:
    """torch.export's Core ATen table, with forms for the ops above."""
    table = torch.export.default_decompositions()
    for op, decomposition in _ours().items():
        table[op] = decomposition
    return table
