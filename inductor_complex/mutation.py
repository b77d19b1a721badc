"""Which arguments a node writes, and which fake tensors share storage.

Both graph forms write in several spellings: ``z.mul_(w)``, ``z[i] = w``
(``operator.setitem``), ``z += w`` (``operator.iadd``), ``torch.add(a, b,
out=z)``, ``aten.add_.Tensor`` and ``aten.add.out``. The rewriter needs to
know what each node writes, to keep writes through lazy views exact, and
whether eager's result shares storage with an operand, to keep eager's aliasing.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

_IN_PLACE_OPERATORS = {
    operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ipow,
    operator.imatmul, operator.iand, operator.ior, operator.ixor, operator.ifloordiv, operator.imod,
    operator.ilshift, operator.irshift,
}

# In-place ops that change a tensor's metadata (shape, strides, requires_grad),
# not only its data: a view of the tensor made before them no longer matches it.
METADATA_MUTATORS = frozenset({
    "t_", "transpose_", "swapdims_", "swapaxes_", "squeeze_", "unsqueeze_", "as_strided_",
    "resize_", "resize_as_", "set_", "detach_", "requires_grad_",
})


def _name(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return node.target
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return target.overloadpacket.__name__
    return getattr(target, "__name__", "") or ""


def _is_in_place_name(name: str) -> bool:
    if name.startswith("__i") and name.endswith("__"):
        return True  # __iadd__, __imul__, ...
    return name == "__setitem__" or (name.endswith("_") and not name.startswith("_"))


def _out_tensors(kwargs: dict) -> list:
    out = kwargs.get("out")
    if out is None:
        return []
    return list(out) if isinstance(out, (list, tuple)) else [out]


def written_args(node: torch.fx.Node) -> list[Any]:
    """The arguments (nodes, usually) that ``node`` writes in place."""
    if node.op not in ("call_function", "call_method"):
        return []
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        written = []
        for i, argument in enumerate(target._schema.arguments):
            if argument.alias_info is not None and argument.alias_info.is_write:
                if i < len(node.args) and not argument.kwarg_only:
                    written.append(node.args[i])
                elif argument.name in node.kwargs:
                    written.append(node.kwargs[argument.name])
        return written
    written = _out_tensors(node.kwargs)
    if target in _IN_PLACE_OPERATORS or _is_in_place_name(_name(node)):
        written = [*node.args[:1], *written]
    return written


def mutates(node: torch.fx.Node) -> bool:
    return bool(written_args(node))


def mutates_metadata(node: torch.fx.Node) -> bool:
    """Whether ``node`` changes the shape, strides or autograd state of what it writes."""
    return node.op in ("call_function", "call_method") and _name(node) in METADATA_MUTATORS


def storage_key(t: torch.Tensor) -> StorageWeakRef:
    """What tensors viewing one storage have in common (hashable)."""
    return StorageWeakRef(t.untyped_storage())


def shares_storage(a: Any, b: Any) -> bool:
    """Whether two (fake) tensors view the same storage."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    return StorageWeakRef(a.untyped_storage()) == StorageWeakRef(b.untyped_storage())
