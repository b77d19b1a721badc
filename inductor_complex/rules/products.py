"""Complex ``prod`` and ``cumprod`` as trees of complex multiplies.

What eager (CPU) computes:

* ``prod`` (``prod_kernel_impl``, ATen/native/cpu/ReduceOpsKernel.cpp) is
  ``binary_kernel_reduce_vec`` with ``a * b`` and identity 1, in the result's
  dtype (complex64 accumulates in complex64; ``dtype=`` casts the input
  first). The output is filled with ``1+0j`` and the input multiplied in:
  for a short or strided reduced dim that is the sequential
  ``((1·x0)·x1)·x2 …``; for a long contiguous one (≥ 4 vectors: 32 complex64
  or 16 complex128 elements with AVX-512) 4 vector accumulators each take
  every 4·Vec::size()-th element, are combined, then multiplied into the 1.
  Large inputs are also split across threads. Each multiply is c10's
  ``(ac - bd) + (ad + bc)i``, which :func:`~.arith.complex_mul` emits.
* ``cumprod`` (``cumprod_cpu_kernel``, ``cpu_cum_base_kernel``) runs the
  sequential ``cum = 1; cum *= x_i; out_i = cum`` along the dim with ``cum``
  in ``acc_type<T, /*is_cuda=*/false>``: **complex128 even for complex64**,
  each output rounded back. A 0-d input is copied (``fill_``), not
  multiplied.

How the rules mirror it: the reduced dim's size must be static (and at most
:data:`MAX_REDUCED`); its first element is multiplied by ``1+0j`` exactly as
eager's first step does, then

* ``prod`` multiplies even and odd slices pairwise, log2(n) times, carrying
  an odd leftover at the end (n = 3 is ``(x0'·x1)·x2``), in the result's dtype;
* ``cumprod`` is a Hillis–Steele scan in float64 (eager's accumulator):
  step ``s`` multiplies element ``i >= s`` by element ``i - s`` and leaves the
  first ``s`` alone (shifting in ones would multiply them by ``1+0j`` again,
  which is not the identity on signed zeros), then rounds to the result dtype.

Finite results differ from eager only by rounding order: a tree or scan
instead of a chain, and no FMA (eager's scalar loop, ``a * c - b * d`` in
c10's ``operator*=``, is compiled with FMA contraction: ``fma(a, c, -b·d)``).
The error of a complex product is relative to its modulus, so a part that
cancels (``ac ≈ bd``) can differ by more than its own ulps, e.g. ``0`` here
against eager's ``-1e-16`` next to an imaginary part of ``1e60``. complex64
``cumprod`` is computed in float64 like eager and rounded once, so it agrees
to float rounding. Where a partial product overflows or underflows in one
order and not the other (FMA also skips one rounding, and so one overflow),
one result can be inf/NaN/0 where the other is finite, as eager's own
vectorized and sequential paths can disagree with each other.

Non-finite values (undecidable at trace time, so handled by construction):

* agree with eager bit for bit (NaN places and zero signs included): a NaN
  part anywhere in a reduced slice makes that ``prod`` and every later
  ``cumprod`` element ``nan+nanj`` (each complex multiply mixes all four
  parts), elements before it unaffected; a single element (n = 1, ``prod``
  of a 0-d tensor) is ``1·x`` (``inf+0j`` gives ``inf+nanj``; ``cumprod`` of
  a 0-d tensor keeps ``inf+0j``); n = 2 and n = 3 ``prod`` (eager's
  sequential loop: a reduced dim that is short or strided) and the first two
  ``cumprod`` outputs, as long as no finite product rounds or overflows
  (values like 0, ±0.5, ±1, ±2 with ±inf and NaN).
* may differ: an infinite part among four or more ``prod`` factors, or in
  the third ``cumprod`` output on: whether a part ends as ±inf or NaN (and
  the sign of an exact zero) depends on the multiplication order, and
  eager's own order depends on the memory layout and the vector width; and
  the overflow cases above.

Gradients come from autograd through the multiplies: the product of the
other factors, with no division, so zeros in the reduced dim (one or several)
get eager's ``prod_backward``/``cumprod_backward`` values up to rounding.
"""

from __future__ import annotations

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import is_concrete_int

from ..values import Pair, real_dtype
from .arith import complex_mul
from .common import cast, fake, pair_dim
from .reductions import result_part
from .registry import Unsupported, rule

# Longer reduced dims are refused: the scan does n·log2(n) multiplies, and nothing longer is tested.
MAX_REDUCED = 4096


def _static_length(size, what: str) -> int:
    if not is_concrete_int(size):
        raise Unsupported(f"{what} over a symbolic size: the multiply tree needs a static length")
    n = int(size)
    if n == 0:
        raise Unsupported(f"{what} over an empty dim")
    if n > MAX_REDUCED:
        raise Unsupported(f"{what} over {n} elements (more than {MAX_REDUCED} unrolled)")
    return n


def _along(data, dim: int, index: slice):
    """``data`` sliced by ``index`` along ``dim`` (a dim of the pair tensor)."""
    return data[(slice(None),) * dim + (index,)]


def _times(a, b, kind: Pair):
    """a · b (eager's c10 multiply) for pair data ``a`` and pair data or a number ``b``.

    ``kind`` gives the complex dtype and rank of the data (the rule's own
    intermediate proxies carry no fake values to read them from).
    """
    if isinstance(b, torch.fx.Proxy):
        b = kind.with_data(b)
    return complex_mul(kind.with_data(a), b, kind.dtype)


def _first_times_one(data, dim: int, n: int, kind: Pair):
    """Eager's first step ``1 · x0``: no-op on nonzero finite parts, but it can flip a
    zero's sign and turns the partner of an infinite part into NaN."""
    first = _times(_along(data, dim, slice(0, 1)), complex(1.0, 0.0), kind)
    if n == 1:
        return first
    return torch.cat((first, _along(data, dim, slice(1, n))), dim)


def _tree_product(data, dim: int, n: int, kind: Pair):
    """Product over ``dim`` (size ``n``), kept as size 1: pairwise, odd leftover last."""
    while n > 1:
        half = n // 2
        even = _along(data, dim, slice(0, 2 * half, 2))
        odd = _along(data, dim, slice(1, 2 * half, 2))
        products = _times(even, odd, kind)
        if n % 2:
            products = torch.cat((products, _along(data, dim, slice(n - 1, n))), dim)
        data, n = products, half + n % 2
    return data


def _inclusive_scan(data, dim: int, n: int, kind: Pair):
    """Hillis–Steele: after the step with shift ``s``, element i holds x[i-2s+1..i]."""
    shift = 1
    while shift < n:
        head = _along(data, dim, slice(0, shift))
        tail = _times(_along(data, dim, slice(0, n - shift)), _along(data, dim, slice(shift, n)), kind)
        data = torch.cat((head, tail), dim)
        shift *= 2
    return data


@rule("prod")
def prod(z, dim=None, keepdim=False, *, dtype=None, out):
    if not isinstance(z, Pair):
        raise Unsupported("prod of a real tensor")
    part = result_part(z, out, dtype)
    data = cast(z.data, z.part_dtype, part)
    shape = fake(z.data).shape
    kind = Pair(None, out.dtype, z.ndim)
    if z.ndim == 0:
        if dim is not None:
            pair_dim(dim, 0)  # 0 and -1 name the only element
        return Pair(_times(data, complex(1.0, 0.0), kind), out.dtype, out.ndim)
    if dim is None:
        numel = 1
        for size in shape[:-1]:
            if not is_concrete_int(size):
                raise Unsupported("prod over a symbolic size: the multiply tree needs a static length")
            numel *= int(size)
        n = _static_length(numel, "prod")
        flat, kind = data.reshape(n, 2), Pair(None, out.dtype, 1)
        result = _tree_product(_first_times_one(flat, 0, n, kind), 0, n, kind)
        return Pair(result.reshape(tuple(out.shape) + (2,)), out.dtype, out.ndim)
    if isinstance(dim, (list, tuple)):
        raise Unsupported(f"prod over dims {dim!r}")
    d = pair_dim(dim, z.ndim) % (z.ndim + 1)
    n = _static_length(shape[d], "prod")
    result = _tree_product(_first_times_one(data, d, n, kind), d, n, kind)
    if not keepdim:
        result = result.squeeze(d)
    return Pair(result, out.dtype, out.ndim)


@rule("cumprod")
def cumprod(z, dim, *, dtype=None, out):
    if not isinstance(z, Pair):
        raise Unsupported("cumprod of a real tensor")
    part = result_part(z, out, dtype)
    if z.ndim == 0:
        pair_dim(dim, 0)
        # Eager copies a 0-d input (`fill_`) instead of multiplying it by 1:
        # a new tensor, never the input itself.
        data = z.data.clone() if part == z.part_dtype else z.data.to(part)
        return z.with_data(data, out.dtype)
    d = pair_dim(dim, z.ndim) % (z.ndim + 1)
    n = _static_length(fake(z.data).shape[d], "cumprod")
    # Eager accumulates in complex128 whatever the dtype, rounding each output.
    wide = cast(cast(z.data, z.part_dtype, part), part, torch.float64)
    kind = Pair(None, torch.complex128, z.ndim)
    scanned = _inclusive_scan(_first_times_one(wide, d, n, kind), d, n, kind)
    return Pair(cast(scanned, torch.float64, real_dtype(out.dtype)), out.dtype, out.ndim)
