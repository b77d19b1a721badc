"""``python -m inductor_complex explain file.py:name``: the whole-model report."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from inductor_complex.__main__ import main

REPO_ROOT = Path(__file__).resolve().parents[1]

SPECTRAL = textwrap.dedent('''
    import torch

    class Spectral(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(5, 2))

        def forward(self, x):
            z = torch.fft.rfft(x)
            z = z * torch.view_as_complex(self.w)
            return torch.fft.irfft(z, n=x.shape[-1]).sum()

    def make():
        return Spectral(), (torch.randn(3, 8),)

    def not_a_pair():
        return 42
''')


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_llama_example_reports_rewrites_and_rotary_sites(capsys):
    code, out, _ = _run(capsys, str(REPO_ROOT / "examples" / "explain_llama.py") + ":model", "--no-compile")
    assert code == 0
    graph = out.split("\n\n")[0]
    assert graph.startswith("graph 0: 19 complex ops (4 fused_refused, 15 rewritten); zero-copy views: 1 entry"), out
    # The example's ropes are small: on CPU each site says why it is not fused, at the user's line.
    assert graph.count("rotary site not fused: ") == 4 and graph.count("below 4096") == 4
    assert "llama_rope.py:33" in graph and "Inductor left to eager" not in out


def test_fft_model_bridges_with_reason_and_lists_what_inductor_left(capsys, tmp_path):
    script = tmp_path / "spectral.py"
    script.write_text(SPECTRAL)
    code, out, _ = _run(capsys, f"{script}:make", "--backward")
    assert code == 0
    forward = out.split("\n\n")[0]
    assert forward.startswith("graph 0: 4 complex ops (1 bridged, 1 kept, 2 rewritten)"), out
    assert "rewritten: torch.view_as_complex, operator.mul" in forward
    assert "kept aten._fft_r2c.default: no rule for _fft_r2c [at " in forward and "spectral.py:10" in forward
    assert "bridged aten._fft_c2r.default: no rule for _fft_c2r [at " in forward and "spectral.py:12" in forward
    assert "(backward, after autograd)" in out
    left = out.strip().splitlines()[-1]
    assert left.startswith("Inductor left to eager: ") and "aten._fft_r2c.default" in left and "aten.mul" not in left


@pytest.mark.parametrize("target, message", [
    ("no_such_file.py:make", "no such file"),
    ("{script}", "expected path/to/file.py:name"),
    ("{script}:missing", "defines no function 'missing'"),
    ("{script}:not_a_pair", "must return (model, args)"),
])
def test_bad_targets_are_refused_with_a_reason(capsys, tmp_path, target, message):
    script = tmp_path / "spectral.py"
    script.write_text(SPECTRAL)
    code, out, err = _run(capsys, target.format(script=script), "--no-compile")
    assert code == 2 and message in err and not out
