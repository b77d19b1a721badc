"""Complex arithmetic as real-pair math, term for term what eager computes.

Sources: add/sub/rsub are ``self + alpha * other`` with ``alpha`` a complex
scalar (eager's add kernel), so even ``alpha == 1`` multiplies:
``(1+1j) + (1+inf j)`` is ``nan+inf j`` in eager and here. div/reciprocal are
c10's ``complex::operator/=`` (Smith's scaled division, also for real
divisors promoted to ``(c, 0)``); ``2 / z`` is ``z.reciprocal() * 2`` as in
``Tensor.__rtruediv__``. square is the naive ``z * z`` (eager's vectorized
path; power.py reuses it for ``z ** 2``). Operands are promoted to the
result's complex dtype (read from ``out``), real operands with an imaginary
part of 0.
"""

from __future__ import annotations

import torch

from ..values import Pair, fake_value, negate_part, real_dtype, select_parts
from .common import (
    broadcast_parts,
    current_tracer,
    is_scalar,
    is_tensor_proxy,
    pair_data,
    require_complex_out,
    round_to,
)
from .pair_math import ScalarOps, is_tensor, op_dtype, pack, promoted_parts
from .registry import Unsupported, keep_bits, rule


def _rotate90(data):
    """Multiply pair data by i: (re, im) → (-im, re).

    As ``flip`` of the pair dim with the (new) first part negated: both are
    pointwise in Inductor (an index remap and an iota, :func:`negate_part`), so
    the product fuses into one loop. ``stack((-im, re))`` lowered to a concat
    that Inductor wrote to a buffer of its own and read back."""
    return negate_part(data.flip(-1), 0)


def complex_mul(a, b, dtype):
    """a * b for complex (or real/scalar) operands, as pair data of ``dtype``.

    Emitted as ``a * b.re + i·a * b.im`` (the "pair-swap" form), which
    measured faster under Inductor than ``stack(ar*br - ai*bi, ar*bi + ai*br)``
    (DESIGN.md); ``i·a`` is pointwise (see :func:`_rotate90`), so the whole
    product is one loop. Term for term it is eager's formula:
    ``ar*br + (-ai)*bi`` and ``ai*br + ar*bi``, so non-finite values behave as
    in eager.
    """
    if not isinstance(a, Pair) and (isinstance(b, Pair) or not is_tensor_proxy(a)):
        a, b = b, a  # a complex (or else a tensor) operand first; multiplication commutes
    if not (isinstance(a, Pair) or is_tensor_proxy(a)):
        raise Unsupported("no tensor operand")
    # A real tensor times a complex number is (r + 0i)(c + di), as eager promotes it.
    a_data = pair_data(a, dtype)
    b_re, b_im = broadcast_parts(b, dtype)
    if _returned_from_scalar_cpu_loops():
        a_re, a_im = a_data[..., 0:1], a_data[..., 1:2]
        return torch.cat((a_re * b_re - a_im * b_im, a_im * b_re + a_re * b_im), -1)
    return a_data * b_re + _rotate90(a_data) * b_im


def _returned_from_scalar_cpu_loops() -> bool:
    """The product being rewritten is only returned, and Inductor's pair loops on its
    CPU stay scalar (no planes): its two parts written by one loop over the pairs
    (``cat`` of the parts, which Inductor writes in place) beat the pair-swap form's
    loop over each pair's two parts, which a returned product gains nothing from.
    A complex64 product of 2^20 elements on real pairs, side by side: 1.77 ms against
    the pair-swap form's 2.06 (eager 1.17; one thread, AVX2, 2026-12-06). Under
    torch.compile such a lone product now stays eager's (:mod:`..lone_products`); this
    form serves it in AOTInductor's graphs and serves returned products with a computed
    operand, where the two forms measured level within noise
    (``perf/results/avx2_host/README.md``)."""
    tracer = current_tracer()
    origin = getattr(tracer, "origin", None)
    if origin is None or not getattr(tracer, "scalar_pair_loops_on_cpu", False):
        return False
    result = fake_value(origin)
    return (isinstance(result, torch.Tensor) and result.device.type == "cpu"
            and bool(origin.users) and all(user.op == "output" for user in origin.users))


@rule("mul")
def mul(a, b, *, out):
    require_complex_out(out)
    return Pair(complex_mul(a, b, out.dtype), out.dtype, out.ndim)


# ------------------------------------------------------- add / sub / neg


def _scaled_sum(self, other, alpha, out):
    """``self + alpha * other`` as eager's add kernel computes it."""
    dtype = op_dtype(out)
    ops = ScalarOps(real_dtype(dtype))
    if not is_scalar(alpha) and not isinstance(alpha, bool):
        raise Unsupported(f"alpha {alpha!r} is not a number")
    s_re, s_im = promoted_parts(self, dtype)
    o_re, o_im = promoted_parts(other, dtype)
    alpha = complex(alpha)
    a_re, a_im = ops.r(alpha.real), ops.r(alpha.imag)
    t_re = ops.sub(ops.mul(a_re, o_re), ops.mul(a_im, o_im))
    t_im = ops.add(ops.mul(a_re, o_im), ops.mul(a_im, o_re))
    re, im = ops.add(s_re, t_re), ops.add(s_im, t_im)
    if isinstance(self, Pair) and isinstance(other, Pair):
        # Both parts are tensors of the result's shape: selected on the pair index,
        # so that the sum fuses into its reader (a stack of the parts is a concat,
        # which Inductor writes to memory of its own on CPU, and often on a GPU).
        return Pair(select_parts(re, im), out.dtype, out.ndim)
    return pack(re, im, out, self, other)


@rule("add")
def add(self, other, *, alpha=1, out):
    if is_scalar(self):
        # `2 + z` is `z.__radd__(2)`, i.e. `z.add(2)`: the number is `other`.
        if alpha != 1:
            raise Unsupported("a number as self with alpha")
        self, other = other, self
    return _scaled_sum(self, other, alpha, out)


@rule("sub")
def sub(self, other, *, alpha=1, out):
    # sub(a, b, alpha) is add(a, b, -alpha); `2 - z` (rsub) is the same sum.
    return _scaled_sum(self, other, -alpha, out)


@rule("rsub")
def rsub(self, other, *, alpha=1, out):
    return _scaled_sum(other, self, -alpha, out)


@rule("neg")
def neg(z, *, out):
    """Eager's vectorized complex ``neg`` is ``0 - z``: a zero part comes out +0
    (its scalar tail loop's ``-z`` gives -0; the vectorized path is followed)."""
    op_dtype(out)
    return z.with_data(0.0 - z.data)


@rule("positive", lazy_bits=keep_bits)
def positive(z, *, out):
    op_dtype(out)
    return z


# ---------------------------------------------------------------- division


def smith_divide(a, b, c, d, ops: ScalarOps, *, for_autograd=False):
    """(a + bi) / (c + di), c10's ``operator/=`` (Smith's algorithm) term for term.

    ``c``/``d`` are both tensors (complex divisor), a tensor and the number 0
    (real divisor), or both numbers (a number divisor, branch chosen here).
    Each ``x·y ± z`` is one of ``ops``' fused multiply-adds, as GCC fuses them
    in eager's kernel (rules/fused.py). ``for_autograd``: the result will be
    differentiated (see :func:`_scaled_gradient_divide`).
    """
    if for_autograd and (is_tensor(c) or is_tensor(d)):
        return _scaled_gradient_divide(a, b, c, d, ops)
    if not is_tensor(c) and not is_tensor(d):
        abs_c, abs_d = abs(c), abs(d)
        if abs_c >= abs_d:
            if abs_c == 0 and abs_d == 0:
                return ops.div(a, abs_c), ops.div(b, abs_d)
            rat = ops.div(d, c)
            scl = ops.div(1.0, ops.fma(d, rat, c))
            return ops.mul(ops.fma(b, rat, a), scl), ops.mul(ops.fms(a, rat, b), scl)
        rat = ops.div(c, d)
        scl = ops.div(1.0, ops.fma(c, rat, d))
        return ops.mul(ops.fma(a, rat, b), scl), ops.mul(ops.fmsub(b, rat, a), scl)
    abs_c = c.abs() if is_tensor(c) else abs(c)
    abs_d = d.abs() if is_tensor(d) else abs(d)
    first = abs_c >= abs_d
    both_zero = (abs_c == 0) & (abs_d == 0) if is_tensor(d) else abs_c == 0
    p = torch.where(first, c, d)
    q = torch.where(first, d, c)
    rat = q / p
    scl = 1.0 / ops.fma(q, rat, p)
    re = torch.where(first, ops.fma(b, rat, a), ops.fma(a, rat, b)) * scl
    im = torch.where(first, ops.fms(a, rat, b), ops.fmsub(b, rat, a)) * scl
    # Division by 0: a / |c| and b / |d| (|d| is +0), complex inf or NaN. The
    # denominators are 1 elsewhere so the unused branch has no inf/NaN gradient.
    zero_re = ops.div(a, torch.where(both_zero, abs_c, 1.0))
    safe_d = torch.where(both_zero, abs_d, torch.ones_like(abs_c))
    zero_im = b / safe_d if is_tensor(b) or is_tensor(safe_d) else ops.div(b, safe_d)
    return torch.where(both_zero, zero_re, re), torch.where(both_zero, zero_im, im)


# Powers of two that bring a numerator's parts near the bottom of the range
# without underflow once divided: see _scaled_gradient_divide.
_NUMERATOR_FLOOR = {torch.float32: 2.0**-120, torch.float64: 2.0**-1000}


def _scaled_gradient_divide(a, b, c, d, ops: ScalarOps):
    """Smith's quotient, its values bit for bit, with the derivative taken on
    all four parts divided by ``s ≈ |c + di|``.

    The formula's backward goes through ``1/v²`` with ``v ≈ |c + di|``, which
    overflows for divisors below about 1e-154 (1e-19 in float32): where the
    numerator shrinks with the divisor (``log1p``'s ``z / (u - 1)``) the
    quotient's derivative is moderate, but autograd's sum of its terms is
    ``inf - inf``. The scaled quotient is the same number, so it has the same
    derivative, without the overflow; ``s`` is raised where the numerator is
    so much larger that ``a / s`` would overflow instead.
    """
    re, im = smith_divide(a, b, c, d, ops)

    def magnitude(x, y):
        return torch.maximum(*(v.abs() if is_tensor(v) else torch.full_like(re, abs(v)) for v in (x, y))).detach()

    m = torch.maximum(magnitude(c, d), magnitude(a, b) * _NUMERATOR_FLOOR[ops.part])
    s = torch.where(torch.isfinite(m) & (m > 0), m, 1.0)
    re_s, im_s = smith_divide(a / s, b / s, c / s, d / s, ops)

    def with_gradient_of(value, scaled):
        # value - (+0): the value bit for bit, the gradient the scaled one's
        # (none where the scaled one is not finite).
        zero = torch.where(torch.isfinite(scaled.detach()), scaled.detach() - scaled, 0.0)
        return value.detach() - zero

    return with_gradient_of(re, re_s), with_gradient_of(im, im_s)


def _divide(self, other, out) -> Pair:
    dtype = op_dtype(out)
    ops = ScalarOps(real_dtype(dtype))
    a, b = promoted_parts(self, dtype)
    c, d = promoted_parts(other, dtype)
    re, im = smith_divide(a, b, c, d, ops, for_autograd=out.requires_grad)
    return pack(re, im, out, self, other)


def _reciprocal_pair(z: Pair, out) -> Pair:
    dtype = op_dtype(out)
    ops = ScalarOps(real_dtype(dtype))
    c, d = promoted_parts(z, dtype)
    re, im = smith_divide(1.0, 0.0, c, d, ops, for_autograd=out.requires_grad)
    return pack(re, im, out, z)


def _number_over(number, z, out) -> Pair:
    """``number / z`` as ``Tensor.__rtruediv__``: ``z.reciprocal() * number``."""
    if not isinstance(z, Pair):
        raise Unsupported("a number divided by a real tensor")
    if z.dtype != out.dtype:
        raise Unsupported("a complex number over a real-dtype-promoted tensor")
    recip = _reciprocal_pair(z, out)
    number = complex(number)
    part = real_dtype(out.dtype)
    number = complex(round_to(number.real, part), round_to(number.imag, part))
    return Pair(complex_mul(recip, number, out.dtype), out.dtype, out.ndim)


@rule("div")
def div(self, other, *, rounding_mode=None, out):
    if rounding_mode is not None:
        raise Unsupported(f"rounding_mode={rounding_mode!r}")
    if is_scalar(self):
        return _number_over(self, other, out)
    return _divide(self, other, out)


@rule("rdiv")
def rdiv(self, other, *, out):
    if not is_scalar(other):
        raise Unsupported("rdiv by a tensor")
    return _number_over(other, self, out)


@rule("reciprocal")
def reciprocal(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("reciprocal of a real tensor")
    return _reciprocal_pair(z, out)


# ------------------------------------------------------- products and powers


def product(a, b, out) -> Pair:
    return Pair(complex_mul(a, b, op_dtype(out)), out.dtype, out.ndim)


@rule("square")
def square(z, *, out):
    if not isinstance(z, Pair):
        raise Unsupported("square of a real tensor")
    return product(z, z, out)
