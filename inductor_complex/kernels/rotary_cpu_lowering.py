"""Inductor lowerings that call the CPU rotary kernel directly, not through the op.

Inductor lowers an op it does not know (our ``rotary_embedding_cpu`` and
``..._single_cpu``) to a fallback call through the operator registry, with size
asserts on its results. Here Inductor allocates the outputs as it allocates its
own buffers, and the generated code calls the C kernel's Python binding
(:mod:`.rotary_cpu_direct`) to write them: one call for q and k, as the op
makes. Same kernel, same numbers; only the call changes (why: the module
docstring of :mod:`.rotary_cpu_direct`).

Registered (:func:`register_if_inductor_is_loaded`) as user lowerings
(``torch._inductor.lowering.user_lowerings``, torch 2.13 and later), which may
decline: a lowering that returns None leaves the op to Inductor's own fallback.
They decline for C++ wrappers (AOTInductor and ``cpp_wrapper``, which call ops
by their C++ names) and Inductor's FX wrapper, for tensors off the CPU, and
where the binding could not be built.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Optional

import torch

log = logging.getLogger(__name__)

# How generated code names the binding's functions; the import line puts them in its globals.
KERNEL_NAME = "inductor_complex_rotary_into"
PAIR_KERNEL_NAME = "inductor_complex_rotary_pair_into"
IMPORT_LINE = ("from inductor_complex.kernels.rotary_cpu_direct import "
               f"rotary_into as {KERNEL_NAME}, rotary_pair_into as {PAIR_KERNEL_NAME}")


def register_if_inductor_is_loaded() -> None:
    """Register the lowerings where Inductor is imported. Called from the ops' fake
    kernels, which every trace of a graph holding them runs before Inductor lowers it,
    whichever pass put them there; without Inductor there is nothing to lower (and
    importing it would cost a second)."""
    if "torch._inductor.lowering" in sys.modules:
        register()


def register() -> bool:
    """Register the lowerings once; whether they are (False on a torch without user lowerings)."""
    try:
        from torch._inductor.lowering import user_lowerings
    except ImportError:
        return False
    ops = torch.ops.inductor_complex
    user_lowerings.setdefault(ops.rotary_embedding_cpu.default, _lower_pair)
    user_lowerings.setdefault(ops.rotary_embedding_single_cpu.default, _lower_single)
    return True


def _lower_pair(q, k, table, out_dtype, conjugate):
    if not _direct_call_applies(q, k, table):
        return None
    q_out, k_out = _empty_like(q, out_dtype), _empty_like(k, out_dtype)
    _direct_call_class()(PAIR_KERNEL_NAME, [q, k, table], [q_out, k_out], conjugate)
    return q_out, k_out


def _lower_single(x, table, out_dtype, conjugate):
    if not _direct_call_applies(x, table):
        return None
    out = _empty_like(x, out_dtype)
    _direct_call_class()(KERNEL_NAME, [x, table], [out], conjugate)
    return out


def _direct_call_applies(*tensors) -> bool:
    from torch._inductor.virtualized import V

    from . import rotary_cpu_direct

    if V.graph.cpp_wrapper or getattr(V.graph, "aot_mode", False):
        return False
    if getattr(torch._inductor.config, "fx_wrapper", False):  # (its FX wrapper has no line for this call)
        return False
    if any(t.get_device() is None or t.get_device().type != "cpu" for t in tensors):
        return False
    if not rotary_cpu_direct.available():
        log.debug("inductor_complex: rotary ops stay op calls: %s", rotary_cpu_direct.unavailable_reason())
        return False
    return True


def _empty_like(x, dtype: Optional[torch.dtype]):
    """A new contiguous buffer of ``x``'s shape, which the direct call fills."""
    from torch._inductor import ir
    from torch._inductor.lowering import empty_strided

    size = list(x.get_size())
    return empty_strided(size, ir.FlexibleLayout.contiguous_strides(size), dtype=dtype or x.get_dtype(),
                         device=x.get_device())


@functools.cache
def _direct_call_class():
    # Derives from Inductor's IR, imported only when a graph is lowered.
    from torch._inductor import ir
    from torch._inductor.virtualized import V
    from torch.utils._ordered_set import OrderedSet

    class DirectRotaryCall(ir.ExternKernel):
        """``kernel(*inputs, conjugate, *outputs)``: the binding writes the outputs,
        buffers Inductor allocated, in place; each write is a ``MutationOutput``, as
        for a user Triton kernel that stores into its arguments."""

        def __init__(self, kernel_name: str, inputs: list, outputs: list, conjugate: bool) -> None:
            inputs = [self.unwrap_storage_for_input(self.realize_input(t)) for t in inputs]
            outputs = [self.unwrap_storage_for_input(self.realize_input(t)) for t in outputs]
            device = inputs[0].get_device()
            super().__init__(None, ir.NoneLayout(device=device), [*inputs, *outputs], (bool(conjugate),),
                             python_kernel_name=kernel_name)
            self.written = len(outputs)
            self.mutation_outputs = [ir.MutationOutput(ir.NoneLayout(device=device), out, self) for out in outputs]
            V.graph.register_operation(self)

        def get_outputs(self):
            return list(self.mutation_outputs)

        def get_unbacked_symbol_defs(self):
            return OrderedSet()

        def codegen(self, wrapper) -> None:
            wrapper.add_import_once(IMPORT_LINE)
            self.codegen_comment(wrapper)
            references = [t.codegen_reference() for t in self.inputs]
            reads = len(references) - self.written
            # Outputs positionally: the binding takes no keywords (a CPython fast call).
            arguments = [*references[:reads], repr(self.constant_args[0]), *references[reads:]]
            wrapper.writeline(f"{self.python_kernel_name}({', '.join(arguments)})")

    return DirectRotaryCall
