"""Turn the pass on and off globally, keeping any pass the user already set.

Three of Inductor's hooks take it: ``pre_grad_custom_pass`` (Dynamo's graph,
where the rewrite does most of its work), ``joint_custom_post_pass``
(AOTAutograd's graph before the forward and backward are split: the rotary
ops' tables) and ``post_grad_custom_pre_pass`` (the forward and backward
graphs, where the gradient math around ops kept complex appears). Each holds
one pass or a list of them; ``enable`` appends ours to what is there,
``disable`` takes only ours out.
"""

from __future__ import annotations

import contextlib

import torch._inductor.config as inductor_config

from .complex_to_real_pass import ComplexToRealPass, JointGraphTables

PRE_GRAD, JOINT, POST_GRAD = "pre_grad_custom_pass", "joint_custom_post_pass", "post_grad_custom_pre_pass"


def _installed(slot: str) -> list:
    current = getattr(inductor_config, slot)
    if current is None:
        return []
    return list(current) if isinstance(current, (list, tuple)) else [current]


def _set(slot: str, passes: list) -> None:
    setattr(inductor_config, slot, None if not passes else passes[0] if len(passes) == 1 else passes)


def _install(slot: str, ours) -> None:
    others = [p for p in _installed(slot) if not isinstance(p, (ComplexToRealPass, JointGraphTables))]
    _set(slot, [*others, ours] if ours is not None else others)


def enable(**options) -> ComplexToRealPass:
    """Install a ``ComplexToRealPass(**options)`` before autograd, and its
    ``joint`` and ``post_grad`` companions after it, for every later compile."""
    complex_pass = ComplexToRealPass(**options)
    _install(PRE_GRAD, complex_pass)
    _install(JOINT, complex_pass.joint)
    _install(POST_GRAD, complex_pass.post_grad)
    return complex_pass


def disable() -> None:
    """Remove any installed ``ComplexToRealPass``; other passes stay."""
    for slot in (PRE_GRAD, JOINT, POST_GRAD):
        _install(slot, None)


@contextlib.contextmanager
def enabled(**options):
    """``with inductor_complex.enabled(): torch.compile(model)(x)``."""
    before = {slot: getattr(inductor_config, slot) for slot in (PRE_GRAD, JOINT, POST_GRAD)}
    complex_pass = enable(**options)
    try:
        yield complex_pass
    finally:
        for slot, value in before.items():
            setattr(inductor_config, slot, value)
