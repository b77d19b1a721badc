"""Turn the pass on and off globally, keeping any pass the user already set.

``torch._inductor.config.pre_grad_custom_pass`` holds one pass or a list of
them; ``enable`` appends ours to what is there, ``disable`` takes only ours out.
"""

from __future__ import annotations

import contextlib

import torch._inductor.config as inductor_config

from .complex_to_real_pass import ComplexToRealPass


def _installed() -> list:
    current = inductor_config.pre_grad_custom_pass
    if current is None:
        return []
    return list(current) if isinstance(current, (list, tuple)) else [current]


def _set(passes: list) -> None:
    inductor_config.pre_grad_custom_pass = None if not passes else passes[0] if len(passes) == 1 else passes


def enable(**options) -> ComplexToRealPass:
    """Install a ``ComplexToRealPass(**options)`` for every later compile."""
    complex_pass = ComplexToRealPass(**options)
    others = [p for p in _installed() if not isinstance(p, ComplexToRealPass)]
    _set([*others, complex_pass])
    return complex_pass


def disable() -> None:
    """Remove any installed ``ComplexToRealPass``; other passes stay."""
    _set([p for p in _installed() if not isinstance(p, ComplexToRealPass)])


@contextlib.contextmanager
def enabled(**options):
    """``with inductor_complex.enabled(): torch.compile(model)(x)``."""
    before = inductor_config.pre_grad_custom_pass
    complex_pass = enable(**options)
    try:
        yield complex_pass
    finally:
        inductor_config.pre_grad_custom_pass = before
