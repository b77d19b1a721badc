"""The ways of running a case, on one axis.

``eager``; ``stock`` (``torch.compile``); ``pass`` and ``pass_fused``
(``torch.compile`` with ``ComplexToRealPass``'s defaults, the fused rotary
kernel off / on: Triton on CUDA, the C kernel on CPU); ``pass_scalar`` (the
pass with ``planes_on_cpu=False``, fused rotary off: pair math as Inductor's
scalar loops over pairs, as before pair math went into planes, on CPU); ``pass_cpu_blas`` (the
pass with ``complex_blas_on_cpu=True``: every complex matrix product through
eager's complex BLAS on the pairs, for the cases that have them, on CPU); ``torch_wrapper`` (stock with torch's own ``enable_complex_wrapper``,
where the installed torch has it); ``limit`` (the case's limit, compiled).

Each compiled provider gets its own ``torch.compile`` object: Dynamo guards
its cache entries on the backend, so one provider never runs another's code.
With ``dynamic=True`` every compiled provider is compiled with symbolic sizes
(``torch.compile(dynamic=True)``), as Dynamo does after it sees a second size.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable

import torch

from inductor_complex import ComplexToRealPass

from .subjects import Case

PROVIDERS = ("eager", "stock", "pass", "pass_fused", "pass_scalar", "pass_cpu_blas", "torch_wrapper", "limit")


class Unavailable(Exception):
    """A provider that does not apply to this case or machine; the message says why."""


def _torch_wrapper_config():
    config = torch._functorch.config
    if not hasattr(config, "enable_complex_wrapper"):
        raise Unavailable(f"torch {torch.__version__} has no enable_complex_wrapper")
    return config.patch(enable_complex_wrapper=True)


def build(provider: str, case: Case, device: str, dynamic: bool = False) -> tuple[Callable, contextlib.AbstractContextManager]:
    """(callable of ``case.inputs``, the context its first calls, which
    compile, must run in)."""
    none = contextlib.nullcontext()
    torch_compile = functools.partial(torch.compile, dynamic=True if dynamic else None)
    if provider == "eager":
        return case.forward, none
    if provider == "stock":
        return torch_compile(case.forward), none
    if provider == "pass":
        return torch_compile(case.forward, options=ComplexToRealPass(fused_rotary=False).inductor_options()), none
    if provider == "pass_fused":
        if not case.rotary:
            raise Unavailable("no rotary idiom in this case")
        if device == "cpu":
            from inductor_complex.kernels import rotary_cpu

            if not rotary_cpu.available():
                raise Unavailable(f"the CPU rotary kernel could not be built: {rotary_cpu.unavailable_reason()}")
        return torch_compile(case.forward, options=ComplexToRealPass(fused_rotary=True).inductor_options()), none
    if provider == "pass_scalar":
        if device != "cpu":
            raise Unavailable("pair math in planes applies on CPU only")
        complex_pass = ComplexToRealPass(fused_rotary=False, planes_on_cpu=False)
        return torch_compile(case.forward, options=complex_pass.inductor_options()), none
    if provider == "pass_cpu_blas":
        if not case.complex_matmul:
            raise Unavailable("no complex matrix product in this case")
        if device != "cpu":
            raise Unavailable("the complex BLAS choice applies on CPU only")
        complex_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=True)
        return torch_compile(case.forward, options=complex_pass.inductor_options()), none
    if provider == "torch_wrapper":
        return torch_compile(case.forward), _torch_wrapper_config()
    if provider == "limit":
        if case.limit is None:
            raise Unavailable("no limit defined for this case")
        return torch_compile(case.limit), none
    raise ValueError(f"unknown provider {provider!r}; choose from {', '.join(PROVIDERS)}")
