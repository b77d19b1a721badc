"""Inductor lowerings that call the CPU rotary kernel directly, not through the op.

Inductor lowers an op it does not know (our ``rotary_embedding_cpu`` and
``..._single_cpu``) to a fallback call through the operator registry, with size
asserts on its results. Here each rotated tensor becomes an ``ExternKernelOut``:
Inductor allocates the output as it allocates its own buffers, and the generated
code calls :data:`.rotary_cpu_direct.rotary_into` (a pybind11 function) on it.
Same kernel, same numbers; only the call changes (why: the module docstring of
:mod:`.rotary_cpu_direct`).

Registered (:func:`register_if_inductor_is_loaded`) as user lowerings (``torch._inductor.lowering.user_lowerings``, torch
2.13 and later), which may decline: a lowering that returns None leaves the op
to Inductor's own fallback. They decline for C++ wrappers (AOTInductor and
``cpp_wrapper``, which call ops by their C++ names), for tensors off the CPU,
and where the binding could not be built.
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import Optional

import torch

log = logging.getLogger(__name__)

# How generated code names the binding; the import line puts it in its globals.
KERNEL_NAME = "inductor_complex_rotary_into"
IMPORT_LINE = f"from inductor_complex.kernels.rotary_cpu_direct import rotary_into as {KERNEL_NAME}"


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


def calls_per_pair() -> int:
    """Kernel calls that compiled code makes per rope site of q and k on CPU: one per
    tensor through the binding, else one for both through the op."""
    from . import rotary_cpu_direct

    try:
        from torch._inductor.lowering import user_lowerings  # noqa: F401
    except ImportError:
        return 1
    return 2 if rotary_cpu_direct.available() else 1


def _lower_pair(q, k, table, out_dtype, conjugate):
    if not _direct_call_applies(q, k, table):
        return None
    return _rotated(q, table, out_dtype, conjugate), _rotated(k, table, out_dtype, conjugate)


def _lower_single(x, table, out_dtype, conjugate):
    if not _direct_call_applies(x, table):
        return None
    return _rotated(x, table, out_dtype, conjugate)


def _direct_call_applies(*tensors) -> bool:
    from torch._inductor.virtualized import V

    from . import rotary_cpu_direct

    if V.graph.cpp_wrapper or getattr(V.graph, "aot_mode", False):
        return False
    if any(t.get_device() is None or t.get_device().type != "cpu" for t in tensors):
        return False
    if not rotary_cpu_direct.available():
        log.debug("inductor_complex: rotary ops stay op calls: %s", rotary_cpu_direct.unavailable_reason())
        return False
    return True


def _rotated(x, table, out_dtype: Optional[torch.dtype], conjugate: bool):
    from torch._inductor import ir

    x = ir.ExternKernel.realize_input(x)
    table = ir.ExternKernel.realize_input(table)
    size = list(x.get_size())
    layout = ir.FixedLayout(x.get_device(), out_dtype or x.get_dtype(), size,
                            ir.FlexibleLayout.contiguous_strides(size))
    return ir.TensorBox.create(_direct_rotary_call_class()(layout, [x, table], constant_args=(bool(conjugate),),
                                                 python_kernel_name=KERNEL_NAME))


@functools.cache
def _direct_rotary_call_class():
    # Derives from Inductor's IR, imported only when a graph is lowered.
    from torch._inductor import ir

    class DirectRotaryCall(ir.ExternKernelOut):
        """``rotary_into(x, table, conjugate, buf)``, with the import it needs."""

        def codegen(self, wrapper) -> None:
            wrapper.add_import_once(IMPORT_LINE)
            self.codegen_comment(wrapper)
            # The output positionally: pybind11 takes a keyword ``out=`` ~0.5 us slower.
            wrapper.writeline(f"{KERNEL_NAME}({', '.join([*self.codegen_args(), self.codegen_reference()])})")

    return DirectRotaryCall
