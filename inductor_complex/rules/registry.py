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


class Unsupported(Exception):
    """This rule does not apply to these arguments; the message says why."""


def rule(*names: str):
    """Register the decorated function as the rule for each canonical name."""

    def register(fn: Callable) -> Callable:
        for name in names:
            if name in RULES:
                raise ValueError(f"two rules for {name!r}: {RULES[name].__name__} and {fn.__name__}")
            RULES[name] = fn
        return fn

    return register
