"""Compiled code calls the CPU rotary kernel through its direct binding, with the op's numbers."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass
from inductor_complex.kernels import rotary_cpu_direct, rotary_cpu_lowering
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis

OP_CALL = "torch.ops.inductor_complex.rotary_embedding_cpu"


def _needs_binding():
    if not rotary_cpu_direct.available():
        pytest.skip(f"the direct binding could not be built: {rotary_cpu_direct.unavailable_reason()}")


def _compiled(dynamic=None):
    options = ComplexToRealPass(fused_rotary=True).inductor_options()
    return torch.compile(apply_rotary_emb_complex, options=options, dynamic=dynamic)


def _code_of_call(code: str) -> str:
    return code[code.index("def call("):]


def test_a_decode_step_calls_the_binding_once_for_q_and_k_and_not_the_op():
    _needs_binding()
    q, k = torch.randn(4, 1, 4, 16), torch.randn(4, 1, 2, 16)
    table = precompute_freqs_cis(16, 40)[30:31]
    with torch.no_grad():
        got, (code,) = run_and_get_code(_compiled(), q, k, table)
    call = _code_of_call(code)
    assert call.count(f"{rotary_cpu_lowering.PAIR_KERNEL_NAME}(") == 1 and OP_CALL not in call, call
    assert "assert_size_stride(buf" not in call  # no checks of results Inductor allocated itself
    assert rotary_cpu_lowering.IMPORT_LINE in code
    assert all(torch.equal(a, b) for a, b in zip(got, apply_rotary_emb_complex(q, k, table)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_training_calls_the_binding_forward_and_backward_with_eagers_numbers(dtype):
    _needs_binding()
    # q with heads first in memory: its head dim is contiguous, its other strides are not
    q = torch.randn(2, 4, 6, 16).transpose(1, 2).to(dtype).requires_grad_()
    k = torch.randn(2, 6, 2, 16).to(dtype).requires_grad_()
    table = precompute_freqs_cis(16, 6)
    want = apply_rotary_emb_complex(q, k, table)
    cotangents = [torch.randn_like(w) for w in want]
    want_grads = torch.autograd.grad(want, (q, k), cotangents)

    def step():
        got = _compiled()(q, k, table)
        return got, torch.autograd.grad(got, (q, k), cotangents)

    (got, grads), codes = run_and_get_code(step)
    assert len(codes) == 2 and all(rotary_cpu_lowering.PAIR_KERNEL_NAME in c and OP_CALL not in c for c in codes)
    for a, b in zip((*got, *grads), (*want, *want_grads)):
        assert a.dtype == b.dtype and a.is_contiguous()
        assert torch.equal(a, b)


def test_a_dynamic_batch_takes_the_binding_with_one_compile():
    _needs_binding()
    compiled = _compiled()
    table = precompute_freqs_cis(16, 8)
    for batch in (2, 5):
        q, k = torch.randn(batch, 8, 4, 16), torch.randn(batch, 8, 2, 16)
        torch._dynamo.mark_dynamic(q, 0)
        torch._dynamo.mark_dynamic(k, 0)
        with torch.no_grad():
            if batch == 2:  # (run_and_get_code resets Dynamo: only the first call may use it)
                got, (code,) = run_and_get_code(compiled, q, k, table)
            else:
                got = compiled(q, k, table)
        assert all(torch.equal(a, b) for a, b in zip(got, apply_rotary_emb_complex(q, k, table)))
    assert counters["stats"]["unique_graphs"] == 1  # one compile served both batches
    assert rotary_cpu_lowering.PAIR_KERNEL_NAME in code


def test_without_the_binding_compiled_code_calls_the_op(monkeypatch):
    monkeypatch.setattr(rotary_cpu_direct, "available", lambda: False)
    monkeypatch.setattr(rotary_cpu_direct, "unavailable_reason", lambda: "no binding (the test says so)")
    q, k = torch.randn(2, 3, 2, 16), torch.randn(2, 3, 1, 16)
    table = precompute_freqs_cis(16, 3)
    with torch.no_grad():
        got, (code,) = run_and_get_code(_compiled(), q, k, table)
    assert OP_CALL in code and "inductor_complex_rotary" not in code
    assert all(torch.equal(a, b) for a, b in zip(got, apply_rotary_emb_complex(q, k, table)))


@pytest.mark.parametrize("conjugate", [False, True])
def test_the_python_stand_ins_write_what_the_binding_writes(conjugate, monkeypatch):
    # Generated code replayed from a compile cache in a process without the binding
    # calls the stand-ins, which go through the ops.
    _needs_binding()
    q, k = torch.randn(2, 3, 4, 16), torch.randn(2, 3, 2, 16).to(torch.bfloat16)
    table = precompute_freqs_cis(16, 3)
    binding = rotary_cpu_direct._binding()[0]
    want_q = torch.ops.inductor_complex.rotary_embedding_single_cpu(q, table, None, conjugate)
    want_k = torch.ops.inductor_complex.rotary_embedding_single_cpu(k, table, torch.float32, conjugate)
    for loaded in (binding, None):  # a process that built it before, and one that did not
        monkeypatch.setattr(rotary_cpu_direct, "_loaded_binding", lambda: loaded)
        single, pair_q, pair_k = torch.empty_like(q), torch.empty_like(q), torch.empty(k.shape)
        rotary_cpu_direct._rotary_into_via_op(q, table, conjugate, single)
        rotary_cpu_direct._rotary_pair_into_via_op(q, k.float(), table, conjugate, pair_q, pair_k)
        assert torch.equal(single, want_q) and torch.equal(pair_q, want_q) and torch.equal(pair_k, want_k)
    by_binding = torch.empty_like(q)
    binding.rotary_into(q, table, conjugate, by_binding)
    assert torch.equal(by_binding, want_q)


def test_the_binding_names_a_wrong_output():
    _needs_binding()
    x, table = torch.randn(1, 3, 2, 8), precompute_freqs_cis(8, 3)
    binding = rotary_cpu_direct._binding()[0]
    with pytest.raises(RuntimeError, match="q_out must be a contiguous CPU tensor of the shape"):
        binding.rotary_into(x, table, False, torch.empty(1, 3, 2, 4))
    with pytest.raises(RuntimeError, match="q_out must be a contiguous CPU tensor"):
        binding.rotary_into(x, table, False, torch.empty(1, 3, 8, 2).transpose(2, 3))
    with pytest.raises(RuntimeError, match="k_out must be a contiguous CPU tensor"):
        binding.rotary_pair_into(x, x, table, False, torch.empty_like(x), torch.empty(3))
    with pytest.raises(RuntimeError, match="share a dtype"):
        binding.rotary_pair_into(x, x, table, False, torch.empty_like(x), torch.empty_like(x).double())


def test_the_binding_names_wrong_arguments():
    _needs_binding()
    x, table = torch.randn(1, 3, 2, 8), precompute_freqs_cis(8, 3)
    binding = rotary_cpu_direct._binding()[0]
    with pytest.raises(TypeError, match="rotary_into takes 4 arguments"):
        binding.rotary_into(x, table, False)
    with pytest.raises(TypeError, match="bool conjugate at position 4"):
        binding.rotary_pair_into(x, x, table, 1, torch.empty_like(x), torch.empty_like(x))
    with pytest.raises(TypeError, match="rotary_pair_into takes 6 arguments"):
        binding.rotary_pair_into(x, x.numpy(), table, False, torch.empty_like(x), torch.empty_like(x))
