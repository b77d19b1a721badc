"""Small helpers shared by the rule families."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
from typing import Any

import torch
import torch.fx

from ..values import Pair, fake_value, real_dtype
from .registry import Unsupported


def pair_dim(dim: Any, ndim: int) -> int:
    """The dim of the real-pair tensor that holds complex dim ``dim``.

    Non-negative dims are unchanged; negative ones move left by one because the
    pair dim is appended after them. ``ndim`` is the complex rank the dim
    refers to (checked here so a bad dim is refused, not silently shifted).
    """
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise Unsupported(f"dim {dim!r} is not a Python int")
    if not -ndim <= dim < max(ndim, 1):
        raise Unsupported(f"dim {dim} out of range for rank {ndim}")
    return dim - 1 if dim < 0 else dim


def fake(value: Any) -> Any:
    """The fake tensor behind a traced proxy (None for constants)."""
    if isinstance(value, torch.fx.Proxy):
        return fake_value(value.node)
    return None


_current_tracer: contextvars.ContextVar = contextvars.ContextVar("inductor_complex_tracer", default=None)


@contextlib.contextmanager
def tracing_into(tracer):
    """Make ``tracer`` the one :func:`emit` records into while a rule runs."""
    token = _current_tracer.set(tracer)
    try:
        yield
    finally:
        _current_tracer.reset(token)


def current_tracer():
    """The tracer of the rule being traced (its ``origin``: the node rewritten), or None."""
    return _current_tracer.get()


def emit(target, *args, **kwargs) -> torch.fx.Proxy:
    """Record ``target(*args, **kwargs)`` in the graph the current rule rewrites.

    For calls a proxy cannot record by itself: ``operator.setitem`` (proxies
    have no ``__setitem__``) and factories whose arguments are all constants
    (they would otherwise run eagerly and bake a real tensor into the graph).
    """
    tracer = _current_tracer.get()
    if tracer is None:
        raise RuntimeError("emit() called outside a rule being traced")
    return tracer.create_proxy("call_function", target, args, kwargs)


# Whether autograd will differentiate the formula being traced. Some formulas
# carry nodes for their derivative alone: stand-ins that keep an untaken
# branch's gradient finite, signs taken so the derivative passes through 0.
# Formulas traced for their values alone (no grad, or the forward of
# rules/eager_derivative.py) leave those out: the same values from fewer nodes.
_differentiated: contextvars.ContextVar[bool] = contextvars.ContextVar("inductor_complex_differentiated", default=True)


@contextlib.contextmanager
def differentiated(value: bool):
    """Trace the formulas inside for autograd (``True``) or for their values only."""
    token = _differentiated.set(value)
    try:
        yield
    finally:
        _differentiated.reset(token)


def is_differentiated() -> bool:
    return _differentiated.get()


def stand_in(mask, value, safe):
    """``value`` where ``mask``, else the stand-in ``safe`` (a point where the
    formula is smooth, so its untaken branch's gradient stays finite). Callers
    use the result only where ``mask`` holds: without autograd it is ``value``."""
    return torch.where(mask, value, safe) if _differentiated.get() else value


def computed_once(v):
    """``v``, computed once for its many readers. Inductor inlines a value's
    whole expression into each reader unless the expression is long or holds
    an exp/log; in glibc's branchy formulas a square root read by a dozen
    comparisons and selects so became loop bodies of thousands of nodes, and
    most of the compile time. An identity ``as_strided`` view makes it write
    ``v`` once (in the same fused loop) and load it back.

    Only on tensors, where AOTAutograd traces a formula (the forward of
    rules/eager_derivative.py), and only for values: an exported aten graph
    gets no ``as_strided``, and autograd gets the formula as it is."""
    if _differentiated.get() or not isinstance(v, torch.Tensor):
        return v
    return torch.as_strided(v, v.size(), v.stride(), v.storage_offset())


def magnitude(v):
    """``|v|`` (``+0`` for ``-0``) whose derivative is ±1 on both sides of 0
    (``abs'(0) = 0`` would lose it); plain ``abs`` without autograd."""
    if not _differentiated.get():
        return torch.abs(v)
    return torch.where(torch.signbit(v.detach()), -v, v)


def is_tensor_proxy(value: Any) -> bool:
    return isinstance(value, torch.fx.Proxy) and isinstance(fake(value), torch.Tensor)


def is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, complex)) and not isinstance(value, bool)


def round_to(x: float, part: torch.dtype) -> float:
    """A Python float rounded to ``part`` (C cast semantics: overflow gives inf).

    Eager casts a wrapped Python number to the op's ``complex<float>`` or
    ``complex<double>`` before any arithmetic.
    """
    if part == torch.float32:
        return ctypes.c_float(x).value
    if part == torch.float64:
        return float(x)
    raise Unsupported(f"scalar math in {part}")


def parts(value: Any, dtype: torch.dtype):
    """(re, im) of an operand promoted to complex ``dtype``'s part dtype.

    Python numbers are rounded to the part dtype; real operands get a zero
    imaginary part (the Python number 0.0) so the emitted math keeps eager's
    terms, including eager's ``x * 0`` NaN/inf behaviour for non-finite values.
    """
    part = real_dtype(dtype)
    if isinstance(value, Pair):
        data = cast(value.data, value.part_dtype, part)
        return data[..., 0], data[..., 1]
    if is_scalar(value):
        value = complex(value)
        return round_to(value.real, part), round_to(value.imag, part)
    if is_tensor_proxy(value):
        return cast(value, fake(value).dtype, part), 0.0
    if is_symbolic_number(value):
        # A symbolic size (``z / n`` with dynamic shapes) is a Python number in
        # eager: eager's kernel wraps it as ``n + 0j`` of the op's dtype, which
        # the tensor path computes in that dtype, term for term.
        return emit(torch.scalar_tensor, value, dtype=part, device=_rewritten_device()), 0.0
    raise Unsupported(f"operand {value!r} is neither complex, real tensor nor number")


def is_symbolic_number(value: Any) -> bool:
    return isinstance(value, torch.fx.Proxy) and isinstance(fake(value), (torch.SymInt, torch.SymFloat))


def _rewritten_device() -> torch.device:
    """The device of the op the current rule rewrites."""
    origin = getattr(_current_tracer.get(), "origin", None)
    value = fake_value(origin) if origin is not None else None
    if not isinstance(value, torch.Tensor):
        raise Unsupported("a symbolic number where the op's device is unknown")
    return value.device


def broadcast_parts(value: Any, dtype: torch.dtype):
    """(re, im) of an operand shaped ``[..., n, 1]`` to broadcast against pair data.

    Like :func:`parts`, but the trailing size-1 dim lets ``pair * re`` scale both
    halves of each pair without splitting the pair tensor.
    """
    if isinstance(value, Pair):
        data = cast(value.data, value.part_dtype, real_dtype(dtype))
        return data[..., 0:1], data[..., 1:2]
    re, im = parts(value, dtype)
    return (re.unsqueeze(-1) if is_tensor_proxy(re) else re), im


def pair_data(value: Any, dtype: torch.dtype):
    """An operand as real-pair data ``[..., 2]`` of complex ``dtype``."""
    if isinstance(value, Pair):
        return cast(value.data, value.part_dtype, real_dtype(dtype))
    re, im = parts(value, dtype)
    if is_tensor_proxy(re):
        return torch.stack((re, torch.zeros_like(re)), -1)
    raise Unsupported("a scalar has no pair tensor without a device")


def written_pair(z: Pair, value: Any, device):
    """A value written into ``z`` (a number or a tensor) as pair data
    broadcastable into ``z``'s pair tensor."""
    if is_scalar(value):
        value = complex(value)
        # Two factory calls, not a tensor constant: fake tensors can trace these.
        parts = [emit(torch.scalar_tensor, p, dtype=z.part_dtype, device=device) for p in (value.real, value.imag)]
        return torch.stack(parts)
    return pair_data(value, z.dtype)


def cast(data: Any, have: torch.dtype, want: torch.dtype):
    """``data.to(want)`` only when it changes something (no no-op nodes)."""
    return data if have == want else data.to(want)


def shape_args(sizes: tuple) -> list:
    """``view(2, 3)``, ``view((2, 3))`` and ``aten.view(x, [2, 3])`` → ``[2, 3]``."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple, torch.Size)):
        sizes = tuple(sizes[0])
    for size in sizes:
        if isinstance(size, torch.dtype):
            raise Unsupported("reinterpreting a complex tensor as another dtype")
    return list(sizes)


def require_complex_out(out: Any) -> None:
    if not (isinstance(out, torch.Tensor) and out.is_complex()):
        raise Unsupported("expected a complex tensor result")
