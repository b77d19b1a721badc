"""Compiled optimizer steps and foreach ops on complex tensors, against eager.

PyTorch's optimizers step complex parameters through ``view_as_real`` for
most of their math, but weight decay, momentum and the parameter update
itself still touch complex tensors, and user code calls ``torch._foreach_*``
on complex lists directly. With the pass, what is left to eager is the copy
of each new value into its parameter (Inductor's epilogue, see
``test_post_grad.py``).
"""

from __future__ import annotations

import pytest
import torch
from complex_testing import assert_close

from inductor_complex import ComplexToRealPass
from inductor_complex.fallbacks import count_complex_fallbacks

EPILOGUE = {"aten.copy_.default"}


def _complex_lists(seed=0):
    gen = torch.Generator().manual_seed(seed)
    shapes = [(3,), (2, 2)]
    return [[torch.randn(s, dtype=torch.complex64, generator=gen) for s in shapes] for _ in range(2)]


def _compiled(fn, fullgraph=True):
    complex_pass = ComplexToRealPass(fused_rotary=False)
    return torch.compile(fn, fullgraph=fullgraph, options=complex_pass.inductor_options()), complex_pass


def test_in_place_foreach_ops_write_each_element_as_eager():
    def fn(zs, ws):
        torch._foreach_add_(zs, ws, alpha=0.5)
        torch._foreach_mul_(zs, 2j)
        torch._foreach_div_(zs, [1 + 1j, 3.0])
        torch._foreach_sub_(zs, 0.25)

    zs, ws = _complex_lists()
    expected = [z.clone() for z in zs]
    fn(expected, ws)
    compiled, complex_pass = _compiled(fn)
    with count_complex_fallbacks() as fallbacks:
        compiled(zs, ws)
    assert_close(zs, expected, atol=1e-6, rtol=1e-6)
    assert set(fallbacks.beyond_edges) <= EPILOGUE, fallbacks.ops
    kept = [d for d in complex_pass.last_report.decisions if d.action in ("kept", "bridged")]
    assert not kept, complex_pass.last_report.format()


def test_out_of_place_foreach_ops_are_rewritten_and_real_results_kept():
    def fn(zs, ws):
        return torch._foreach_mul(zs, ws), torch._foreach_exp(zs), torch._foreach_abs(zs)

    zs, ws = _complex_lists(1)
    compiled, complex_pass = _compiled(fn)
    with count_complex_fallbacks() as fallbacks:
        actual = compiled(zs, ws)
    assert_close(actual, fn(zs, ws), atol=1e-6, rtol=1e-5)
    # abs gives real tensors, which the pass does not hold in lists: kept, with the reason.
    assert set(fallbacks.beyond_edges) == {"aten._foreach_abs.default"}, fallbacks.ops
    (kept,) = [d for d in complex_pass.last_report.decisions if d.action in ("kept", "bridged")]
    assert kept.op == "torch._foreach_abs" and "real results" in kept.reason


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01, foreach=False),
        lambda ps: torch.optim.AdamW(ps, lr=0.1),
        lambda ps: torch.optim.AdamW(ps, lr=0.1, foreach=False),
        lambda ps: torch.optim.Adam(ps, lr=0.1, amsgrad=True, maximize=True),
    ],
    ids=["sgd_foreach", "sgd_for_loop", "adamw_foreach", "adamw_for_loop", "adam_amsgrad_maximize"],
)
def test_compiled_optimizer_step_on_complex_parameters_matches_eager(make_optimizer):
    # (fused=True refuses complex parameters in eager, so it has no case here.)
    params = [torch.nn.Parameter(t) for t in _complex_lists(2)[0]]
    eager_params = [torch.nn.Parameter(p.detach().clone()) for p in params]
    optimizer, eager_optimizer = make_optimizer(params), make_optimizer(eager_params)
    step, _ = _compiled(optimizer.step, fullgraph=False)  # (optimizer.step breaks the graph itself)
    gen = torch.Generator().manual_seed(3)
    with count_complex_fallbacks() as fallbacks:
        for _ in range(3):
            for p, q in zip(params, eager_params):
                p.grad = torch.randn(p.shape, dtype=p.dtype, generator=gen)
                q.grad = p.grad.clone()
            step()
            eager_optimizer.step()
            # Inductor's fused float32 math, with or without the pass: a few ulps.
            assert_close(params, eager_params, atol=1e-5, rtol=1e-5)
    assert set(fallbacks.beyond_edges) <= EPILOGUE, fallbacks.ops
