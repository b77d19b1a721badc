"""``torch._foreach_*``: the elementwise rule of each element of the lists.

Optimizer steps and user code apply one op to lists of tensors
(``_foreach_add_(params, grads, alpha=-lr)``). Eager's foreach kernels compute
each element as the op on its own would, so each element is rewritten by the
op's own rule: list arguments give their i-th element, anything else
(a number, one tensor) is shared. In-place forms write each element's pair,
which views its storage, and return nothing, as eager's do.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .common import fake
from .registry import RULES, Unsupported, rule

# The elementwise ops whose rules the foreach forms reuse (those with a rule).
_ELEMENTWISE = (
    "add", "sub", "mul", "div", "neg", "abs", "exp", "expm1", "log", "log1p", "sqrt", "reciprocal",
    "sgn", "sin", "cos", "tan", "sinh", "cosh", "tanh", "pow", "zero", "copy",
)


def _element(arg, i: int, n: int):
    if isinstance(arg, (list, tuple)):
        if len(arg) != n:
            raise Unsupported("foreach lists of different lengths")
        return arg[i]
    return arg


def _element_out(z) -> torch.Tensor:
    """An in-place element's result (the element itself) as a fake value."""
    if not isinstance(z, Pair):
        raise Unsupported("an in-place foreach op on a real tensor")
    data = fake(z.data)
    with data.fake_mode:
        out = torch.empty(tuple(data.shape[:-1]), dtype=z.dtype, device=data.device)
    return out.requires_grad_(True) if data.requires_grad else out


def _foreach(name: str, in_place: bool):
    def foreach(tensors, *args, out, **kwargs):
        element_rule = RULES[name]
        if not isinstance(tensors, (list, tuple)):
            raise Unsupported("foreach of something that is not a list")
        n = len(tensors)
        if not in_place and (not isinstance(out, (list, tuple)) or len(out) != n):
            raise Unsupported("foreach result is not a list of the inputs' length")
        results = []
        for i, z in enumerate(tensors):
            element_args = [_element(a, i, n) for a in args]
            element_kwargs = {k: _element(v, i, n) for k, v in kwargs.items()}
            want = _element_out(z) if in_place else out[i]
            result = element_rule(z, *element_args, out=want, **element_kwargs)
            if not in_place and not isinstance(result, Pair):
                raise Unsupported("a foreach op with real results")  # (the pass holds lists of pairs only)
            results.append(result)
        return None if in_place else results

    foreach.__name__ = f"_foreach_{name}"
    return foreach


def _register() -> None:
    for op in _ELEMENTWISE:
        for name, in_place in ((op, False), (f"{op}_", True)):
            if name in RULES and f"_foreach_{name}" not in RULES:
                rule(f"_foreach_{name}")(_foreach(name, in_place))


_register()
