"""Real matrices that compute a discrete Fourier transform along one dim.

A length-``n`` DFT is a matrix product: ``X[k] = sum_t x[t] w^(k t)`` with
``w = exp(-2 pi i / n)`` (``exp(+2 pi i / n)`` for the inverse). On real pairs
(``[..., n, 2]`` read as ``[..., 2n]``, part innermost) the complex product is
one real product with a ``[2n, 2m]`` matrix; from a real signal it is
``[n, 2m]``; to a real signal (``irfft``, whose input holds half a Hermitian
spectrum) it is ``[2m, n]``. Only the bins a caller keeps are computed (``bins``).

Entries are computed in float64 from the exact integer phase ``k t mod n``
and cast once, and the quarter turns are exact (``sin(pi)`` is 0, not 1e-16),
so a basis is as accurate as its dtype holds.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

# A basis holds about n^2 numbers: at most this many elements each (64 MiB in float32),
# so the largest transform taken is a length-2048 complex or length-4095 real one.
MAX_BASIS_ELEMENTS = 1 << 24


def basis_elements(kind: str, n: int, bins: int) -> int:
    """Numbers in a basis of ``kind`` ("c2c", "r2c" or "c2r") over ``n`` points and ``bins`` bins."""
    return (2 if kind == "c2c" else 1) * n * 2 * bins


def _turns(n: int, bins: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` of ``2 pi k t / n`` for k in ``bins`` (rows), t < n (columns), in float64."""
    k = torch.tensor(list(bins), dtype=torch.int64)
    t = torch.arange(n, dtype=torch.int64)
    phase = torch.remainder(k[:, None] * t[None, :], n)  # exact: k t mod n
    angle = phase.to(torch.float64) * (2 * math.pi / n)
    cos, sin = torch.cos(angle), torch.sin(angle)
    quarter = torch.remainder(4 * phase, n) == 0  # k t / n a multiple of a quarter turn
    q = torch.div(4 * phase, n, rounding_mode="floor")
    exact_cos = torch.tensor([1.0, 0.0, -1.0, 0.0], dtype=torch.float64)[q.clamp(max=3)]
    exact_sin = torch.tensor([0.0, 1.0, 0.0, -1.0], dtype=torch.float64)[q.clamp(max=3)]
    return torch.where(quarter, exact_cos, cos), torch.where(quarter, exact_sin, sin)


def complex_basis(n: int, bins: Sequence[int], *, inverse: bool, scale: float, dtype, device) -> torch.Tensor:
    """``[2n, 2m]``: pairs ``[..., n, 2]`` (flattened) times it are the bins ``bins`` of their DFT."""
    cos, sin = _turns(n, bins)
    sin = sin if inverse else -sin  # w^(kt) = cos + i sin (inverse) or cos - i sin
    c, s = cos.T * scale, sin.T * scale  # [n, m]: row t, column k
    # (re, im) of sum_t (c + i s)(x_re + i x_im): re = c x_re - s x_im, im = s x_re + c x_im
    basis = torch.stack((torch.stack((c, s), -1), torch.stack((-s, c), -1)), 1)  # [n, 2 (part in), m, 2 (part out)]
    return basis.reshape(2 * n, 2 * len(bins)).to(dtype=dtype, device=device).contiguous()


def real_to_complex_basis(n: int, bins: Sequence[int], *, scale: float, dtype, device) -> torch.Tensor:
    """``[n, 2m]``: a real signal ``[..., n]`` times it is the bins ``bins`` of its forward DFT, as pairs."""
    cos, sin = _turns(n, bins)
    basis = torch.stack((cos.T, -sin.T), -1) * scale  # [n, m, 2]
    return basis.reshape(n, 2 * len(bins)).to(dtype=dtype, device=device).contiguous()


def complex_to_real_basis(n: int, *, scale: float, dtype, device) -> torch.Tensor:
    """``[2m, n]`` with ``m = n // 2 + 1``: the first ``m`` bins of a spectrum (pairs,
    flattened) times it are the real length-``n`` signal of the Hermitian spectrum
    they begin, as ``irfft`` computes it. The bins past ``m`` are the conjugates
    of those before, so each inner bin counts twice; the imaginary parts of the
    zero bin (and of the middle one, for even ``n``) meet ``sin = 0`` and count for nothing."""
    m = n // 2 + 1
    cos, sin = _turns(n, range(m))  # [m, n]
    weight = torch.full((m, 1), 2.0, dtype=torch.float64)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    # x[t] = sum_k weight_k (re_k cos - im_k sin)
    basis = torch.stack((cos * weight, -sin * weight), 1) * scale  # [m, 2, n]
    return basis.reshape(2 * m, n).to(dtype=dtype, device=device).contiguous()


def norm_scale(normalization: int, n: int) -> float:
    """aten's ``normalization`` of a transform over ``n`` points: 0 none, 1 ``1/sqrt(n)``, 2 ``1/n``."""
    return {0: 1.0, 1: 1.0 / math.sqrt(n), 2: 1.0 / n}[normalization]
