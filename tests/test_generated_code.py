"""What Inductor generates from the rewritten complex product, on CPU.

The product ``a * b`` is ``a·b.re + (i·a)·b.im`` on pairs, and ``i·a`` is a
flip of the pair dim with one part negated: pointwise, so each output is one
fused loop reading its inputs once. (The earlier ``stack((-im, re))`` lowered
to a concat that Inductor wrote to a buffer of its own and read back: two
extra loops and a buffer per tensor.) Past autograd, pair math in planes
(``pair_planes.py``) makes that loop run along the complex elements, not
their pairs of parts, so it vectorizes: pairs load and store as int64 words.
Where the pair loops stay scalar (no planes: AVX2, or ``planes_on_cpu=False``),
a product that is only returned is written part by part in one pass over the
pairs instead (``cat`` of the parts, written in place: nothing reads it back).
Counted in the code Inductor emits: kernels, loop nests, allocated buffers,
vector loads and loops over a pair."""

from __future__ import annotations

import re

import torch
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass, pair_planes
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis


def _code(fn, *args, dynamic=None, planes=False) -> str:
    options = ComplexToRealPass(fused_rotary=False, planes_on_cpu=planes).inductor_options()
    compiled = torch.compile(fn, dynamic=dynamic, options=options)
    with torch.no_grad():
        expected = fn(*args)
        actual, codes = run_and_get_code(compiled, *args)
    torch.testing.assert_close(actual, expected)
    return "\n".join(codes)


def _counts(code: str) -> tuple[int, int, int]:
    """(kernels, loop nests, buffers allocated)."""
    kernels = len(re.findall(r"= async_compile\.cpp_pybinding\(", code))
    loops = len(re.findall(r"for\(int64_t x0=", code))
    buffers = len(re.findall(r"\bbuf\d+ = empty_strided_cpu\(", code))
    return kernels, loops, buffers


def _pair_loops(code: str) -> int:
    """Loops that run over the two parts of a pair (``x < 2``; pick shapes with no other dim of 2)."""
    return len(re.findall(r"for\(int64_t x\d+=static_cast<int64_t>\(0L\); x\d+<static_cast<int64_t>\(2L\)", code))


def _vector_word_loads(code: str) -> int:
    return code.count("at::vec::VectorizedN<int64_t,2>::loadu(")


def test_rope_is_one_loop_per_output_with_no_intermediate_buffer():
    q, k = torch.randn(2, 16, 4, 64), torch.randn(2, 16, 2, 64)
    code = _code(apply_rotary_emb_complex, q, k, precompute_freqs_cis(64, 16))
    kernels, loops, buffers = _counts(code)
    assert (kernels, loops, buffers) == (1, 2, 2), code
    assert "stack" not in code and "cat" not in re.findall(r"cpp_fused_\w+", code)[0]


def test_complex_product_is_one_loop_into_its_output():
    a, b = torch.randn(8, 32, dtype=torch.complex64), torch.randn(8, 32, dtype=torch.complex64)
    code = _code(lambda a, b: a * b, a, b, planes=True)
    assert _counts(code) == (1, 1, 1), code


def test_returned_product_on_scalar_pair_loops_is_one_pass_over_the_pairs():
    # No planes: a product that is only returned writes both parts of a pair per
    # iteration (a cat Inductor writes in place), with no loop over the pair's two
    # parts, and is returned as a view of its pairs, not an aten.complex copy.
    # (-a: a product of the inputs alone, or of a double, stays eager's here; lone_products.py)
    a, b = (torch.randn(4096, dtype=torch.complex64) for _ in range(2))
    code = _code(lambda a, b: (-a) * b, a, b)
    assert _counts(code) == (1, 1, 1) and _pair_loops(code) == 0, code
    assert "float* out_ptr1" in code, code  # two parts' stores
    assert "aten.complex.default(" not in code, code


def test_product_read_by_more_math_keeps_the_fusing_pair_swap_form():
    a, b = (torch.randn(4096, dtype=torch.complex64) for _ in range(2))
    code = _code(lambda a, b: (a * b) * 2 + 1, a, b)
    kernel = re.findall(r"cpp_fused_\w+", code)[0]
    assert _counts(code)[0] == 1 and "flip" in kernel, code  # (the returned sum is written by parts)


def test_product_chain_fuses_into_one_loop():
    # z·w·v: the intermediate product stays in registers.
    z, w, v = (torch.randn(4, 16, dtype=torch.complex64) for _ in range(3))
    code = _code(lambda z, w, v: z * w * v, z, w, v)
    assert _counts(code) == (1, 1, 1), code


def test_conjugate_and_sum_fuse_into_the_product():
    # A conj read by a product and a complex sum: pointwise selects on the pair
    # index, not stacks of parts (concats, which Inductor writes to memory on CPU).
    z, w, v = (torch.randn(4, 16, dtype=torch.complex64) for _ in range(3))
    code = _code(lambda z, w, v: z * w.conj() + v, z, w, v)
    assert _counts(code) == (1, 1, 1), code


def test_pairs_of_a_dynamic_reshape_keep_the_layout_of_their_input():
    # Dynamo gives reshape(..., -1, 2) of a symbolic size a last dim of s // (s // 2);
    # carried along, Inductor divided per element and copied the result once more.
    def product(x, y):
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        yc = torch.view_as_complex(y.reshape(*y.shape[:-1], -1, 2))
        return torch.view_as_real(xc * yc).flatten(-2)

    torch._dynamo.reset()
    code = _code(product, torch.randn(4, 32), torch.randn(4, 32), dynamic=True)
    assert _counts(code) == (1, 1, 1), code
    loads = re.findall(r"in_ptr\d+\[[^\]]*\]", code)  # (the output's row stride is 2 * (s // 2) itself)
    assert loads and not any("div_floor" in a or "%" in a for a in loads), loads


# ------------------------------------------------------------ in planes


def test_rope_in_planes_is_one_vector_loop_per_output_over_complex_elements():
    q, k = torch.randn(3, 16, 4, 64), torch.randn(3, 16, 1, 64)  # (no other dim of 2)
    code = _code(apply_rotary_emb_complex, q, k, precompute_freqs_cis(64, 16), planes=True)
    _, loops, buffers = _counts(code)
    assert (loops, buffers) == (2, 2), code  # a loop and a buffer per output, no buffer between
    assert _pair_loops(code) == 0, code
    assert _vector_word_loads(code) == 4, code  # q, k and the table (read by both), as words


def test_complex_product_in_planes_is_one_vector_loop_into_its_output():
    a, b = torch.randn(8, 32, dtype=torch.complex64), torch.randn(8, 32, dtype=torch.complex64)
    code = _code(lambda a, b: a * b, a, b, planes=True)
    assert _counts(code) == (1, 1, 1) and _pair_loops(code) == 0, code
    assert _vector_word_loads(code) == 2, code
    assert "aten.complex" not in code, code  # the result is a complex view of the words, no copy


def test_product_chain_in_planes_fuses_into_one_vector_loop():
    z, w, v = (torch.randn(4, 16, dtype=torch.complex64) for _ in range(3))
    code = _code(lambda z, w, v: z * w * v, z, w, v, planes=True)
    assert _counts(code) == (1, 1, 1) and _pair_loops(code) == 0, code
    assert _vector_word_loads(code) == 3, code


def test_default_puts_a_large_product_in_planes(monkeypatch):
    # On a CPU whose vector code has 64-bit shifts (AVX-512; pair_planes), whatever this one has.
    monkeypatch.setattr(pair_planes, "words_unvectorized_reason", lambda: None)
    # Complex inputs and a complex result: words replace Inductor's view_as_real and
    # the copy out, so planes cost no extern call and the default takes any size.
    a, b = torch.randn(64, 64, dtype=torch.complex64), torch.randn(64, 64, dtype=torch.complex64)
    code = _code(lambda a, b: a * b, a, b, planes=None)
    assert _pair_loops(code) == 0 and _vector_word_loads(code) == 2, code
