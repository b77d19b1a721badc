"""Losses and inner products of complex tensors.

``l1_loss`` is ATen's composite ``apply_loss_reduction((input - target).abs(),
reduction)``: the complex difference (eager's ``sub``, i.e. ``a + (-1)·b``,
reused from the arithmetic rules), its modulus (the ``abs`` rule: hypot, with
gradient 0 at 0 as eager's ``abs_backward``), then the *real* ``sum`` or
``mean``; with ``weight``, ``F.l1_loss``'s own branch: ``|d|·w`` summed, divided
by ``Σw`` for ``mean`` (compiled without the pass, Inductor's decomposition of
that branch gives wrong numbers for complex input in torch 2.13). ``mse_loss`` has no rule: eager has no complex kernel
(``"mse_cpu" not implemented for 'ComplexFloat'``), so there is nothing to match.

``dot(a, b) = Σ a·b`` and ``vdot(a, b) = Σ conj(a)·b`` are the 4-product form
of the matrix-product rules with ``torch.dot`` on the parts:
``dot = (ar·br - ai·bi) + i(ar·bi + ai·br)``,
``vdot = (ar·br + ai·bi) + i(ar·bi - ai·br)``. They agree with eager's BLAS
``cdotu``/``cdotc`` up to summation order.

``prod`` has no rule: eager's CPU reduction multiplies complex values with a
vectorized, multi-accumulator loop whose term order a product chain cannot
reproduce exactly, so it stays with eager.
"""

from __future__ import annotations

import torch

from ..values import Pair, real_dtype
from .arith import sub
from .common import cast, fake, is_tensor_proxy, require_complex_out
from .linalg import _SUPPORTED, _combine
from .registry import Unsupported, rule
from .transcendental import abs_

# torch._C._nn.l1_loss takes the reduction as ATen's enum.
_REDUCTION_ENUM = {0: "none", 1: "mean", 2: "sum"}


def _reduction(args, kwargs) -> tuple[str, object]:
    """The reduction of ``F.l1_loss(..., size_average, reduce, reduction, weight)``
    or of ``torch._C._nn.l1_loss(..., reduction_enum)``."""
    if args and type(args[0]) is int:  # the ATen enum (bool is the legacy size_average)
        if len(args) > 1 or kwargs:
            raise Unsupported("unexpected l1_loss arguments")
        return _REDUCTION_ENUM[args[0]], None
    names = ("size_average", "reduce", "reduction", "weight")
    if len(args) > len(names):
        raise Unsupported("unexpected l1_loss arguments")
    given = {**dict(zip(names, args)), **kwargs}
    if set(given) - set(names):
        raise Unsupported(f"unexpected l1_loss arguments {sorted(set(given) - set(names))}")
    reduction = given.get("reduction", "mean")
    if type(reduction) is int:
        reduction = _REDUCTION_ENUM.get(reduction)
    if given.get("size_average") is not None or given.get("reduce") is not None:
        from torch.nn import _reduction

        reduction = _reduction.legacy_get_string(given.get("size_average"), given.get("reduce"), emit_warning=False)
    if reduction not in ("none", "mean", "sum"):
        raise Unsupported(f"reduction={reduction!r}")
    return reduction, given.get("weight")


def _operand_shape(x):
    if isinstance(x, Pair):
        return tuple(fake(x.data).shape[:-1])
    if is_tensor_proxy(x):
        return tuple(fake(x).shape)
    raise Unsupported(f"l1_loss operand {x!r} is not a tensor")


@rule("l1_loss")
def l1_loss(input, target, *args, out, **kwargs):
    reduction, weight = _reduction(args, kwargs)
    if not (isinstance(input, Pair) or isinstance(target, Pair)):
        raise Unsupported("l1_loss of real tensors")
    if not isinstance(out, torch.Tensor) or out.is_complex():
        raise Unsupported("expected a real l1_loss result")
    shape = torch.broadcast_shapes(_operand_shape(input), _operand_shape(target))
    cdtype = input.dtype if isinstance(input, Pair) else target.dtype
    if isinstance(input, Pair) and isinstance(target, Pair):
        cdtype = torch.promote_types(input.dtype, target.dtype)
    if cdtype not in _SUPPORTED or real_dtype(cdtype) != out.dtype:
        raise Unsupported(f"l1_loss computing in {cdtype} for a {out.dtype} result")
    diff_fake = torch.empty(shape, dtype=cdtype, device="meta")
    diff = sub(input, target, out=diff_fake)
    modulus = abs_(diff, out=torch.empty(shape, dtype=out.dtype, device="meta"))
    if weight is not None:
        # F.l1_loss's weighted branch: |d| * w, then sum, or sum / sum(w) for mean.
        if not is_tensor_proxy(weight) or fake(weight).is_complex():
            raise Unsupported("l1_loss with a weight that is not a real tensor")
        if tuple(fake(weight).shape) != _operand_shape(input) or fake(weight).dtype != out.dtype:
            raise Unsupported("l1_loss weight of another size or dtype")
        weighted = modulus * weight
        if reduction == "none":
            return weighted
        return torch.sum(weighted) if reduction == "sum" else torch.sum(weighted) / torch.sum(weight)
    if reduction == "none":
        return modulus
    return modulus.sum() if reduction == "sum" else modulus.mean()


def _dot_operands(a, b, out):
    require_complex_out(out)
    for x in (a, b):
        if not (isinstance(x, Pair) or is_tensor_proxy(x)):
            raise Unsupported(f"dot operand {x!r}")
        value_dtype = x.dtype if isinstance(x, Pair) else fake(x).dtype
        if value_dtype != out.dtype:
            raise Unsupported("dot of mixed dtypes (eager refuses it)")
        if (x.ndim if isinstance(x, Pair) else fake(x).ndim) != 1:
            raise Unsupported("dot of other than 1-d tensors")


@rule("dot")
def dot(a, b, *, out):
    _dot_operands(a, b, out)
    return _combine(torch.dot, a, b, out)


@rule("vdot")
def vdot(a, b, *, out):
    _dot_operands(a, b, out)
    part = real_dtype(out.dtype)
    ar, ai = cast(a.data, a.part_dtype, part)[..., 0], cast(a.data, a.part_dtype, part)[..., 1]
    br, bi = cast(b.data, b.part_dtype, part)[..., 0], cast(b.data, b.part_dtype, part)[..., 1]
    # conj(a)·b = (ar - i·ai)(br + i·bi)
    re = torch.dot(ar, br) + torch.dot(ai, bi)
    im = torch.dot(ar, bi) - torch.dot(ai, br)
    return Pair(torch.stack((re, im), -1), out.dtype, out.ndim)
