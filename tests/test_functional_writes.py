"""functional_writes.py: writes into tensors the graph just made become
functional ops, so a rewritten exported program passes torch.export's
verifier; over every op of the deploy sweep on inputs laid out otherwise
(where the walk copies results into eager's strides)."""

from __future__ import annotations

import pytest
import torch
from complex_testing import FunctionModule, assert_close
from deploy_sweep import OPS

from inductor_complex import rewrite_exported_program
from inductor_complex.functional_writes import functionalize_fresh_writes

aten = torch.ops.aten


def _graph(fn, *args) -> torch.fx.GraphModule:
    return torch.fx.experimental.proxy_tensor.make_fx(fn)(*args)


def _targets(gm) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_a_write_into_a_fresh_tensor_becomes_its_functional_op():
    def fn(x):
        target = torch.empty_strided((3, 4), (1, 3))
        target.copy_(x)
        target.transpose_(0, 1)
        return target.relu()

    gm = _graph(fn, torch.randn(3, 4))
    assert functionalize_fresh_writes(gm.graph) == []
    gm.recompile()
    assert aten.copy_.default not in _targets(gm) and aten.transpose_.default not in _targets(gm)
    assert {aten.copy.default, aten.transpose.int} <= set(_targets(gm))
    x = torch.randn(3, 4)
    assert_close(gm(x), fn(x))
    assert gm(x).stride() == fn(x).stride()


def test_writes_it_cannot_prove_unseen_stay():
    def into_input(x, y):
        x.add_(y)
        return x * 2

    def read_before(x):
        target = torch.zeros(3)
        view = target[:2]  # a view taken before the write sees it
        target.copy_(x)
        return view + 1

    for fn, args in ((into_input, (torch.randn(3), torch.randn(3))), (read_before, (torch.randn(3),))):
        gm = _graph(fn, *args)
        left = functionalize_fresh_writes(gm.graph)
        assert [n.target for n in left] in ([aten.add_.Tensor], [aten.copy_.default]), left


def _transposed_inputs(count: int) -> tuple:
    gen = torch.Generator().manual_seed(1)
    return tuple(torch.complex(torch.rand(4, 3, generator=gen) + 0.2, torch.rand(4, 3, generator=gen) + 0.2).mT
                 for _ in range(count))


def _groups(size: int = 16) -> list[tuple[str, ...]]:
    by_count: dict[int, list[str]] = {}
    for name, (_, count) in OPS.items():
        by_count.setdefault(count, []).append(name)
    return [tuple(names[i:i + size]) for names in by_count.values() for i in range(0, len(names), size)]


@pytest.mark.parametrize("names", _groups(), ids=lambda names: f"{names[0]}..{names[-1]}")
def test_every_sweep_op_on_transposed_inputs_gives_a_valid_program(names):
    # Transposed operands give results whose eager strides are not the pairs':
    # the walk lays them out as eager does, which once left copy_ in the program.
    args = _transposed_inputs(OPS[names[0]][1])

    def ops(*operands):
        return tuple(OPS[name][0](*operands) for name in names)

    rewritten = rewrite_exported_program(torch.export.export(FunctionModule(ops), args))
    rewritten.validate()
    assert not [n for n in rewritten.graph.nodes if isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable]
    for name, got, want in zip(names, rewritten.module()(*args), ops(*args)):
        assert_close(got, want, rtol=1e-5, atol=1e-5, equal_nan=True, msg=lambda m, name=name: f"{name}: {m}")
