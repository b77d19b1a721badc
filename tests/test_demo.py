"""The demo end to end at toy size: it runs, it shows the pass's effect, it prints the table."""

from inductor_complex import demo
from inductor_complex.__main__ import main as cli_main


def test_demo_shows_pass_removes_complex_fallbacks(capsys):
    result = demo.main(["--device", "cpu", "--layers", "1", "--batch", "1", "--seq", "16", "--steps", "2"])
    printed = capsys.readouterr().out

    assert result.ok, result.failures
    # Stock Inductor leaves the rotary multiply to eager; the pass leaves at most zero-copy views.
    assert result.stock.fallbacks_beyond_views
    assert "aten.mul.Tensor" in result.stock.fallbacks
    assert result.with_pass.fallbacks_beyond_views == []
    assert result.stock.rewritten == 0 and result.with_pass.rewritten > 0
    assert not result.with_pass.decisions.get("bridged") and not result.with_pass.decisions.get("kept")
    for name, error in result.with_pass.errors.items():
        assert error < result.tolerance, name
    assert result.with_pass.ms_per_step > 0

    for text in ("stock torch.compile", "+ ComplexToRealPass", "ops rewritten", "complex ops left to eager",
                 "max |error| vs eager", "time per step (fwd+bwd)", "OK:"):
        assert text in printed
    assert result.table in printed


def test_cli_without_command_prints_usage_and_fails(capsys):
    assert cli_main([]) != 0
    assert "demo" in capsys.readouterr().err
