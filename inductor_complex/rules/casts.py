"""dtype and device casts, read from the node's own result.

``.to`` alone has half a dozen overloads (dtype, device, other tensor, aten's
``to.dtype_layout``...). All of them are pinned down by the fake result the
node already carries, so the rule reads dtype and device from ``out`` instead
of re-deciding what the arguments mean.
"""

from __future__ import annotations

import torch

from ..values import Pair, real_dtype
from .common import fake, is_tensor_proxy
from .registry import Unsupported, rule

_CAST_METHODS = (
    "to", "type_as", "type", "float", "double", "half", "bfloat16",
    "cfloat", "cdouble", "chalf", "cuda", "cpu", "_to_copy",
)



def _make_cast(name: str):
    always_copies = name == "_to_copy"

    def cast_rule(x, *args, out, **kwargs):
        if not isinstance(out, torch.Tensor):
            raise Unsupported(f"{name} returning a non-tensor")
        memory_format = kwargs.get("memory_format")
        if memory_format not in (None, torch.preserve_format, torch.contiguous_format):
            raise Unsupported(f"memory_format={memory_format}")
        copy = always_copies or bool(kwargs.get("copy", False))
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
    rule(_name)(_make_cast(_name))
