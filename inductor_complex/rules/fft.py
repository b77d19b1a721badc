"""FFTs as products with real DFT bases, for runtimes with no complex tensor
and no FFT kernel on pairs (ExecuTorch's portable kernels hold ``_fft_r2c``
but nothing that hands a real spectrum back to ``_fft_c2r``; TensorRT has no
FFT at all).

The three aten transforms every ``torch.fft`` function, ``stft`` and
``istft`` decompose into: ``_fft_r2c`` (real signal → onesided or full
spectrum), ``_fft_c2c`` and ``_fft_c2r`` (half a Hermitian spectrum → real
signal). A transform over several dims is one product per dim, each with a
basis held as a constant of the program (:mod:`.dft_bases`); the
normalization is folded into the bases. ``bins`` (one ``range`` per
transformed dim, from :mod:`..spectrum_bins`) computes only the bins a
truncated spectrum keeps.

Inexact for none of its inputs beyond rounding: each output element is a dot
product of length ``n``, so float32 results differ from the FFT kernel's by a
few ulps times ``sqrt(n)`` of the signal's scale (the FFT's own error grows
as ``log n``). Bases grow as ``n^2``: a transform past
``dft_bases.MAX_BASIS_ELEMENTS`` stays an FFT kernel.
"""

from __future__ import annotations

import math

import torch

from ..values import Pair, real_dtype
from . import dft_bases
from .common import current_tracer, fake
from .registry import DFT_RULES, Unsupported, rule

_PART_DTYPES = (torch.float32, torch.float64)


def _dims(dim, ndim: int) -> list[int]:
    dims = [d + ndim if isinstance(d, int) and d < 0 else d for d in dim]
    if not dims or any(not isinstance(d, int) or not 0 <= d < ndim for d in dims) or len(set(dims)) != len(dims):
        raise Unsupported(f"transform dims {list(dim)} for rank {ndim}")
    return dims


def _length(size) -> int:
    if not isinstance(size, int):
        raise Unsupported(f"a transform of symbolic length {size}: its basis needs the length")
    return size


def _bins(bins, d: int, count: int) -> range:
    kept = range(count) if bins is None or d not in bins else bins[d]
    if not all(0 <= k < count for k in kept):
        raise Unsupported(f"bins {kept} outside a spectrum of {count}")
    return kept


def _constant(kind: str, n: int, bins: range, inverse: bool, scale: float, dtype, device) -> torch.fx.Proxy:
    elements = dft_bases.basis_elements(kind, n, len(bins))
    if elements > dft_bases.MAX_BASIS_ELEMENTS:
        raise Unsupported(f"a length-{n} DFT basis would hold {elements} elements, past the limit of "
                          f"{dft_bases.MAX_BASIS_ELEMENTS} (bases grow as n^2): it stays an FFT")
    if kind == "c2c":
        value = dft_bases.complex_basis(n, bins, inverse=inverse, scale=scale, dtype=dtype, device=device)
    elif kind == "r2c":
        value = dft_bases.real_to_complex_basis(n, bins, scale=scale, dtype=dtype, device=device)
    else:
        value = dft_bases.complex_to_real_basis(n, scale=scale, dtype=dtype, device=device)
    span = f"{bins.start}_{bins.stop}_{bins.step}"
    name = f"_inductor_complex_dft_{kind}_{'inv' if inverse else 'fwd'}_{n}_{span}_{scale!r}_{str(dtype)[6:]}_{device.type}"
    return current_tracer().constant(value, name.replace(".", "p").replace("-", "m"))


def _moved(data, source: int, destination: int):
    """``movedim``, and no op where the dim is there already (a permute that
    moves nothing is still a node: an extra copy in some runtimes)."""
    ndim = fake(data).ndim
    if source % ndim == destination % ndim:
        return data
    return torch.movedim(data, source, destination)


def _complex_along(data, d: int, n: int, bins: range, inverse: bool, scale: float):
    """The DFT of pairs ``data`` along complex dim ``d``: ``[..., n (at d), ..., 2]`` → ``m`` bins at ``d``."""
    value = fake(data)
    basis = _constant("c2c", n, bins, inverse, scale, value.dtype, value.device)
    moved = _moved(data, d, -2).flatten(-2)  # [..., 2n], parts innermost
    return _moved(torch.matmul(moved, basis).unflatten(-1, (len(bins), 2)), -2, d)


def _check_parts(value, what: str) -> None:
    if value.dtype not in _PART_DTYPES:
        raise Unsupported(f"{what} in {value.dtype}: DFT bases in float32 and float64 only")


@rule("_fft_r2c", table=DFT_RULES)
def fft_r2c(x, dim, normalization, onesided, *, out, bins=None):
    if isinstance(x, Pair) or not isinstance(x, torch.fx.Proxy):
        raise Unsupported("_fft_r2c of a complex or constant input")
    value = fake(x)
    _check_parts(value, "a real signal")
    dims = _dims(dim, value.ndim)
    lengths = [_length(value.shape[d]) for d in dims]
    scale = dft_bases.norm_scale(normalization, math.prod(lengths))
    last, n = dims[-1], lengths[-1]
    kept = _bins(bins, last, n // 2 + 1 if onesided else n)
    basis = _constant("r2c", n, kept, False, scale, value.dtype, value.device)
    data = _moved(torch.matmul(_moved(x, last, -1), basis).unflatten(-1, (len(kept), 2)), -2, last)
    for d, n in zip(dims[:-1], lengths[:-1]):
        data = _complex_along(data, d, n, _bins(bins, d, n), False, 1.0)
    return Pair(data, out.dtype, out.ndim)


@rule("_fft_c2c", table=DFT_RULES)
def fft_c2c(z, dim, normalization, forward, *, out, bins=None):
    if not isinstance(z, Pair):
        raise Unsupported("_fft_c2c of a real input")
    _check_parts(fake(z.data), "a complex signal")
    dims = _dims(dim, z.ndim)
    lengths = [_length(fake(z.data).shape[d]) for d in dims]
    scale = dft_bases.norm_scale(normalization, math.prod(lengths))
    data = z.data
    for i, (d, n) in enumerate(zip(dims, lengths)):
        data = _complex_along(data, d, n, _bins(bins, d, n), not forward, scale if i == 0 else 1.0)
    return Pair(data, out.dtype, out.ndim)


@rule("_fft_c2r", table=DFT_RULES)
def fft_c2r(z, dim, normalization, last_dim_size, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("_fft_c2r of a real input")
    value = fake(z.data)
    _check_parts(value, "a spectrum")
    dims = _dims(dim, z.ndim)
    n = _length(last_dim_size)
    lengths = [_length(value.shape[d]) for d in dims[:-1]]
    scale = dft_bases.norm_scale(normalization, math.prod(lengths) * n)
    data = z.data
    for d, length in zip(dims[:-1], lengths):
        data = _complex_along(data, d, length, range(length), True, 1.0)
    last, half = dims[-1], n // 2 + 1
    if _length(value.shape[last]) < half:
        raise Unsupported(f"a spectrum of {value.shape[last]} bins for a length-{n} signal")  # (eager refuses too)
    basis = _constant("c2r", n, range(half), True, scale, value.dtype, value.device)
    spectrum = _moved(data, last, -2)
    if _length(value.shape[last]) > half:
        spectrum = spectrum[..., :half, :]  # (the bins past half are the conjugates of those before)
    result = _moved(torch.matmul(spectrum.flatten(-2), basis), -1, last)
    if fake(result).dtype != out.dtype or out.dtype != real_dtype(z.dtype):
        raise Unsupported(f"a {out.dtype} signal from a {z.dtype} spectrum")
    return result


@rule("fft_bins", table=DFT_RULES)
def fft_bins(x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps, *, out):
    """``inductor_complex::fft_bins`` (:mod:`..spectrum_bins`): the transform's kept bins alone."""
    bins = {d: range(start, stop, step) for d, start, stop, step in zip(bin_dims, starts, stops, steps)}
    transform = fft_r2c if forward_r2c else fft_c2c
    return transform(x, dim, normalization, flag, out=out, bins=bins)
