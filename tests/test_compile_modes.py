"""The pass under torch.compile's other modes: max-autotune and fullgraph.

``mode=`` and ``options=`` cannot be given together, so these compiles take
the pass from the global hooks, as the README's one-liner installs it.
"""

from __future__ import annotations

import pytest
import torch

import inductor_complex
from inductor_complex.demo import ModelArgs, Transformer
from inductor_complex.fallbacks import count_complex_fallbacks

from complex_testing import _train, assert_close

SMALL = ModelArgs(dim=32, n_layers=1, n_heads=4, n_kv_heads=2, vocab_size=64, ffn_hidden=48, max_seq_len=16)


def train(model, tokens, run):
    return _train(model, tokens, lambda t: run(t).float().square().mean(), torch.optim.SGD, steps=2)


@pytest.mark.parametrize("mode", ["max-autotune", "max-autotune-no-cudagraphs", "default"])
def test_llama_trains_as_eager_under_each_mode_with_fullgraph(mode):
    tokens = torch.randint(0, SMALL.vocab_size, (2, 8))
    torch.manual_seed(0)
    eager_model = Transformer(SMALL)
    torch.manual_seed(0)
    compiled_model = Transformer(SMALL)
    expected = train(eager_model, tokens, eager_model)
    with inductor_complex.enabled(fused_rotary=False) as complex_pass, count_complex_fallbacks() as found:
        compiled = torch.compile(compiled_model, mode=mode, fullgraph=True)
        actual = train(compiled_model, tokens, compiled)
    assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert found.beyond_edges == [], found.ops
    # Dynamo's graph, then AOTAutograd's forward and backward: one graph each, no break.
    assert len(complex_pass.reports) == 1 and len(complex_pass.post_grad.reports) == 2
    assert complex_pass.reports[0].count("rewritten") > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU (perf/gpu_check.sh runs this)")
def test_reduce_overhead_replays_cuda_graphs_with_eagers_numbers():
    from torch._dynamo.utils import counters

    device = torch.device("cuda")
    tokens = torch.randint(0, SMALL.vocab_size, (2, 8), device=device)
    torch.manual_seed(0)
    model = Transformer(SMALL, device=device).eval()
    with torch.no_grad():
        expected = model(tokens)
        with inductor_complex.enabled() as complex_pass, count_complex_fallbacks() as found:
            compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
            outputs = [compiled(tokens).clone() for _ in range(3)]  # warm-up, record, replay
    for actual in outputs:
        assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert found.beyond_edges == [], found.ops
    assert counters["inductor"]["cudagraph_skips"] == 0, dict(counters["inductor"])
    assert complex_pass.reports[0].count("rewritten") > 0
