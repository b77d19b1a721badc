"""Complex arithmetic as real-pair math.

Operands are promoted the way eager promotes them: to the result's complex
dtype (read from ``out``), real operands with an imaginary part of 0.
"""

from __future__ import annotations

import torch

from ..values import Pair
from .common import broadcast_parts, pair_data, require_complex_out
from .registry import Unsupported, rule


def _rotate90(data):
    """Multiply pair data by i: (re, im) → (-im, re)."""
    return torch.stack((-data[..., 1], data[..., 0]), -1)


def complex_mul(a, b, dtype):
    """a * b for complex (or real/scalar) operands, as pair data of ``dtype``.

    Emitted as ``a * b.re + i·a * b.im`` (the "pair-swap" form), which
    measured faster under Inductor than ``stack(ar*br - ai*bi, ar*bi + ai*br)``
    (DESIGN.md). Term for term it is eager's formula: ``ar*br + (-ai)*bi`` and
    ``ai*br + ar*bi``, so non-finite values behave as in eager.
    """
    if not isinstance(a, Pair):
        a, b = b, a  # keep a complex operand first; multiplication commutes
    if not isinstance(a, Pair):
        raise Unsupported("no complex operand")
    a_data = pair_data(a, dtype)
    b_re, b_im = broadcast_parts(b, dtype)
    return a_data * b_re + _rotate90(a_data) * b_im


@rule("mul")
def mul(a, b, *, out):
    require_complex_out(out)
    return Pair(complex_mul(a, b, out.dtype), out.dtype, out.ndim)
