"""Long value formulas whose backward is eager's own derivative formula.

The inverse-trigonometric rules follow glibc's branchy kernels: ~300 pointwise
nodes per op. Autograd through them adds more than as many again (every
``where`` and stand-in differentiated), and Inductor's compile time grows
faster than the node count: tens of seconds per op on a small CPU. Eager's
derivative is a short complex formula (``derivatives.yaml``: ``asin`` is
``grad * (-z * z + 1).rsqrt().conj()``).

So where the post-grad companion will rewrite the backward graph, such a rule
emits one call of :func:`with_eager_derivative`: an autograd Function whose
forward is the value formula (without autograd, so without its gradient-safe
stand-ins) and whose backward is eager's formula written with complex ops.
AOTAutograd traces both; the companion turns the backward's complex ops into
pair math as it does for any complex op left after autograd. The gradient is
then eager's formula term for term, on branch cuts too (autograd through the
value formula follows the side the signed zero picks; eager's formula does not).
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.fx

from .common import current_tracer

# name -> (re, im) = formula(x, y, complex dtype): the value, on real parts.
_VALUE_FORMULAS: dict[str, Callable] = {}
# name -> d(z): eager's derivative factor on the complex input, multiplied into the grad.
_DERIVATIVES: dict[str, Callable] = {}


def register(name: str, value_formula: Callable, derivative: Callable) -> None:
    """``value_formula(x, y, dtype) -> (re, im)`` runs without autograd;
    ``derivative(g, z)`` is eager's, on complex tensors."""
    _VALUE_FORMULAS[name] = value_formula
    _DERIVATIVES[name] = derivative


def backward_is_rewritten() -> bool:
    """True where the rule being traced may use :func:`with_eager_derivative`:
    Dynamo's top graph (not a ``torch.cond`` branch or checkpointed region),
    and the companion rewrites the graphs after autograd (else the backward's
    complex ops would be left to Inductor's eager fallback)."""
    return bool(getattr(current_tracer(), "backward_rewritten", False))


class _EagerDerivative(torch.autograd.Function):
    @staticmethod
    def forward(ctx, pairs, name, dtype):
        ctx.save_for_backward(pairs)
        ctx.name = name
        re, im = _VALUE_FORMULAS[name](pairs[..., 0], pairs[..., 1], dtype)
        return torch.stack((re, im), -1)

    @staticmethod
    def backward(ctx, grad):
        (pairs,) = ctx.saved_tensors
        # torch.complex, not view_as_complex: the incoming grad may be expanded
        # (stride 0 in its pair dim), which no complex view can describe.
        z = torch.complex(pairs[..., 0], pairs[..., 1])
        g = torch.complex(grad[..., 0], grad[..., 1])
        return torch.view_as_real(_DERIVATIVES[ctx.name](g, z)), None, None


def with_eager_derivative(pairs: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    """``name``'s value formula on ``pairs`` (``[..., 2]`` parts of complex
    ``dtype``), differentiated with eager's derivative formula."""
    return _EagerDerivative.apply(pairs, name, dtype)


def nodes_compiled(node: torch.fx.Node) -> int:
    """How many nodes Inductor compiles for ``node``: the value formula's for a
    call of :func:`with_eager_derivative` (AOTAutograd traces it in), else 1."""
    if node.op == "call_function" and node.target is with_eager_derivative:
        return _formula_nodes(*node.args[1:])
    return 1


@functools.cache
def _formula_nodes(name: str, dtype: torch.dtype) -> int:
    formula = _VALUE_FORMULAS[name]
    traced = torch.fx.symbolic_trace(lambda x, y: formula(x, y, dtype))
    return sum(1 for n in traced.graph.nodes if n.op not in ("placeholder", "output"))
