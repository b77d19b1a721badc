"""A direct Python binding of the CPU rotary kernel, for compiled code to call.

Why: inside a compiled step, a call through the operator registry
(``torch.ops.inductor_complex.rotary_embedding_cpu.default(...)``: argument
conversion to the dispatcher's stack, boxing, the results' wrapping, then two
size asserts per result) cost 10-15 us more than the kernel's own work on an
AVX2 host, which at decode shapes is most of the rope's step. A plain CPython
function that writes into buffers Inductor allocated costs a fraction of
that (:mod:`.rotary_cpu_lowering` makes Inductor call it; measured in
``perf/results/avx2_host/README.md``).

The binding is a small library of its own, linked against the op library
(:mod:`.rotary_cpu_op`, which exports ``inductor_complex_rotary_into``), so
that a machine without Python's headers still gets the op. :func:`rotary_into`
and :func:`rotary_pair_into` are what generated code imports: the binding's
functions once built, else Python functions that call the ops (the same
numbers, the ops' cost), so code that a compile cache replays in a process
where the binding is missing still runs.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import sysconfig
from typing import Optional

import torch

from . import rotary_cpu

MODULE_NAME = "inductor_complex_rotary_binding"

_SOURCE = r"""
#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

void inductor_complex_rotary_into(const at::Tensor& q, const at::Tensor* k, const at::Tensor& table,
                                  bool conjugate, at::Tensor& q_out, at::Tensor* k_out);

/* The arguments (tensors, then conjugate at conjugate_at) checked; a Python TypeError
   naming the function if they are not what it takes. */
static bool arguments_fit(const char* name, PyObject* const* args, Py_ssize_t given, Py_ssize_t expected,
                          Py_ssize_t conjugate_at) {
    bool fit = given == expected;
    for (Py_ssize_t i = 0; fit && i < expected; i++)
        fit = i == conjugate_at ? PyBool_Check(args[i]) : THPVariable_Check(args[i]);
    if (!fit)
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments: tensors, with a bool conjugate at position %zd",
                     name, expected, conjugate_at + 1);
    return fit;
}

/* The kernel's checks raise c10::Error; Python gets a RuntimeError with its message. */
template <typename Call>
static PyObject* call_raising_runtime_errors(Call call) {
    try {
        call();
    } catch (const c10::Error& error) {
        PyErr_SetString(PyExc_RuntimeError, error.what_without_backtrace());
        return nullptr;
    } catch (const std::exception& error) {
        PyErr_SetString(PyExc_RuntimeError, error.what());
        return nullptr;
    }
    Py_RETURN_NONE;
}

/* rotary_into(x, table, conjugate, out) */
static PyObject* rotary_into(PyObject*, PyObject* const* args, Py_ssize_t given) {
    if (!arguments_fit("rotary_into", args, given, 4, 2)) return nullptr;
    return call_raising_runtime_errors([&] {
        at::Tensor out = THPVariable_Unpack(args[3]);
        inductor_complex_rotary_into(THPVariable_Unpack(args[0]), nullptr, THPVariable_Unpack(args[1]),
                                     args[2] == Py_True, out, nullptr);
    });
}

/* rotary_pair_into(q, k, table, conjugate, q_out, k_out) */
static PyObject* rotary_pair_into(PyObject*, PyObject* const* args, Py_ssize_t given) {
    if (!arguments_fit("rotary_pair_into", args, given, 6, 3)) return nullptr;
    return call_raising_runtime_errors([&] {
        at::Tensor q_out = THPVariable_Unpack(args[4]), k_out = THPVariable_Unpack(args[5]);
        inductor_complex_rotary_into(THPVariable_Unpack(args[0]), &THPVariable_Unpack(args[1]),
                                     THPVariable_Unpack(args[2]), args[3] == Py_True, q_out, &k_out);
    });
}

/* Plain CPython fast calls, not pybind11: its argument conversion cost 0.2 us a call
   more, measured at decode shapes where the whole kernel call is under 1 us. */
static PyMethodDef methods[] = {
    {"rotary_into", (PyCFunction)(void (*)(void))rotary_into, METH_FASTCALL, "x rotated by table into out"},
    {"rotary_pair_into", (PyCFunction)(void (*)(void))rotary_pair_into, METH_FASTCALL,
     "q and k rotated by table into q_out and k_out"},
    {nullptr, nullptr, 0, nullptr},
};

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "inductor_complex_rotary_binding", nullptr, -1, methods};

PyMODINIT_FUNC PyInit_inductor_complex_rotary_binding() { return PyModule_Create(&module); }
"""


def _recipe(op_library: str) -> tuple[str, str, list, list]:
    from .rotary_cpu_op import compile_flags

    front, back = compile_flags()
    python_include = sysconfig.get_paths()["include"]
    # The op library's path is part of the source, so of the cache key: a rebuilt op
    # library (new kernel, new torch) gets a binding linked against it.
    source = _SOURCE + f"\n// linked against {op_library}\n"
    return (MODULE_NAME, source, [*front, f"-I{python_include}"],
            ["-x", "none", op_library, f"-Wl,-rpath,{os.path.dirname(op_library)}", "-ltorch_python", *back])


def _import(path: str):
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, path)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def _binding() -> tuple[Optional[object], Optional[str]]:
    """(the binding module, None), building it if need be, or (None, why not)."""
    if not rotary_cpu.op_kernel_registered():  # builds the op library first, if it can
        return None, f"the C++ op kernel is not registered ({rotary_cpu.op_kernel_unregistered_reason()})"
    try:
        path = rotary_cpu.compile_library(*_recipe(rotary_cpu.op_library_path()), remember_failures=True)
        module = _import(path)
    except Exception as error:  # no Python headers, another compiler: the op serves
        return None, f"{type(error).__name__}: {error}"
    global rotary_into, rotary_pair_into
    rotary_into, rotary_pair_into = module.rotary_into, module.rotary_pair_into  # for code imported from now on
    return module, None


def available() -> bool:
    """Whether compiled code can call the binding (building it on the first call)."""
    return _binding()[0] is not None


def unavailable_reason() -> Optional[str]:
    return _binding()[1]


def _loaded_binding():
    """The binding if this process has it or an earlier one built it; never builds."""
    if _binding.cache_info().currsize == 0:
        if not rotary_cpu.load_if_built():
            return None
        if not rotary_cpu.library_built(lambda: _recipe(rotary_cpu.op_library_path())):
            return None
    return _binding()[0]


# The binding's contracts through the ops, for a process that has not built it.


def _rotary_into_via_op(x: torch.Tensor, table: torch.Tensor, conjugate: bool, out: torch.Tensor) -> None:
    binding = _loaded_binding()
    if binding is not None:
        return binding.rotary_into(x, table, conjugate, out)
    out.copy_(torch.ops.inductor_complex.rotary_embedding_single_cpu(x, table, out.dtype, conjugate))


def _rotary_pair_into_via_op(q: torch.Tensor, k: torch.Tensor, table: torch.Tensor, conjugate: bool,
                             q_out: torch.Tensor, k_out: torch.Tensor) -> None:
    binding = _loaded_binding()
    if binding is not None:
        return binding.rotary_pair_into(q, k, table, conjugate, q_out, k_out)
    q_new, k_new = torch.ops.inductor_complex.rotary_embedding_cpu(q, k, table, q_out.dtype, conjugate)
    q_out.copy_(q_new)
    k_out.copy_(k_new)


# What generated code imports (see the module docstring): the builtins where this or an
# earlier process built them, so that compiled code calls them without a Python frame.
rotary_into, rotary_pair_into = _rotary_into_via_op, _rotary_pair_into_via_op
_loaded_binding()
