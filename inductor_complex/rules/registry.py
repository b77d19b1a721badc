"""The rule table: canonical op name → the real-pair math for it.

A rule is an ordinary function over :class:`~inductor_complex.values.Pair`
(complex operands), FX proxies (real tensors, symbolic ints) and Python
constants, called with the node's own arguments plus ``out=``, the node's fake
result. The pass traces it with FX proxies at the node's place. A rule that
cannot prove its rewrite exact for these arguments raises :class:`Unsupported`
with the reason; the pass then keeps the op and bridges around it.
"""

from __future__ import annotations

from typing import Callable

RULES: dict[str, Callable] = {}

# FFTs computed as products with real DFT bases (rules/fft.py): a choice, not a
# rewrite every graph wants (an FFT kernel is faster at size), so the pass
# looks here only where asked to (``real_ffts``).
DFT_RULES: dict[str, Callable] = {}

# Ops that eager lets a lazy conj/neg bit pass through (views, and ops that
# return their input): name → how the bits of the input become the result's.
# Such a rule is pure data movement, so on a value held with bits it runs on
# the storage's pair and the result keeps the bits: it stays a view as in
# eager. It takes that path only where eager's result has exactly the bits
# predicted (``z.conj().reshape`` that must copy resolves the bit in eager).
LAZY_BITS: dict[str, Callable[[bool, bool], tuple[bool, bool]]] = {}


def keep_bits(conj: bool, neg: bool) -> tuple[bool, bool]:
    return conj, neg


def toggle_conj(conj: bool, neg: bool) -> tuple[bool, bool]:
    return not conj, neg


def toggle_neg(conj: bool, neg: bool) -> tuple[bool, bool]:
    return conj, not neg


def real_part_bits(conj: bool, neg: bool) -> tuple[bool, bool]:
    """``real(conj(-z))``: conjugation leaves the real part alone."""
    return False, neg


def imag_part_bits(conj: bool, neg: bool) -> tuple[bool, bool]:
    """``imag`` of a conjugate is negated: eager returns a real neg view."""
    return False, conj != neg


class Unsupported(Exception):
    """This rule does not apply to these arguments; the message says why."""


def rule(*names: str, lazy_bits: Callable | None = None, table: dict[str, Callable] = RULES):
    """Register the decorated function as the rule for each canonical name.

    ``lazy_bits``: the op passes eager's lazy bits on (see :data:`LAZY_BITS`).
    ``table``: :data:`RULES`, or :data:`DFT_RULES` for the FFTs.
    """

    def register(fn: Callable) -> Callable:
        for name in names:
            if name in table:
                raise ValueError(f"two rules for {name!r}: {table[name].__name__} and {fn.__name__}")
            table[name] = fn
            if lazy_bits is not None:
                LAZY_BITS[name] = lazy_bits
        return fn

    return register
