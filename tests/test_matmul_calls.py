"""Past autograd, complex-BLAS products call a twin op with a C++ kernel
(``complex_matmul_cpu_kernel``), taking complex operands and results as they
are at a graph's edges; after a compile-cache hit, the ops' Python kernels hand
over to the C++ ones."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code
from torch.testing import assert_close

from inductor_complex import ComplexToRealPass
from inductor_complex import eager_kernels
from inductor_complex.kernels import rotary_cpu

twin = torch.ops.inductor_complex.complex_matmul_cpu_kernel
KERNEL = "inductor_complex::complex_matmul_cpu_kernel"


def _cpp_kernel_registered() -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(KERNEL, "CPU")


@pytest.fixture
def cpp_kernel():
    if not (rotary_cpu.available() and rotary_cpu.op_kernel_registered()):
        pytest.skip(f"the C++ kernels were not built: {rotary_cpu.op_kernel_unregistered_reason()}")
    assert _cpp_kernel_registered()


SHAPES = [((5, 6), (6, 7)), ((3, 5, 6), (3, 6, 7)), ((2, 3, 5, 6), (6, 7)), ((3, 5, 6), (1, 6, 7)),
          ((2, 3, 0), (0, 4)), ((2, 3, 5), (5, 0))]  # (empty K, empty N)


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_the_twin_gives_eagers_bits_for_pairs_or_complex_operands_and_results(cpp_kernel, shapes, dtype):
    a, b = torch.randn(*shapes[0], dtype=dtype), torch.randn(*shapes[1], dtype=dtype)
    for adjoint_a in (False, True):
        for adjoint_b in (False, True):
            left = a.mT.contiguous() if adjoint_a else a  # so that the adjoint is a's shape again
            right = b.mT.contiguous() if adjoint_b else b
            expected = (left.mH if adjoint_a else left) @ (right.mH if adjoint_b else right)
            for x in (left, torch.view_as_real(left)):
                for y in (right, torch.view_as_real(right)):
                    for complex_out in (False, True):
                        want = expected if complex_out else torch.view_as_real(expected)
                        args = (x, y, adjoint_a, adjoint_b, complex_out)
                        got, in_python = twin(*args), eager_kernels._complex_matmul(*args)
                        assert torch.equal(got, want) and torch.equal(in_python, want), args[2:]
                        fake = eager_kernels._fake(*args)
                        assert (fake.shape, fake.dtype, fake.stride()) == (want.shape, want.dtype, want.stride())


def test_the_twins_cpp_errors_name_the_problem(cpp_kernel):
    pairs = torch.randn(3, 4, 2)
    with pytest.raises(RuntimeError, match=r"a must be a CPU complex matrix \[..., M, K\] or its real pairs"):
        twin(torch.randn(3, 4), pairs)
    with pytest.raises(RuntimeError, match="ComplexFloat.*@ ComplexDouble"):
        twin(pairs, torch.randn(4, 3, 2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=r"\[3, 4\] @ .*\[5, 3\]"):
        twin(pairs, torch.randn(5, 3, 2))


def _product(a, b):
    return a @ b


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_a_compiled_product_calls_the_twin_on_its_complex_edges(cpp_kernel, dtype):
    a = torch.randn(6, 5, dtype=dtype, requires_grad=True)
    b = torch.randn(5, 4, dtype=dtype, requires_grad=True)
    grad = torch.randn(6, 4, dtype=dtype)
    compiled = torch.compile(_product, options=ComplexToRealPass(complex_blas_on_cpu=True).inductor_options())

    def step():
        out = compiled(a, b)
        return (out, *torch.autograd.grad(out, (a, b), grad))

    got, (forward, backward) = run_and_get_code(step)
    for code in (forward, backward):
        call = code[code.index("def call("):]
        assert "complex_matmul_cpu_kernel" in call and "complex_matmul_cpu.default" not in call
        assert "view_as_real" not in call and "view_as_complex" not in call  # the edges stay complex
    out = a @ b
    want = (out, *torch.autograd.grad(out, (a, b), grad))
    for x, y in zip(got, want):
        assert torch.equal(x, y)  # the same BLAS calls as eager's


@pytest.mark.parametrize("dynamic", [False, True])
def test_products_inside_pair_math_call_the_twin_with_eagers_numbers_and_gradients(cpp_kernel, dynamic):
    def model(a, b, c):
        return ((a.mT @ b).exp() @ c).abs().sum(-1) + (b.mT @ a.conj()).real.sum(0)

    tensors = [torch.randn(*shape, dtype=torch.complex64, requires_grad=True) for shape in ((4, 6), (4, 5), (5, 3))]
    compiled = torch.compile(model, dynamic=dynamic, options=ComplexToRealPass(complex_blas_on_cpu=True).inductor_options())
    got, codes = run_and_get_code(compiled, *tensors)
    assert "complex_matmul_cpu_kernel" in codes[0][codes[0].index("def call("):]
    want = model(*tensors)
    assert_close(got, want)
    assert_close(torch.autograd.grad(got.sum(), tensors), torch.autograd.grad(want.sum(), tensors))


def test_default_sends_a_64_cubed_product_to_the_twin_and_a_smaller_one_to_the_real_form(cpp_kernel):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the threshold scales with the thread count
    try:
        for n, expect_twin in ((64, True), (48, False)):
            a, b = torch.randn(n, n, dtype=torch.complex64), torch.randn(n, n, dtype=torch.complex64)
            compiled = torch.compile(_product, dynamic=False, options=ComplexToRealPass().inductor_options())
            with torch.no_grad():
                got, (code,) = run_and_get_code(compiled, a, b)
            assert ("complex_matmul_cpu_kernel" in code[code.index("def call("):]) == expect_twin, n
            assert_close(got, a @ b)
    finally:
        torch.set_num_threads(threads)


def test_default_sends_a_product_of_dynamic_size_to_the_twin(cpp_kernel):
    # 8x8 is far below the threshold, but a dynamic size may grow past it.
    compiled = torch.compile(_product, dynamic=True, options=ComplexToRealPass().inductor_options())
    a, b = torch.randn(8, 8, dtype=torch.complex64), torch.randn(8, 8, dtype=torch.complex64)
    with torch.no_grad():
        got, (code,) = run_and_get_code(compiled, a, b)
    assert "complex_matmul_cpu_kernel" in code[code.index("def call("):]
    assert_close(got, a @ b)
    counters.clear()
    for n in (12, 20):  # the same compile serves other sizes (the result's edge once specialized them)
        a, b = torch.randn(n, n, dtype=torch.complex64), torch.randn(n, n, dtype=torch.complex64)
        with torch.no_grad():
            assert_close(compiled(a, b), a @ b)
    assert counters["stats"]["unique_graphs"] == 0


CHILD = """
import json, torch
from torch._dynamo.utils import counters
import inductor_complex
from inductor_complex.kernels import rotary_cpu
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis
inductor_complex.enable(fused_rotary=True, complex_blas_on_cpu=True)
registered_before = torch._C._dispatch_has_kernel_for_dispatch_key("{kernel}", "CPU")
torch.manual_seed(0)
a, b = (torch.randn(6, 6, dtype=torch.complex64, requires_grad=True) for _ in range(2))
out = torch.compile(lambda a, b: a @ b)(a, b)
grads = torch.autograd.grad(out, (a, b), torch.ones_like(out))
q, k = torch.randn(1, 4, 2, 16), torch.randn(1, 4, 1, 16)
rope = torch.compile(apply_rotary_emb_complex)(q, k, precompute_freqs_cis(16, 4))
want_rope = apply_rotary_emb_complex(q, k, precompute_freqs_cis(16, 4))
print(json.dumps({{
    "fx_graph_cache_hits": counters["inductor"]["fxgraph_cache_hit"],
    "registered_before": registered_before,
    "registered_after": torch._C._dispatch_has_kernel_for_dispatch_key("{kernel}", "CPU"),
    "rotations_in_python": rotary_cpu.launch_count,
    "rotations": rotary_cpu.launches(),
    "matmul_exact": torch.equal(out, a @ b),
    "rope_exact": all(torch.equal(x, y) for x, y in zip(rope, want_rope)),
}}))
""".format(kernel=KERNEL)


def _run_child(cache_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE", "TRITON_INTERPRET"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_after_a_compile_cache_hit_the_python_kernels_hand_over_to_cpp(cpp_kernel, tmp_path):
    # The library this process built, where the children look for it (a build is tens of seconds).
    (tmp_path / "inductor_complex").mkdir()
    for _, _, path in rotary_cpu._candidates(*rotary_cpu._op_library_recipe()):
        if os.path.exists(path):
            shutil.copy(path, tmp_path / "inductor_complex")
    first = _run_child(tmp_path)
    assert first["fx_graph_cache_hits"] == 0 and first["registered_after"], first
    second = _run_child(tmp_path)  # Inductor's caches hit: no pass runs, so nothing loads the library...
    assert second["fx_graph_cache_hits"] > 0 and not second["registered_before"], second
    # ...until the first call of an op's Python kernel, which loads it and calls the op again.
    assert second["registered_after"] and second["rotations"] == 1 and second["rotations_in_python"] == 0, second
    assert second["matmul_exact"] and second["rope_exact"], second


def test_the_post_grad_steps_are_quiet_where_their_ops_were_never_defined():
    # With fused_rotary=False a fresh process never defines the CPU rotary ops: the
    # table step must find nothing to do, not fail and warn (it did, in the benchmarks).
    script = (
        "import logging, torch, inductor_complex\n"
        "records = []\n"
        "handler = logging.Handler(); handler.emit = records.append\n"
        "logging.getLogger('inductor_complex').addHandler(handler)\n"
        "inductor_complex.enable(fused_rotary=False)\n"
        "z = torch.randn(4, dtype=torch.complex64, requires_grad=True)\n"
        "torch.compile(lambda z: (z * z).abs())(z).sum().backward()\n"
        "assert not records, [r.getMessage() for r in records]\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE"))}
    env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"  # so that the post-grad pass runs
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]
