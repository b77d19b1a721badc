"""The pass pins no size of a graph of dynamic shapes.

Why: a guard the pass adds while it computes its new nodes' fake values that
pins a size (``Eq(s0, 16)``) makes ``torch.compile(dynamic=True)`` compile
again for every new size, silently (a complex result's ``torch.complex`` once
did: its meta function's cast read the strides as ints). Guards that only
restate what the program already requires stay allowed: the rope's pairs
guard ``Eq(s0, 2*((s0//2)))`` (an even head dim, which the reshape into pairs
needs anyway). Inductor runs the pre-grad hook with the Python dispatcher on,
so the pass runs so here too.
"""

from __future__ import annotations

import pytest
import sympy
import torch
from torch._dispatch.python import enable_python_dispatcher
from torch._guards import detect_fake_mode

from inductor_complex import ComplexToRealPass
from inductor_complex.llama_rope import apply_rotary_emb_complex, precompute_freqs_cis


def _complex(*shape):
    return torch.randn(*shape, dtype=torch.complex64)


def _pairs_product(x, t):  # the rope's layout: real pairs viewed as complex, times a table
    return torch.view_as_real(torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * t).flatten(-2)


PROGRAMS = {
    "sum": (lambda a, b: a + b, lambda: (_complex(6, 5), _complex(6, 5))),
    "product": (lambda a, b: a * b, lambda: (_complex(6, 5), _complex(6, 5))),
    "product_as_pairs": (lambda a, b: torch.view_as_real(a * b), lambda: (_complex(6, 5), _complex(6, 5))),
    "broadcast_product": (lambda a, b: a * b, lambda: (_complex(3, 6, 5), _complex(6, 1))),
    "exp_abs": (lambda a: torch.exp(a).abs() + a.angle(), lambda: (_complex(6, 5),)),
    "matrix_product": (lambda a, b: a @ b, lambda: (_complex(6, 5), _complex(5, 4))),
    "conj_sum": (lambda a: (a.conj() * a).sum(-1), lambda: (_complex(6, 5),)),
    "cat_reshape": (lambda a, b: torch.cat([a, b], 0).reshape(-1), lambda: (_complex(6, 5), _complex(3, 5))),
    "polar": (lambda r, theta: torch.polar(r, theta) * 2, lambda: (torch.rand(6, 5), torch.randn(6, 5))),
    "pairs_times_table": (_pairs_product, lambda: (torch.randn(2, 6, 3, 8), _complex(6, 1, 4))),
    "spectral_filter": (lambda x, w: torch.fft.irfft(torch.fft.rfft(x) * w, n=x.shape[-1]),
                        lambda: (torch.randn(4, 16), _complex(4, 9))),
    "stft_magnitude": (lambda x: torch.stft(x, 8, window=torch.ones(8), return_complex=True).abs(),
                       lambda: (torch.randn(2, 40),)),
    "rope": (apply_rotary_emb_complex,
             lambda: (torch.randn(2, 6, 4, 8), torch.randn(2, 6, 2, 8), precompute_freqs_cis(8, 6))),
}


def _guards_the_pass_adds(fn, inputs, **options):
    """The pass run on ``fn``'s Dynamo graph of dynamic shapes: (the guards it added
    that equate an expression of sizes with a number, the sizes it replaced by a number)."""
    added = []

    def backend(gm, example_inputs):
        shape_env = detect_fake_mode(example_inputs).shape_env
        guards_before, replaced_before = len(shape_env.guards), dict(shape_env.replacements)
        with enable_python_dispatcher():
            ComplexToRealPass(**options)(gm.graph)
        pinned = {s: v for s, v in shape_env.replacements.items() if v.is_number and s not in replaced_before}
        equalities = [g.expr for g in shape_env.guards[guards_before:] if isinstance(g.expr, sympy.Eq)]
        added.append(([str(e) for e in equalities if any(side.is_number for side in e.args)], pinned))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend, dynamic=True, fullgraph=True)(*inputs)
    assert len(added) == 1, "expected one graph"
    return added[0]


@pytest.mark.parametrize("fused_rotary", [False, None])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_pass_pins_no_size(name, fused_rotary):
    fn, make_inputs = PROGRAMS[name]
    guards, pinned = _guards_the_pass_adds(fn, make_inputs(), fused_rotary=fused_rotary)
    assert guards == [] and pinned == {}, (guards, pinned)


def test_the_check_sees_a_pinned_size(monkeypatch):
    # The check itself: with torch.complex's fake value computed from C++ again
    # (the defect 107127f fixed), a complex result's edge pins its sizes.
    from inductor_complex import graph_meta

    monkeypatch.setattr(graph_meta, "_any_symbolic", lambda values: False)
    fn, make_inputs = PROGRAMS["product"]
    guards, pinned = _guards_the_pass_adds(fn, make_inputs(), fused_rotary=False)
    assert guards and pinned, (guards, pinned)


def _shape_env_of(graph: torch.fx.Graph):
    values = [n.meta.get("val", n.meta.get("example_value")) for n in graph.find_nodes(op="placeholder")]
    fake_mode = detect_fake_mode([v for v in values if isinstance(v, torch.Tensor)])
    return fake_mode.shape_env if fake_mode else None


@pytest.mark.parametrize("name", ["product", "matrix_product", "spectral_filter", "rope"])
def test_through_inductor_forward_and_backward_the_passes_pin_no_size(name, monkeypatch):
    # Both hooks as Inductor calls them: the pre-grad pass on Dynamo's graph, the
    # post-grad pass on AOTAutograd's forward and backward aten graphs.
    import inductor_complex
    from inductor_complex.complex_to_real_pass import PostGradComplexToRealPass

    seen = []

    def spying(run):
        def call(self, graph):
            shape_env = _shape_env_of(graph)
            before = dict(shape_env.replacements) if shape_env else {}
            run(self, graph)
            if shape_env is not None:
                seen.append({s: v for s, v in shape_env.replacements.items() if v.is_number and s not in before})
        return call

    monkeypatch.setattr(PostGradComplexToRealPass, "__call__", spying(PostGradComplexToRealPass.__call__))
    monkeypatch.setattr(ComplexToRealPass, "__call__", spying(ComplexToRealPass.__call__))
    fn, make_inputs = PROGRAMS[name]
    inputs = [x.requires_grad_() for x in make_inputs()]
    torch._dynamo.reset()
    with inductor_complex.enabled(), torch._inductor.config.patch(force_disable_caches=True):
        outputs = torch.compile(fn, dynamic=True, fullgraph=True)(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        sum(torch.view_as_real(o).sum() if o.is_complex() else o.sum() for o in outputs).backward()
    assert len(seen) >= 3, seen  # Dynamo's graph, then AOT's forward and backward
    assert all(pinned == {} for pinned in seen), seen
