"""FFTs as products with real DFT bases (rules/fft.py, rules/dft_bases.py,
spectrum_bins.py): every torch.fft function, stft and istft, in exported
programs (the default there) and past autograd (``real_ffts=True``), against eager."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from complex_testing import FunctionModule, assert_close
from exported_models import fft_models

import inductor_complex
from inductor_complex import rewrite_exported_program
from inductor_complex.fallbacks import count_complex_fallbacks
from inductor_complex.rules import dft_bases

TOLERANCE = {torch.float32: {"rtol": 1e-5, "atol": 2e-5}, torch.float64: {"rtol": 1e-12, "atol": 1e-12}}


def _hann(n, dtype):
    return torch.hann_window(n, dtype=dtype)


# name → (the program on a real signal x of shape [3, 8, 10]); complex results are returned as pairs.
TRANSFORMS = {
    "rfft": lambda x: torch.view_as_real(torch.fft.rfft(x)),
    "rfft_n_dim_ortho": lambda x: torch.view_as_real(torch.fft.rfft(x, n=12, dim=1, norm="ortho")),
    "rfft_truncating_n": lambda x: torch.view_as_real(torch.fft.rfft(x, n=7, norm="forward")),
    "irfft": lambda x: torch.fft.irfft(torch.fft.rfft(x) * 2),
    "irfft_odd_n": lambda x: torch.fft.irfft(torch.fft.rfft(x), n=9, norm="ortho"),
    "irfft_longer_spectrum": lambda x: torch.fft.irfft(torch.fft.fft(x), n=10),
    "fft": lambda x: torch.view_as_real(torch.fft.fft(x.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64) * 1j, dim=1)),
    "ifft": lambda x: torch.view_as_real(torch.fft.ifft(torch.fft.fft(x), norm="forward")),
    "fft2": lambda x: torch.view_as_real(torch.fft.fft2(x, s=(6, 12))),
    "ifft2": lambda x: torch.view_as_real(torch.fft.ifft2(torch.fft.fft(x), dim=(0, 2))),
    "rfft2_irfft2": lambda x: torch.fft.irfft2(torch.fft.rfft2(x) * (1 + 1j), s=(8, 10)),
    "fftn": lambda x: torch.view_as_real(torch.fft.fftn(x, norm="ortho")),
    "rfftn_irfftn": lambda x: torch.fft.irfftn(torch.fft.rfftn(x, dim=(0, 1, 2)), s=x.shape, dim=(0, 1, 2)),
    "hfft": lambda x: torch.fft.hfft(torch.fft.ifft(x)),
    "ihfft": lambda x: torch.view_as_real(torch.fft.ihfft(x).resolve_conj()),
    "stft": lambda x: torch.view_as_real(torch.stft(x.flatten(1), 16, 4, window=_hann(16, x.dtype), return_complex=True)),
    "stft_reflect_normalized": lambda x: torch.view_as_real(
        torch.stft(x.flatten(1), 12, 3, return_complex=True, pad_mode="reflect", normalized=True)),
    "stft_not_centred_two_sided": lambda x: torch.view_as_real(
        torch.stft(x.flatten(1), 16, 5, center=False, onesided=False, return_complex=True)),
    "istft": lambda x: torch.istft(
        torch.stft(x.flatten(1), 16, 4, window=_hann(16, x.dtype), return_complex=True) * 1.5, 16, 4,
        window=_hann(16, x.dtype), length=80),
}


def _rewritten(fn, x, **options):
    return rewrite_exported_program(torch.export.export(FunctionModule(fn), (x,)), signature="real", **options)


def _ops(program) -> set[str]:
    return {str(n.target) for n in program.graph.nodes if n.op == "call_function"}


def _complex_values(program) -> list[str]:
    return [n.name for n in program.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].is_complex()]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_exported_transform_is_real_math_with_eagers_numbers(name, dtype):
    fn, x = TRANSFORMS[name], torch.randn(3, 8, 10, generator=torch.Generator().manual_seed(0), dtype=dtype)
    program = _rewritten(fn, x)
    assert not _complex_values(program), _complex_values(program)
    assert not any("fft" in op for op in _ops(program)), _ops(program)
    assert_close(program.module()(x), fn(x), **TOLERANCE[dtype])


def test_bases_are_exact_at_quarter_turns_and_compute_the_dft():
    basis = dft_bases.complex_basis(8, range(8), inverse=False, scale=1.0, dtype=torch.float64, device="cpu")
    entries = basis.reshape(8, 2, 8, 2)[:, 0]  # (t, k, part): w^(kt) for a real input
    t, k = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    quarter = (4 * t * k) % 8 == 0
    assert set(entries[quarter].flatten().tolist()) <= {-1.0, 0.0, 1.0}  # no 1e-16 where sin(pi) is 0
    z = torch.randn(5, 8, dtype=torch.complex128)
    got = torch.view_as_complex((torch.view_as_real(z).flatten(-2) @ basis).unflatten(-1, (8, 2)).contiguous())
    assert_close(got, torch.fft.fft(z), rtol=1e-13, atol=1e-13)


def _bases(program) -> dict[str, tuple]:
    return {name: tuple(value.shape) for name, value in program.constants.items() if "dft" in name}


def test_a_truncated_spectrum_computes_only_the_kept_bins():
    # FNO: rfft2(x)[..., :3, :4] and [..., -3:, :4] of an [8, 10] signal.
    module, args, _ = fft_models()["fno_spectral_conv"]
    program = rewrite_exported_program(torch.export.export(module, args), signature="real")
    assert_close(program.module()(*args), module(*args), rtol=1e-5, atol=1e-5)
    forward = sorted(shape for name, shape in _bases(program).items() if "fwd" in name)
    # r2c along the last dim: 4 of 6 bins (10 points, [10, 2*4]); c2c along the other: 3 of 8 bins twice.
    assert forward == [(10, 8), (16, 6), (16, 6)], _bases(program)


def test_a_spectrum_read_whole_is_computed_whole():
    def fn(x):
        spectrum = torch.fft.rfft(x)
        return torch.view_as_real(spectrum[..., :3] * 2), spectrum.abs()

    x = torch.randn(3, 8, 10)
    program = _rewritten(fn, x)
    assert list(_bases(program).values()) == [(10, 12)]  # all 6 bins, once
    for got, want in zip(program.module()(x), fn(x)):
        assert_close(got, want, rtol=1e-5, atol=1e-5)


LONGEST_REAL = 4095  # a real transform's basis holds n * 2 (n // 2 + 1) numbers


def test_bases_past_the_limit_stay_ffts_with_a_warning_or_raise_when_asked(caplog):
    assert 4095 * 2 * 2048 <= dft_bases.MAX_BASIS_ELEMENTS < 4096 * 2 * 2049

    def fn(x):
        return torch.fft.irfft(torch.fft.rfft(x) * 2, n=x.shape[-1])

    short, long_ = torch.randn(2, LONGEST_REAL), torch.randn(2, LONGEST_REAL + 1)
    assert not any("fft" in op for op in _ops(_rewritten(fn, short)))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        kept = _rewritten(fn, long_)
    assert {"aten._fft_r2c.default", "aten._fft_c2r.default"} <= _ops(kept)
    assert any("_fft_r2c" in r.getMessage() and "past the limit" in r.getMessage() for r in caplog.records)
    assert_close(kept.module()(long_), fn(long_), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"real_ffts=True.*_fft_r2c.*past the limit"):
        _rewritten(fn, long_, real_ffts=True)
    assert "aten._fft_r2c.default" in _ops(_rewritten(fn, short, real_ffts=False))


def test_real_ffts_option_is_checked():
    with pytest.raises(TypeError, match="real_ffts"):
        _rewritten(TRANSFORMS["rfft"], torch.randn(2, 8), real_ffts=1)
    with pytest.raises(TypeError, match="real_ffts"):
        inductor_complex.ComplexToRealPass(real_ffts=None)


def test_compiled_training_step_with_real_ffts_has_no_fft_left():
    # torch.compile: Dynamo's graph keeps its FFTs; the post-grad companion
    # makes those of the forward and backward graphs DFT products.
    module, (x,), _ = fft_models()["fno_spectral_conv"]
    torch._dynamo.reset()
    compiled = torch.compile(module, options=inductor_complex.ComplexToRealPass(real_ffts=True).inductor_options())
    x = x.clone().requires_grad_(True)
    with count_complex_fallbacks() as fallbacks:
        out = compiled(x)
        out.square().sum().backward()
    got = (out.detach(), x.grad.clone(), module.w1.grad.clone())
    x.grad = None
    module.zero_grad()
    out = module(x)
    out.square().sum().backward()
    for g, w in zip(got, (out.detach(), x.grad, module.w1.grad)):
        assert_close(g, w, rtol=1e-4, atol=1e-5)
    assert not [op for op in fallbacks.ops if "fft" in op], fallbacks.ops


def test_aoti_package_with_real_ffts_calls_no_fft(tmp_path):
    import re
    import zipfile

    module, args, _ = fft_models()["fno_spectral_conv"]
    package = torch._inductor.aoti_compile_and_package(
        torch.export.export(module, args), package_path=str(tmp_path / "fno.pt2"),
        inductor_configs={"pre_grad_custom_pass": inductor_complex.ComplexToRealPass(real_ffts=True)})
    with zipfile.ZipFile(package) as archive:
        source = "\n".join(archive.read(n).decode() for n in archive.namelist() if n.endswith(".cpp"))
    assert not re.search(r"_fft_|view_as_real|view_as_complex", source)
    assert_close(torch._inductor.aoti_load_package(package)(*args), module(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [5, 8, 33])
def test_complex128_c2c_and_c2r_bases_round_trip(n):
    z = torch.randn(4, n, dtype=torch.complex128)
    inverse = dft_bases.complex_basis(n, range(n), inverse=True, scale=1 / n, dtype=torch.float64, device="cpu")
    forward = dft_bases.complex_basis(n, range(n), inverse=False, scale=1.0, dtype=torch.float64, device="cpu")
    pairs = torch.view_as_real(z).flatten(-2)
    assert_close((pairs @ forward @ inverse), pairs, rtol=1e-12, atol=1e-12)
    to_real = dft_bases.complex_to_real_basis(n, scale=1 / n, dtype=torch.float64, device="cpu")
    half = torch.view_as_real(torch.fft.rfft(z.real)).flatten(-2)
    assert_close(half @ to_real, z.real, rtol=1e-12, atol=1e-12)
    assert math.isclose(dft_bases.norm_scale(1, n), n ** -0.5)
