"""dtype and device casts, read from the node's own result.

``.to`` alone has half a dozen overloads (dtype, device, other tensor, aten's
``to.dtype_layout``...). All of them are pinned down by the fake result the
node already carries, so the rule reads dtype and device from ``out`` instead
of re-deciding what the arguments mean. Only ``copy`` must be read from the
arguments (eager aliases a no-op cast unless asked to copy), keyword or
positional as torch.export records it.
"""

from __future__ import annotations

import torch

from ..values import Pair, real_dtype
from .common import fake, is_tensor_proxy
from .registry import Unsupported, keep_bits, rule

_CAST_METHODS = (
    "to", "type_as", "type", "float", "double", "half", "bfloat16",
    "cfloat", "cdouble", "chalf", "cuda", "cpu", "_to_copy",
)


def _copy_requested(name: str, args: tuple, kwargs: dict) -> bool:
    """``copy=`` of a cast. ``Tensor.to`` takes it positionally after ``dtype,
    non_blocking`` or ``other, non_blocking`` (``to(dtype, False, True)``), or
    after ``device, dtype, non_blocking``."""
    if "copy" in kwargs:
        return bool(kwargs["copy"])
    if name != "to" or not args:
        return False
    first = args[0]
    position = 2 if isinstance(first, (torch.dtype, Pair, torch.fx.Proxy)) else 3
    return len(args) > position and bool(args[position])


def _make_cast(name: str):
    always_copies = name == "_to_copy"

    def cast_rule(x, *args, out, **kwargs):
        if not isinstance(out, torch.Tensor):
            raise Unsupported(f"{name} returning a non-tensor")
        memory_format = kwargs.get("memory_format")
        if memory_format is None and name == "to" and args and isinstance(args[-1], torch.memory_format):
            memory_format = args[-1]
        if memory_format not in (None, torch.preserve_format, torch.contiguous_format):
            raise Unsupported(f"memory_format={memory_format}")
        copy = always_copies or _copy_requested(name, args, kwargs)
        result = _cast(x, out, copy, name)
        if memory_format == torch.contiguous_format:
            # Contiguous pairs are exactly the pairs of a contiguous complex tensor.
            return result.with_data(result.data.contiguous()) if isinstance(result, Pair) else result.contiguous()
        return result

    cast_rule.__name__ = f"cast_{name}"
    return cast_rule


def _cast(x, out, copy: bool, name: str):
    if isinstance(x, Pair):
        if out.is_complex():
            return Pair(x.data.to(device=out.device, dtype=real_dtype(out.dtype), copy=copy), out.dtype, x.ndim)
        if out.dtype == torch.bool:
            # Any nonzero part makes True (1j is True), as eager's cast does.
            return ((x.re != 0) | (x.im != 0)).to(device=out.device)
        # complex → real keeps the real part, as eager does (with its warning);
        # always a copy, as eager's is.
        return x.re.to(device=out.device, dtype=out.dtype, copy=True)
    if not is_tensor_proxy(x):
        raise Unsupported(f"{name} of a non-tensor")
    if out.is_complex():
        re = x.to(device=out.device, dtype=real_dtype(out.dtype))
        return Pair(torch.stack((re, torch.zeros_like(re)), -1), out.dtype, fake(x).ndim)
    # A real tensor cast with a complex tensor only as the reference (`to(z)`).
    return x.to(device=out.device, dtype=out.dtype, copy=copy)


for _name in _CAST_METHODS:
    # A cast that changes nothing returns its input, bits and all.
    rule(_name, lazy_bits=keep_bits)(_make_cast(_name))
