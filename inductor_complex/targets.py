"""Every spelling of an op, reduced to one canonical name.

The hook sees two graph forms. Dynamo's torch-level graph spells ``z * w`` as
``operator.mul``, ``torch.mul``, ``call_method "mul"`` or ``torch.Tensor.mul``
and ``z.real`` as ``getattr(z, "real")``; the aten graph from torch.export
spells it ``aten.mul.Tensor``. :func:`normalize` maps a node to
``(name, args, kwargs)`` so one rule serves all of them. Arguments keep their
positions: torch functions, Tensor methods and aten overloads agree on them.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import torch
import torch.fx

aten = torch.ops.aten


class OpCall(NamedTuple):
    name: str
    args: tuple
    kwargs: dict


# Python operators and the method names they stand for.
_OPERATORS = {
    operator.mul: "mul",
    operator.imul: "mul_",
    operator.add: "add",
    operator.iadd: "add_",
    operator.sub: "sub",
    operator.isub: "sub_",
    operator.truediv: "div",
    operator.itruediv: "div_",
    operator.neg: "neg",
    operator.pos: "positive",
    operator.pow: "pow",
    operator.matmul: "matmul",
    operator.eq: "eq",
    operator.ne: "ne",
    operator.getitem: "getitem",
    operator.setitem: "setitem",
    abs: "abs",
    torch._C._linalg.linalg_vector_norm: "vector_norm",
}

# Names that mean the same op (aliases, dunder methods, aten-only spellings).
_ALIASES = {
    "multiply": "mul",
    "__mul__": "mul",
    "__rmul__": "mul",
    "multiply_": "mul_",
    "__imul__": "mul_",
    "__add__": "add",
    "__radd__": "add",
    "__iadd__": "add_",
    "__sub__": "sub",
    "subtract": "sub",
    "__rsub__": "rsub",
    "__truediv__": "div",
    "divide": "div",
    "true_divide": "div",
    "__rtruediv__": "rdiv",
    "__neg__": "neg",
    "negative": "neg",
    "__getitem__": "getitem",
    "__setitem__": "setitem",
    "__matmul__": "matmul",
    "__pow__": "pow",
    "__rpow__": "rpow",
    "__abs__": "abs",
    "absolute": "abs",
    "swapaxes": "transpose",
    "swapdims": "transpose",
    "split_with_sizes": "split",
    "split_with_sizes_copy": "split_copy",
    "_conj": "conj",
    "_conj_physical": "conj_physical",
    "concat": "cat",
    "concatenate": "cat",
    "sym_size": "size",
    "numpy_T": "T",  # aten's names for Tensor.T and Tensor.H (recorded so from torch 2.14 on)
    "matrix_H": "H",
    "moveaxis": "movedim",
    "linalg_vector_norm": "vector_norm",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "arcsin_": "asin_",
    "arccos_": "acos_",
    "arctan_": "atan_",
    "arcsinh_": "asinh_",
    "arccosh_": "acosh_",
    "arctanh_": "atanh_",
}

# Namespaces whose functions are called by their own name.
_NAMESPACE_PREFIXES = (
    (torch, "torch"),
    (torch.Tensor, "Tensor"),
    (torch.nn.functional, "F"),
    (torch.fft, "torch.fft"),
    (torch.linalg, "torch.linalg"),
    (torch.special, "torch.special"),
    (torch._C._nn, "torch._C._nn"),  # F.pad and friends, as Dynamo records them
)
_NAMESPACES = tuple(namespace for namespace, _ in _NAMESPACE_PREFIXES)

# torch.fft's functions are torch._C._fft's under other names (`fft` is
# `fft_fft`), and Dynamo records the C function: map them back.
_FFT_FUNCTIONS = {getattr(torch.fft, name): name for name in torch.fft.__all__ if callable(getattr(torch.fft, name))}


def _function_name(target: Any) -> str | None:
    try:
        if target in _FFT_FUNCTIONS:
            return _FFT_FUNCTIONS[target]
    except TypeError:  # an unhashable target
        pass
    name = getattr(target, "__name__", None)
    if name is None:
        return None
    for namespace in _NAMESPACES:
        if getattr(namespace, name, None) is target:
            return name
    return None


def canonical_name(node: torch.fx.Node) -> str | None:
    """The canonical op name of a call node, or None when it is not an op call."""
    if node.op == "call_method":
        name = node.target
    elif node.op != "call_function":
        return None
    elif isinstance(node.target, torch._ops.OpOverload):
        name = node.target.overloadpacket.__name__
    elif isinstance(node.target, torch._ops.OpOverloadPacket):
        name = node.target.__name__
    elif node.target in _OPERATORS:
        name = _OPERATORS[node.target]
    else:
        name = _function_name(node.target)
        if name is None:
            return None
    return _ALIASES.get(name, name)


def normalize(node: torch.fx.Node) -> OpCall | None:
    """``(name, args, kwargs)`` for a call node, in the torch-level convention."""
    if node.op == "call_function" and node.target is getattr:
        # Dynamo spells `z.real` as getattr(z, "real"): an op with no arguments.
        obj, attr = node.args[:2]
        return OpCall(_ALIASES.get(attr, attr), (obj,), {})
    name = canonical_name(node)
    if name is None:
        return None
    return OpCall(name, tuple(node.args), dict(node.kwargs))


def describe_target(node: torch.fx.Node) -> str:
    """A short readable name for logs: `torch.polar`, `Tensor.abs`, `aten.mul.Tensor`."""
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return f"aten.{target.__name__}" if target.namespace == "aten" else str(target)
    if node.op == "call_function" and target is getattr:
        return f"Tensor.{node.args[1]}"
    name = _function_name(target)
    if name is not None:
        for namespace, prefix in _NAMESPACE_PREFIXES:
            if getattr(namespace, name, None) is target:
                return f"{prefix}.{name}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", str(target))
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    return f"{module}.{name}" if module else name


def _edge_op(target: Any) -> torch._ops.OpOverload | None:
    """The aten op an ExecuTorch Edge-dialect op wraps (``EdgeOpOverload._op``), found without importing ExecuTorch."""
    op = None if isinstance(target, torch._ops.OpOverload) else getattr(target, "_op", None)
    return op if isinstance(op, torch._ops.OpOverload) else None


def unwrap_edge_ops(graph: torch.fx.Graph) -> int:
    """Edge-dialect calls become calls of the aten ops they wrap (which they
    only forward to), so the rules and Inductor see one form; returns how many."""
    count = 0
    for node in graph.nodes:
        if node.op == "call_function" and (op := _edge_op(node.target)) is not None:
            node.target = op
            count += 1
    return count
