"""Pair math in planes past autograd on CPU (``inductor_complex/pair_planes.py``).

The claim is exactness plus vector code: a graph compiled with
``planes_on_cpu=True`` gives the same bits as with ``planes_on_cpu=False``
(outputs, strides, gradients), its product loops hold no pair dim and load
pairs as int64 words, and pieces the rewrite must not touch (transcendental
math, float64) keep the code they had.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from inductor_complex import ComplexToRealPass, pair_planes
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compile(fn, planes, dynamic=None, **options):
    options = ComplexToRealPass(planes_on_cpu=planes, **options).inductor_options()
    return torch.compile(fn, dynamic=dynamic, options=options)


def _run(fn, planes, args, *, grad=False, dynamic=None, **options):
    """(outputs, input gradients, generated code) of ``fn`` compiled with the planes on or
    off; ``grad``: True for every input, or the positions of those that require grad."""
    wanted = range(len(args)) if grad is True else (grad or ())
    args = [a.detach().clone().requires_grad_(i in wanted) for i, a in enumerate(args)]
    compiled = _compile(fn, planes, dynamic, **options)

    def step():
        outs = compiled(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        if grad:
            seeds = [torch.ones_like(o) * 0.5 for o in outs]
            torch.autograd.backward(outs, seeds)
        return outs

    if grad:
        outs, codes = run_and_get_code(step)
    else:
        with torch.no_grad():
            outs, codes = run_and_get_code(step)
    grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return outs, grads, "\n".join(codes)


def _same_bits(a, b):
    a, b = (torch.view_as_real(t) if t.is_complex() else t for t in (a, b))
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride(), (a.stride(), b.stride())
    assert torch.equal(a.view(torch.uint8) if a.dtype == torch.bool else a, b)  # NaNs compare unequal: none here


def _compare(fn, args, **kw):
    """Planes on and off give the same bits; returns the code with planes on."""
    on_outs, on_grads, on_code = _run(fn, True, args, **kw)
    torch._dynamo.reset()
    off_outs, off_grads, _ = _run(fn, False, args, **kw)
    for on, off in zip(on_outs, off_outs):
        _same_bits(on, off)
    for on, off in zip(on_grads, off_grads):
        _same_bits(on, off)
    return on_code


def _kernels(code: str) -> list[str]:
    return re.findall(r"extern \"C\"\s+void\s+kernel\((.*?)\n'''", code, re.S)


def _pair_loops(code: str) -> int:
    """Loops that run over the two parts of a pair (``< 2L``; pick shapes with no other dim of 2)."""
    return len(re.findall(r"for\(int64_t x\d+=static_cast<int64_t>\(0L\); x\d+<static_cast<int64_t>\(2L\)", code))


def test_complex_product_is_one_vector_loop_with_no_copy_out():
    a, b = (torch.randn(4096, dtype=torch.complex64) for _ in range(2))
    counters = torch._dynamo.utils.counters["inductor_complex"]
    before = counters["planes"]
    code = _compare(lambda a, b: a * b, [a, b])
    assert counters["planes"] == before + 1  # (counted with planes on; the run with them off adds none)
    kernels = _kernels(code)
    assert len(kernels) == 1 and _pair_loops(code) == 0, code
    assert "at::vec::VectorizedN<int64_t,2>::loadu" in kernels[0], kernels[0]  # pairs as words, vectorized
    assert "aten.complex" not in code and "view_as_real" not in code, code  # complex views in and out, no copy
    assert code.count("torch.ops.aten.view.dtype(") == 3, code


def test_product_chain_and_real_readers_share_one_loop():
    z, w = (torch.randn(64, 128, dtype=torch.complex64) for _ in range(2))
    code = _compare(lambda z, w: ((z * w).real * 2.0, (z * w + z).imag), [z, w])
    assert len(_kernels(code)) == 1 and _pair_loops(code) == 0, code


def test_unfused_rope_trains_with_the_same_bits_in_vector_loops():
    q, k = torch.randn(3, 64, 4, 64), torch.randn(3, 64, 1, 64)  # (no dim of 2 but the pairs)
    table = precompute_freqs_cis(64, 64)
    code = _compare(apply_rotary_emb_complex, [q, k, table], grad=(0, 1), fused_rotary=False)
    # (the forward also saves the [2] bool mask of the first parts for backward: a loop of 2)
    float_kernels = [k for k in _kernels(code) if "bool* out_ptr" not in k.split("{", 1)[0]]
    assert float_kernels and not any(_pair_loops(k) for k in float_kernels), code
    assert code.count("at::vec::VectorizedN<int64_t,2>::loadu(") >= 6, code


def test_a_learned_rope_table_gets_the_same_gradient_bits():
    # The table's gradient sums over the pair dim (the gradient of a broadcast part):
    # that sum reads the planes stacked back into pairs, in its own order, as before.
    q, k = torch.randn(3, 64, 4, 64), torch.randn(3, 64, 1, 64)
    _compare(apply_rotary_emb_complex, [q, k, precompute_freqs_cis(64, 64)], grad=True, fused_rotary=False)


def test_outputs_keep_their_strides_and_take_in_place_writes_with_grad():
    a, b = (torch.randn(64, 96, dtype=torch.complex64) for _ in range(2))

    def f(a, b):
        p = a * b
        return p, p.real, p.mT

    with torch.no_grad():
        outs = _compile(f, True)(a, b)
        torch._dynamo.reset()
        before = _compile(f, False)(a, b)
    for out, old in zip(outs, before):
        _same_bits(out, old)
        assert out._is_view() == old._is_view() and (out._base is None) == (old._base is None)
    w = torch.randn(64, 96, dtype=torch.complex64, requires_grad=True)
    outs[0].mul_(w)  # eager allows it on a new tensor; so must the compiled output
    _same_bits(outs[0], before[0] * w)


def test_dynamic_sizes_compile_once_with_the_same_bits():
    compiled = _compile(lambda a, b: a * b + a, True, dynamic=True)
    counts = torch._dynamo.utils.counters["stats"]
    before = counts["unique_graphs"]
    for n in (300, 1000):
        a, b = (torch.randn(n, dtype=torch.complex64) for _ in range(2))
        with torch.no_grad():
            _same_bits(compiled(a, b), a * b + a)
    assert counts["unique_graphs"] - before == 1


def test_pair_math_feeding_a_gemm_keeps_its_bits():
    a, b, c = torch.randn(32, 48, dtype=torch.complex64), torch.randn(32, 48, dtype=torch.complex64), \
        torch.randn(48, 16, dtype=torch.complex64)
    _compare(lambda a, b, c: (a * b + a) @ c, [a, b, c], grad=True, complex_blas_on_cpu=False)


def test_transcendental_pieces_keep_their_scalar_code():
    # Inductor's vector exp/sin/cos are other approximations than glibc's (eager's):
    # such a piece is left to its scalar loop, bit for bit as before.
    z = torch.randn(4096, dtype=torch.complex64)
    code = _compare(lambda z: torch.exp(z) * z, [z])
    assert "torch.int64" not in code and _pair_loops(code) >= 1, code


def test_float64_pairs_keep_their_code():
    # complex128 parts are float64: no 128-bit word moves a pair, so the piece stays.
    a, b = (torch.randn(4096, dtype=torch.complex128) for _ in range(2))
    code = _compare(lambda a, b: a * b, [a, b])
    assert "torch.int64" not in code, code  # (the copy out is a view.dtype: complex_outputs)


def _default_rope_code(batch, seq):
    torch._dynamo.reset()
    q, k = torch.randn(batch, seq, 4, 64), torch.randn(batch, seq, 1, 64)
    table = precompute_freqs_cis(64, seq)
    return _run(apply_rotary_emb_complex, None, [q, k, table], fused_rotary=False)[2]


def test_the_default_rewrites_a_piece_only_where_its_pairs_pay_for_its_extern_calls(monkeypatch):
    # On a CPU whose vector code has 64-bit shifts (AVX-512), whatever this one has.
    monkeypatch.setattr(pair_planes, "words_unvectorized_reason", lambda: None)
    # The rope reads real q and k and returns real tensors: in planes, their words are
    # five extern view.dtype calls (q, k, the table, two outputs), a few us each.
    assert _pair_loops(_default_rope_code(1, 1)) > 0  # 128 pairs: the scalar loop stays
    assert _pair_loops(_default_rope_code(4, 256)) == 0  # 131072 pairs: planes


def test_the_default_keeps_pairs_where_the_vector_code_emulates_64_bit_shifts(monkeypatch, caplog):
    # AVX2 (measured there: planes slower than the pair loops); True still asks for planes.
    reason = "Inductor's vector code here is avx2, which emulates the words' 64-bit shifts"
    monkeypatch.setattr(pair_planes, "words_unvectorized_reason", lambda: reason)
    with caplog.at_level("DEBUG", logger="inductor_complex.pair_planes"):
        assert _pair_loops(_default_rope_code(4, 256)) > 0
    assert reason in caplog.text
    torch._dynamo.reset()
    q, k = torch.randn(4, 256, 4, 64), torch.randn(4, 256, 1, 64)
    code = _run(apply_rotary_emb_complex, True, [q, k, precompute_freqs_cis(64, 256)], fused_rotary=False)[2]
    assert _pair_loops(code) == 0


def test_the_vector_isa_verdict_is_in_the_cache_key(monkeypatch):
    keys = set()
    for verdict in (None, "avx2"):
        monkeypatch.setattr(pair_planes, "words_unvectorized_reason", lambda v=verdict: v)
        keys.add(ComplexToRealPass().uuid())
    assert len(keys) == 2


def test_the_vector_isa_verdict_follows_inductors_pick():
    from torch._inductor.cpu_vec_isa import VecAVX512, pick_vec_isa

    reason = pair_planes.words_unvectorized_reason()
    assert (reason is None) == isinstance(pick_vec_isa(), VecAVX512), reason


def test_planes_option_is_checked_and_keyed():
    with pytest.raises(TypeError, match="planes_on_cpu"):
        ComplexToRealPass(planes_on_cpu=1)
    keys = {ComplexToRealPass(planes_on_cpu=v).uuid() for v in (None, True, False)}
    assert len(keys) == 3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_pairs_move_as_int32_words(dtype):
    # A real rope-like piece on 16-bit pairs: 32-bit words, the same bits.
    def rotate(x, t):
        p = x.reshape(64, 128, 2)
        return (p * t[:, :1] + p.flip(-1) * t[:, 1:]).reshape(64, 256)

    code = _compare(rotate, [torch.randn(64, 256).to(dtype), torch.randn(128, 2).to(dtype)])
    assert "torch.int32)" in code and _pair_loops(code) == 0, code


def test_real_math_that_never_crosses_the_pair_dim_is_left_alone():
    # A trailing dim of 2 that no op reads across: Inductor's flat loops vectorize it already.
    code = _compare(lambda x: x * 2 + 1, [torch.randn(512, 2)])
    assert "view.dtype" not in code, code


@pytest.mark.parametrize("bits", ["neg", "conj"])
def test_inputs_with_a_lazy_bit_are_not_read_as_words(bits):
    # view.dtype refuses a tensor with the conj or neg bit (the fuzzer's finding: a
    # neg-bit input written through .real under dynamic shapes failed to compile).
    def write(x):
        x.real.mul_(2)
        return x * x

    for dynamic in (True, False):
        torch._dynamo.reset()
        base = torch.randn(3, dtype=torch.complex64)
        x = base._neg_view() if bits == "neg" else base.conj()
        expected_base = base.clone()
        expected = write(expected_base._neg_view() if bits == "neg" else expected_base.conj())
        torch.testing.assert_close(_compile(write, True, dynamic=dynamic)(x), expected)


def test_a_rope_of_dynamic_size_keeps_its_loops_when_q_cannot_be_read_as_words():
    # With dynamic sizes the rope's q reaches the pair math through an as_strided view
    # (the pair dim made a literal 2), whose words Inductor would copy to make: in planes
    # its parts would load with stride 2. Such a piece stays, and the table's parts are
    # not read as words into the pair loops either (Inductor tiled those badly: 7x slower).
    q, k = torch.randn(1, 64, 4, 64), torch.randn(1, 64, 1, 64)
    code = _compare(apply_rotary_emb_complex, [q, k, precompute_freqs_cis(64, 64)], dynamic=True, fused_rotary=False)
    assert "view.dtype" not in code, code


def _spectral_mix(x, w1, w2):
    # An FNO layer's spectral part: low modes of rfft2 mixed across channels, irfft2 back.
    x_ft = torch.fft.rfft2(x)
    out_ft = torch.zeros_like(x_ft)
    out_ft[:, :, :4, :4] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :4, :4], w1)
    out_ft[:, :, -4:, :4] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -4:, :4], w2)
    return torch.fft.irfft2(out_ft, s=x.shape[-2:])


def test_a_complex_view_of_words_keeps_the_contiguous_layout_view_as_complex_asked_for():
    # Inductor lays out a buffer behind a complex view.dtype freely; view_as_complex
    # required it contiguous. Here it had chosen the einsum's channels-last order for the
    # spectrum irfft2 reads (strides (16, 1, 1088, 64)), and irfft2 gave other bits on it.
    torch.manual_seed(0)
    x = torch.randn(2, 8, 16, 16)
    w1, w2 = (torch.randn(8, 8, 4, 4, dtype=torch.complex64) / 64 for _ in range(2))
    got, got_grads, code = _run(_spectral_mix, True, (x, w1, w2), grad=True)
    want, want_grads, _ = _run(_spectral_mix, False, (x, w1, w2), grad=True)
    for a, b in zip(got + tuple(got_grads), want + tuple(want_grads)):
        _same_bits(a, b)
    # (torch 2.14 asserts strides with assert_tensor_metadata, which names the dtype too)
    views = re.findall(r"assert_(?:size_stride|tensor_metadata)\(\w+, \(2, 8, 16, 9\), \(([\d, ]+)\),"
                       r"(?: torch.complex64,)? 'torch.ops.aten.view.dtype'\)", code)
    assert views, code
    assert all(strides == "1152, 144, 9, 1" for strides in views), views
