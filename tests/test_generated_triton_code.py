"""What Inductor's Triton code generator makes of the rewritten complex math.

The same counts as ``test_generated_code.py`` pins for the C++ code: the
rewritten product and the rope compile to one fused kernel per output, with no
buffer but the outputs, in inference and in both graphs of a training step.

With CUDA the functions compile for it, run, and are checked against eager.
Without, Inductor's Triton backend for CPU tensors (``cpu_backend="triton"``)
generates the kernels (the scheduler and fusion decisions are the GPU's; the
pass takes the GPU's forms there too, ``inductor_nodes.cpu_code_is_cpp``), but
with no Triton driver on the machine nothing compiles them: each kernel's
launch is stubbed out, so the code is counted and its values are not checked
here. Their numerics are the C++ code's tests' and ``perf/gpu_check.sh``'s."""

from __future__ import annotations

import contextlib
import re
from unittest import mock

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

ON_CUDA = torch.cuda.is_available()
DEVICE = "cuda" if ON_CUDA else "cpu"


class _UnlaunchedKernel:
    """A generated Triton kernel that is never compiled: its launches do nothing."""

    def run(self, *args, **kwargs):
        pass


def _no_compile(self, kernel_name, source_code, *args, **kwargs):
    return _UnlaunchedKernel()


@contextlib.contextmanager
def _triton_code_without_a_gpu():
    """Inductor writes Triton for CPU tensors and loads its module without compiling
    a kernel (which needs a Triton driver; only its hash of the backend asks for one)."""
    with inductor_config.patch(cpu_backend="triton"), \
            mock.patch("torch.utils._triton.triton_hash_with_backend", lambda: "codegen-only"), \
            mock.patch.object(AsyncCompile, "triton", _no_compile):
        yield


def _compiled_code(step, *, check=None) -> list[str]:
    """The output code of each graph ``step()`` compiles; ``check()`` runs after, on CUDA."""
    context = contextlib.nullcontext() if ON_CUDA else _triton_code_without_a_gpu()
    with context:
        _, codes = run_and_get_code(step)
    if ON_CUDA and check is not None:
        check()
    return codes


def _counts(code: str) -> tuple[int, int]:
    """(Triton kernels, buffers allocated)."""
    kernels = len(re.findall(r"= async_compile\.triton\(", code))
    buffers = len(re.findall(r"\bbuf\d+ = empty_strided_\w+\(", code))
    return kernels, buffers


def _kernel_names(code: str) -> list[str]:
    return re.findall(r"def (triton_\w+)\(", code)


def _compile(fn, dynamic=None):
    options = ComplexToRealPass(fused_rotary=False).inductor_options()
    return torch.compile(fn, dynamic=dynamic, options=options)


def _product(a, b):
    return torch.view_as_real(torch.view_as_complex(a) * torch.view_as_complex(b))


def _chain(a, b, c):
    za, zb, zc = (torch.view_as_complex(t) for t in (a, b, c))
    return torch.view_as_real(za * zb * zc)


def _conjugate_product_plus(a, b, c):
    za, zb, zc = (torch.view_as_complex(t) for t in (a, b, c))
    return torch.view_as_real(za * zb.conj() + zc)


def _pairs(*shape):
    return torch.randn(*shape, 2, device=DEVICE)


def _inference(fn, *args, dynamic=None) -> str:
    compiled = _compile(fn, dynamic)
    results = {}

    def step():
        with torch.no_grad():
            results["actual"] = compiled(*args)

    def check():
        with torch.no_grad():
            torch.testing.assert_close(results["actual"], fn(*args))

    codes = _compiled_code(step, check=check)
    assert len(codes) == 1, codes
    return codes[0]


def test_product_is_one_kernel_into_its_output():
    code = _inference(_product, _pairs(64, 32), _pairs(64, 32))
    assert _counts(code) == (1, 1), code
    # Four loads (each input's pair and its partner's part), one store.
    assert code.count("tl.load(") == 4 and code.count("tl.store(") == 1, code


def test_product_chain_fuses_into_one_kernel():
    code = _inference(_chain, _pairs(64, 32), _pairs(64, 32), _pairs(64, 32))
    assert _counts(code) == (1, 1), code


def test_conjugate_and_sum_fuse_into_the_product():
    """A lazy conj read by a product and a complex sum are pointwise selects on the
    pair index (``values.negate_part``), not stacks of parts: a stack is a concat,
    which Inductor writes to a buffer of its own on CPU and often on a GPU."""
    code = _inference(_conjugate_product_plus, _pairs(64, 32), _pairs(64, 32), _pairs(64, 32))
    assert _counts(code) == (1, 1), code


def _rope_inputs(requires_grad=False):
    q = torch.randn(2, 16, 4, 64, device=DEVICE, requires_grad=requires_grad)
    k = torch.randn(2, 16, 2, 64, device=DEVICE, requires_grad=requires_grad)
    return q, k, precompute_freqs_cis(64, 16).to(DEVICE)


@pytest.mark.parametrize("dynamic", [None, True], ids=["static", "dynamic"])
def test_rope_is_one_kernel_per_output_with_no_intermediate_buffer(dynamic):
    code = _inference(apply_rotary_emb_complex, *_rope_inputs(), dynamic=dynamic)
    assert _counts(code) == (2, 2), code
    assert not any("cat" in name or "stack" in name for name in _kernel_names(code)), code


def test_rope_training_step_is_one_kernel_per_output_in_each_graph():
    """No pair-index mask saved for backward either: it is recomputed inside each kernel
    (``rules/arith.py``'s int32 index), not written by a kernel of its own."""
    q, k, table = _rope_inputs(requires_grad=True)
    compiled = _compile(apply_rotary_emb_complex)
    grads = {}

    def step():
        out = compiled(q, k, table)
        grads["actual"] = torch.autograd.grad(out, (q, k), [torch.ones_like(o) for o in out])

    def check():
        out = apply_rotary_emb_complex(q, k, table)
        expected = torch.autograd.grad(out, (q, k), [torch.ones_like(o) for o in out])
        torch.testing.assert_close(grads["actual"], expected)

    codes = _compiled_code(step, check=check)
    assert len(codes) == 2, codes  # the forward graph's code, then the backward's
    for code in codes:
        assert _counts(code) == (2, 2), code
