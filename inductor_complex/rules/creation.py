"""Complex tensors made from nothing or from another tensor's shape.

A complex ``zeros``/``ones``/``full`` becomes the real pair tensor with the
value's parts in it, recorded with :func:`emit` (factories whose arguments
are all constants have no proxy to trace them with); a complex ``randn``/
``rand`` becomes the real draw eager makes into its pair tensor.
"""

from __future__ import annotations

import math

import torch

from ..values import Pair, real_dtype
from .common import emit, fake, is_scalar, is_tensor_proxy
from .registry import Unsupported, rule

_SUPPORTED = (torch.complex64, torch.complex128)
_IGNORED = ("layout", "pin_memory", "requires_grad", "device", "dtype", "names")


def _complex_out(out) -> torch.dtype:
    if not (isinstance(out, torch.Tensor) and out.is_complex() and out.dtype in _SUPPORTED):
        raise Unsupported("expected a complex64/complex128 result")
    return real_dtype(out.dtype)


def _check_kwargs(kwargs) -> None:
    if kwargs.get("layout") not in (None, torch.strided):
        raise Unsupported(f"layout={kwargs['layout']}")
    if kwargs.get("memory_format") not in (None, torch.preserve_format, torch.contiguous_format):
        raise Unsupported(f"memory_format={kwargs['memory_format']}")
    if kwargs.get("requires_grad"):
        raise Unsupported("requires_grad=True on a factory")
    extra = set(kwargs) - set(_IGNORED) - {"memory_format"}
    if extra:
        raise Unsupported(f"arguments {sorted(extra)}")


def _like_parts(x, out, value: complex, kwargs):
    """Pair of ``out``'s shape filled with ``value``, shaped like tensor ``x``."""
    part = _complex_out(out)
    _check_kwargs(kwargs)
    base = x.re if isinstance(x, Pair) else x
    if not is_tensor_proxy(base) and not isinstance(x, Pair):
        raise Unsupported("a *_like of something that is not a tensor")
    re = torch.full_like(base, value.real, dtype=part, device=out.device)
    im = torch.full_like(base, value.imag, dtype=part, device=out.device)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


def _real_like(x, out, value, kwargs):
    """A real-dtype ``*_like`` of a complex tensor: only its shape matters."""
    if not (isinstance(x, Pair) and isinstance(out, torch.Tensor)) or isinstance(value, complex):
        raise Unsupported("a real *_like with a complex value")
    _check_kwargs(kwargs)
    return torch.full_like(x.re, value, dtype=out.dtype, device=out.device)


@rule("zeros_like")
def zeros_like(x, *, out, **kwargs):
    if isinstance(x, Pair) and out.is_complex() and out.dtype == x.dtype:
        _check_kwargs(kwargs)
        return x.with_data(torch.zeros_like(x.data))
    if not out.is_complex():
        return _real_like(x, out, 0, kwargs)
    return _like_parts(x, out, 0j, kwargs)


@rule("ones_like")
def ones_like(x, *, out, **kwargs):
    if not out.is_complex():
        return _real_like(x, out, 1, kwargs)
    return _like_parts(x, out, 1 + 0j, kwargs)


@rule("full_like")
def full_like(x, fill_value, *, out, **kwargs):
    if not is_scalar(fill_value):
        raise Unsupported("full_like with a tensor fill value")
    if not out.is_complex():
        return _real_like(x, out, fill_value, kwargs)
    return _like_parts(x, out, complex(fill_value), kwargs)


def _sizes(size) -> list:
    if len(size) == 1 and isinstance(size[0], (list, tuple, torch.Size)):
        size = tuple(size[0])
    return list(size)


def _factory(size, out, value: complex, kwargs):
    part = _complex_out(out)
    _check_kwargs(kwargs)
    sizes = _sizes(size)
    re = emit(torch.full, [*sizes], value.real, dtype=part, device=out.device)
    im = emit(torch.full, [*sizes], value.imag, dtype=part, device=out.device)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)


@rule("zeros")
def zeros(*size, out, **kwargs):
    return _factory(size, out, 0j, kwargs)


@rule("ones")
def ones(*size, out, **kwargs):
    return _factory(size, out, 1 + 0j, kwargs)


@rule("full")
def full(size, fill_value, *, out, **kwargs):
    if not is_scalar(fill_value):
        raise Unsupported("full with a tensor fill value")
    return _factory((size,), out, complex(fill_value), kwargs)


# An uninitialized complex tensor is an uninitialized pair tensor (what it
# holds is unspecified either way; Inductor's decompositions make them).


@rule("empty")
def empty(*size, out, **kwargs):
    part = _complex_out(out)
    _check_kwargs(kwargs)
    return Pair(emit(torch.empty, [*_sizes(size), 2], dtype=part, device=out.device), out.dtype, out.ndim)


@rule("empty_like")
def empty_like(x, *, out, **kwargs):
    if not out.is_contiguous():
        raise Unsupported("empty_like with a non-contiguous result")
    size = [x.data.size(d) for d in range(x.ndim)] if isinstance(x, Pair) else None
    if size is None:
        raise Unsupported("empty_like of something that is not a complex tensor")
    return empty(size, out=out, **{k: v for k, v in kwargs.items() if k != "memory_format"})


@rule("new_empty")
def new_empty(x, *size, out, **kwargs):
    if isinstance(out, torch.Tensor) and not out.is_complex():
        _check_kwargs(kwargs)  # a real tensor from a complex one's dtype-less call
        return emit(torch.empty, [*_sizes(size)], dtype=out.dtype, device=out.device)
    return empty(*size, out=out, **kwargs)


# ``self.new_zeros(size)``: a factory with ``self``'s dtype and device unless
# given; only the result (``out``) decides what is made.


def _new(size, out, value, kwargs):
    if isinstance(out, torch.Tensor) and not out.is_complex():
        # A real tensor made from a complex one's dtype-less call: its own factory.
        if isinstance(value, complex):
            raise Unsupported("a complex fill value for a real result")
        _check_kwargs(kwargs)
        return emit(torch.full, [*_sizes(size)], value, dtype=out.dtype, device=out.device)
    return _factory(size, out, complex(value), kwargs)


@rule("new_zeros")
def new_zeros(x, *size, out, **kwargs):
    return _new(size, out, 0, kwargs)


@rule("new_ones")
def new_ones(x, *size, out, **kwargs):
    return _new(size, out, 1, kwargs)


@rule("new_full")
def new_full(x, size, fill_value, *, out, **kwargs):
    if not is_scalar(fill_value):
        raise Unsupported("new_full with a tensor fill value")
    return _new((size,), out, fill_value, kwargs)


@rule("fill")
def fill(x, value, *, out):
    # The functional fill_ (AOTAutograd's graphs): a new tensor like x holding value.
    if not is_scalar(value):
        raise Unsupported("fill with a tensor value")
    if not out.is_complex():
        return _real_like(x, out, value, {})
    return _like_parts(x, out, complex(value), {})


@rule("scalar_tensor")
def scalar_tensor(value, *, out, **kwargs):
    # A complex Python number never reaches the graph as a complex tensor
    # (AOTInductor's C++ wrapper has no complex scalar).
    if not is_scalar(value):
        raise Unsupported("scalar_tensor of a symbolic value")
    return _factory(((),), out, complex(value), kwargs)


# Random complex tensors, drawn as eager draws them (ATen's normal_/uniform_
# on a complex tensor fill its view_as_real): a normal draw of the pair tensor
# with each part's std 1/sqrt(2) (so |z| has variance 1), or a uniform draw of
# each part in [0, 1). The same generator state gives eager's numbers where
# the random op itself runs as eager's (Inductor's ``fallback_random``).
_PART_STD = 1 / math.sqrt(2)  # eager's std / sqrt(2), for std 1


def _random_pair(size, out, kwargs, normal: bool) -> Pair:
    part = _complex_out(out)
    _check_kwargs(kwargs)
    sizes = [*_sizes(size), 2]
    if normal:
        data = emit(torch.normal, 0.0, _PART_STD, sizes, dtype=part, device=out.device)
    else:
        data = emit(torch.rand, sizes, dtype=part, device=out.device)
    return Pair(data, out.dtype, out.ndim)


def _random_like(x, out, kwargs, normal: bool) -> Pair:
    base = fake(x.data) if isinstance(x, Pair) else fake(x) if is_tensor_proxy(x) else None
    if base is None:
        raise Unsupported("a random *_like of something that is not a tensor")
    if not out.is_contiguous():
        # Eager fills its result in memory order, which follows x's strides
        # (when x is dense): the draw would land on other elements.
        raise Unsupported("a random *_like with a non-contiguous result")
    size = [x.data.size(d) if isinstance(x, Pair) else x.size(d) for d in range(base.ndim - isinstance(x, Pair))]
    return _random_pair(size, out, {k: v for k, v in kwargs.items() if k != "memory_format"}, normal)


@rule("randn")
def randn(*size, out, **kwargs):
    return _random_pair(size, out, kwargs, normal=True)


@rule("rand")
def rand(*size, out, **kwargs):
    return _random_pair(size, out, kwargs, normal=False)


@rule("randn_like")
def randn_like(x, *, out, **kwargs):
    return _random_like(x, out, kwargs, normal=True)


@rule("rand_like")
def rand_like(x, *, out, **kwargs):
    return _random_like(x, out, kwargs, normal=False)
