"""AOTInductor: the exported aten graph reaches the same hook and is rewritten."""

from __future__ import annotations

import re

import pytest
import torch
from rotary_models import llama_apply_rotary_emb, precompute_freqs_cis
from torch import nn

import inductor_complex
from inductor_complex.fallbacks import count_complex_fallbacks


class RotaryWithBufferAndPolar(nn.Module):
    """The Llama idiom on a complex buffer, plus a table built with ``polar``."""

    def __init__(self):
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(8, 16))

    def forward(self, xq, xk, angles):
        seq = xq.shape[1]
        q, k = llama_apply_rotary_emb(xq, xk, self.freqs_cis[:seq])
        extra = torch.polar(torch.ones_like(angles), angles)  # [S, D/2]
        q2, _ = llama_apply_rotary_emb(q, k, extra)
        return q2, k


def test_aoti_compile_and_package_rewrites_complex(tmp_path):
    model = RotaryWithBufferAndPolar().eval()
    args = (torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), torch.randn(6, 4))
    expected = model(*args)
    exported = torch.export.export(model, args)
    complex_pass = inductor_complex.ComplexToRealPass()
    with count_complex_fallbacks() as fallbacks:
        package = torch._inductor.aoti_compile_and_package(
            exported,
            package_path=str(tmp_path / "rotary.pt2"),
            inductor_configs={"pre_grad_custom_pass": complex_pass},
        )
    report = complex_pass.last_report
    assert report is not None and report.count("rewritten") >= 8, report
    assert report.count("bridged") == 0 and report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops
    runner = torch._inductor.aoti_load_package(package)
    for got, want in zip(runner(*args), expected):
        torch.testing.assert_close(got, want)


class ComplexScalars(nn.Module):
    def forward(self, x):
        z = torch.view_as_complex(x)
        return torch.view_as_real(z * torch.scalar_tensor(1.5 - 2.5j, dtype=torch.complex64) * 1j)


def test_aoti_package_with_complex_python_scalars(tmp_path):
    # AOTInductor's C++ wrapper has no complex scalar: stock fails to compile
    # `aten.full(..., 1.5-2.5j)` (from scalar_tensor); the pass leaves none.
    model, x = ComplexScalars(), torch.randn(4, 3, 2)
    exported = torch.export.export(model, (x,))
    with pytest.raises(Exception):
        torch._inductor.aoti_compile_and_package(exported, package_path=str(tmp_path / "stock.pt2"))
    complex_pass = inductor_complex.ComplexToRealPass(fused_rotary=False)
    package = torch._inductor.aoti_compile_and_package(
        exported, package_path=str(tmp_path / "ours.pt2"), inductor_configs=complex_pass.inductor_options())
    assert complex_pass.last_report.count("rewritten") == 5, complex_pass.last_report.format()
    torch.testing.assert_close(torch._inductor.aoti_load_package(package)(x), model(x))


def _package_sources(package) -> str:
    import zipfile

    with zipfile.ZipFile(package) as archive:
        return "\n".join(archive.read(n).decode() for n in archive.namelist() if n.endswith(".cpp"))


COMPLEX_IN_CPP = re.compile(r"complex|view_as_real", re.IGNORECASE)


def test_aoti_package_of_a_rewritten_program_holds_nothing_complex(tmp_path):
    # Through the hook, the complex buffer becomes a constant of its pairs (no
    # complex constant read through libtorch's view_as_real), as in the rewritten program.
    from exported_models import models

    model, args, dynamic_shapes = models()["llama_rope"]
    exported = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)
    complex_pass = inductor_complex.ComplexToRealPass()
    with count_complex_fallbacks() as fallbacks:
        with_pass = torch._inductor.aoti_compile_and_package(
            exported, package_path=str(tmp_path / "with_pass.pt2"), inductor_configs={"pre_grad_custom_pass": complex_pass})
    assert fallbacks.ops == []
    assert not COMPLEX_IN_CPP.search(_package_sources(with_pass).replace("inductor_complex", ""))
    assert model.freqs_cis.is_complex()  # (the model's own buffer is left as it was)
    assert exported.state_dict["freqs_cis"].is_complex()
    torch.testing.assert_close(torch._inductor.aoti_load_package(with_pass)(*args), model(*args), rtol=1e-5, atol=1e-5)
    rewritten = inductor_complex.rewrite_exported_program(exported)
    with count_complex_fallbacks() as fallbacks:
        package = torch._inductor.aoti_compile_and_package(rewritten, package_path=str(tmp_path / "rewritten.pt2"))
    assert fallbacks.ops == []
    assert not COMPLEX_IN_CPP.search(_package_sources(package))
    runner = torch._inductor.aoti_load_package(package)
    longer = torch.randn(2, 9, 16)
    for x in (*args, longer):
        torch.testing.assert_close(runner(x), model(x), rtol=1e-5, atol=1e-5)


class BufferNamedLikeItsPairs(RotaryWithBufferAndPolar):
    """A user buffer under the name the pairs constant of ``freqs_cis`` would take."""

    def __init__(self):
        super().__init__()
        self.register_buffer("freqs_cis_pairs", torch.randn(*self.freqs_cis.shape, 2))

    def forward(self, xq, xk, angles):
        q, k = super().forward(xq, xk, angles)
        return q + self.freqs_cis_pairs[: xq.shape[1]].flatten(-2)[None, :, None], k


def test_aoti_pairs_constant_does_not_take_a_users_attribute(tmp_path):
    model = BufferNamedLikeItsPairs().eval()
    args = (torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), torch.randn(6, 4))
    package = torch._inductor.aoti_compile_and_package(
        torch.export.export(model, args), package_path=str(tmp_path / "named.pt2"),
        inductor_configs={"pre_grad_custom_pass": inductor_complex.ComplexToRealPass(fused_rotary=False)})
    for got, want in zip(torch._inductor.aoti_load_package(package)(*args), model(*args)):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
