"""No silent wrong results: each mechanism by which the pass once changed a
number, an alias, a gradient or a stride without saying so, with the program
that showed it. Each runs compiled with the pass against eager."""

from __future__ import annotations

import pytest
import torch
from complex_testing import aten_graph, assert_close, compile_and_compare, dynamo_graph, run_pass
from fuzz_programs import compile_with_pass
from torch._dynamo.utils import counters

from inductor_complex import ComplexToRealPass


def _compiled(fn, **options):
    return torch.compile(fn, fullgraph=True, options={"pre_grad_custom_pass": ComplexToRealPass(fused_rotary=False, **options)})


def _not_rewritten(report) -> list:
    return [d for d in report.decisions if d.action in ("kept", "bridged")]


def _all_rewritten(report) -> bool:
    return report.count("rewritten") > 0 and not _not_rewritten(report) and not counters["inductor_complex"]["pass_failed"]


# ------------------------------------------------ 1. real operands of another dtype


@pytest.mark.parametrize(
    "make_t",
    [
        lambda: torch.arange(2),  # int64, last size 2: broadcast against the pair dim
        lambda: torch.arange(1),  # last size 1
        lambda: torch.randn(3, 2, dtype=torch.bfloat16),
        lambda: torch.randn(3, 2, dtype=torch.float64),  # promotes to complex128
        lambda: torch.randn(3, 1, dtype=torch.float16),
    ],
    ids=["int64[2]", "int64[1]", "bf16[3,2]", "f64[3,2]", "f16[3,1]"],
)
def test_real_operand_of_another_dtype_is_rewritten_exactly(make_t):
    # (Real math of the operand itself is left to Inductor: a bf16 `t + 3` fused
    # into float32 code is not rounded to bf16 as eager's is, with or without the pass.)
    z, t = torch.randn(3, 2, dtype=torch.complex64), make_t()
    t = torch.where(t >= 0, t + 1, t - 1)  # keep divisors away from 0
    report, _ = compile_and_compare(lambda z, t: (z * t, t * z, z + t, z - t, z / t), z, t, grad=False)
    assert _all_rewritten(report), report.format()


def test_float32_operand_into_complex128():
    z, t = torch.randn(3, 2, dtype=torch.complex128), torch.randn(3, 2)
    report, _ = compile_and_compare(lambda z, t: z * t, z, t)
    assert _all_rewritten(report), report.format()


def test_s4d_kernel_powers_of_an_integer_range():
    # S4D: dtA.unsqueeze(-1) * torch.arange(L), complex times int64.
    def kernel(log_dt, a_re, a_im, length: int):
        dt_a = torch.complex(-torch.exp(a_re), a_im) * torch.exp(log_dt).unsqueeze(-1)
        return torch.exp(dt_a.unsqueeze(-1) * torch.arange(length)).sum(1).real

    args = (torch.randn(4), torch.randn(4, 3), torch.randn(4, 3), 5)
    report, _ = compile_and_compare(kernel, *args)
    assert _all_rewritten(report), report.format()


# ------------------------------------------------------------ 2. lazy conj/neg bits


@pytest.mark.parametrize("bit", ["conj", "neg", "both"])
def test_inputs_carrying_lazy_bits_are_read_at_zero_copy(bit):
    z = torch.randn(3, 4, dtype=torch.complex64)
    lazy = {"conj": z.conj(), "neg": torch._neg_view(z), "both": torch._neg_view(z.conj())}[bit]
    fn = lambda z: (z * (2 - 1j) + 1, z.abs(), z.real, z.imag * 2)  # noqa: E731
    expected = fn(lazy)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    actual = torch.compile(fn, fullgraph=True, options={"pre_grad_custom_pass": complex_pass})(lazy)
    assert_close(actual, expected)
    assert _all_rewritten(complex_pass.last_report), complex_pass.last_report.format()


def test_hermitian_transpose_of_an_input():
    z, w = torch.randn(3, 3, dtype=torch.complex64), torch.randn(3, 3, dtype=torch.complex64)
    report, _ = compile_and_compare(lambda z, w: (z.mH @ w, z.H * 2, z.adjoint().real), z, w)
    assert _all_rewritten(report), report.format()


# ------------------------------------------------- 3. views eager keeps and outputs


def test_write_to_the_real_base_of_a_conj_view_shows_through_it():
    def fn(x):
        c = torch.view_as_complex(x).conj()
        x.mul_(2)
        return c * 1

    x = torch.randn(3, 2)
    x_eager, x_compiled = x.clone(), x.clone()
    assert_close(_compiled(fn)(x_compiled), fn(x_eager))
    assert_close(x_compiled, x_eager)


def test_out_write_shows_through_an_earlier_conj_view():
    def fn(z, w):
        c = z.conj()
        torch.add(w, 1, out=z)
        return c * 1

    z, w = torch.randn(3, dtype=torch.complex64), torch.randn(3, dtype=torch.complex64)
    z_eager, z_compiled = z.clone(), z.clone()
    assert_close(_compiled(fn)(z_compiled, w), fn(z_eager, w))
    assert_close(z_compiled, z_eager)


def test_returned_conj_is_a_view_of_the_input():
    def fn(z):
        return z.conj(), z.mH

    z = torch.randn(2, 3, dtype=torch.complex64)
    z_eager, z_compiled = z.clone(), z.clone()
    expected, actual = fn(z_eager), _compiled(fn)(z_compiled)
    for got, want in zip(actual, expected):
        assert got.is_conj() and want.is_conj()
    z_eager.add_(1)
    z_compiled.add_(1)  # a write after the call shows through both, as in eager
    assert_close([t.resolve_conj() for t in actual], [t.resolve_conj() for t in expected])


def test_to_with_copy_given_positionally_copies():
    def fn(z):
        return z.to(torch.complex64, False, True), z.to(torch.complex64)

    z = torch.randn(3, dtype=torch.complex64)
    copied, aliased = _compiled(fn)(z)
    z.add_(1)
    assert not torch.equal(copied, z) and torch.equal(aliased, z)
    # The aten graph torch.export records, copy=True positionally:
    gm = aten_graph(fn, z)
    run_pass(gm)
    copied, aliased = gm(z)
    z.add_(1)
    assert not torch.equal(copied, z) and torch.equal(aliased, z)


@pytest.mark.parametrize("op", ["t_", "transpose_", "as_strided_"])
def test_in_place_metadata_ops_leave_the_graph_unchanged(op):
    def fn(z):
        y = z * 2
        if op == "t_":
            y.t_()
        elif op == "transpose_":
            y.transpose_(0, 1)
        else:
            y.as_strided_((2, 2), (1, 2))
        return y + 1

    z = torch.randn(3, 4, dtype=torch.complex64)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    actual = torch.compile(fn, options={"pre_grad_custom_pass": complex_pass})(z)
    assert_close(actual, fn(z))
    (decision,) = complex_pass.last_report.decisions
    assert decision.action == "kept" and "shape or strides" in decision.reason


def test_new_complex_output_takes_an_in_place_write_with_grad():
    # neuraloperator's SpectralConv: a complex buffer the graph makes, written
    # afterwards in eager code with a value that requires grad.
    def make_buffer(x):
        return torch.zeros(2, 3, dtype=torch.complex64), torch.zeros(2, 3, dtype=torch.complex64) + x

    x = torch.randn(2, 3)
    w = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    for buffer in _compiled(make_buffer)(x):
        assert buffer._base is None
        buffer[0] = w  # raises for a view made under the inference graph's no_grad
        buffer.abs().sum().backward()


@pytest.mark.parametrize("requires_grad", [False, True])
def test_outputs_have_eagers_strides(requires_grad):
    def fn(z):
        return z.t().exp(), z.t() * 2, torch.where(z.t().real > 0, z.t(), 0), z.t().abs()

    z = torch.randn(3, 4, dtype=torch.complex64, requires_grad=requires_grad)
    expected, actual = fn(z), _compiled(fn)(z)
    for got, want in zip(actual, expected):
        assert got.stride() == want.stride(), (got.stride(), want.stride())
    assert_close(actual, expected)


def test_angle_has_eagers_contiguous_layout():
    # Eager's complex angle writes into a fresh tensor through out=: contiguous,
    # where the meta kernel (and so Dynamo's fake value) keeps the input's layout.
    def fn(z):
        return z.angle(), z.angle() * 2

    z = torch.randn(2, 4, 3, dtype=torch.complex64).transpose(1, 2)
    expected, actual = fn(z), _compiled(fn)(z)
    assert [t.stride() for t in actual] == [t.stride() for t in expected]
    assert_close(actual, expected)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_ops_below_angle_follow_eagers_layout(backend):
    # TensorIterator lays `angle * z` out after the contiguous angle; a rule
    # reading Dynamo's fake value (after the meta angle) would copy it transposed.
    def fn(z):
        a = z.angle()
        return a * z, torch.polar(a.abs(), a)

    z = torch.randn(2, 3, dtype=torch.complex64).mT
    expected, actual = fn(z), compile_with_pass(fn, backend)(z)
    assert [t.stride() for t in actual] == [t.stride() for t in expected]
    assert_close(actual, expected)


def test_returned_view_of_a_lazy_input_with_symbolic_sizes_stays_a_view():
    # expand's sizes are graph nodes with dynamic shapes; eager's view ops replay them.
    def fn(z):
        return z.mT.expand(2, *z.mT.shape)

    leaf = torch.randn(2, 3, dtype=torch.complex128)
    z = torch._neg_view(leaf)
    expected = fn(z)
    actual = torch.compile(fn, dynamic=True, options={"pre_grad_custom_pass": ComplexToRealPass(fused_rotary=False)})(z)
    assert actual.is_neg() and actual.untyped_storage().data_ptr() == leaf.untyped_storage().data_ptr()
    assert_close(actual, expected)


def test_returned_multi_output_view_refuses_writes_with_grad_as_in_eager():
    # The one returned view of a new tensor gets a storage of its own, unless it
    # is an unbind/split output: eager refuses in-place writes with grad into those.
    def fn(z):
        return z.sgn().unbind(0)[0]

    z, w = torch.randn(3, 3, dtype=torch.complex128), torch.ones((), dtype=torch.complex128, requires_grad=True)
    expected, actual = fn(z), _compiled(fn)(z)
    assert_close(actual, expected)
    with pytest.raises(RuntimeError, match="multiple views"):
        expected.mul_(w)
    with pytest.raises(RuntimeError, match="is a view|view was created"):  # (in the graph's no_grad)
        actual.mul_(w)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_returned_view_made_under_no_grad_refuses_writes_with_grad_as_in_eager(backend):
    # The only returned view of a new tensor is given a storage of its own, unless
    # eager made it under no_grad: eager refuses in-place writes with grad into it.
    def fn(z):
        v = z.exp()
        with torch.no_grad():
            return v.flatten()

    z, w = torch.randn(2, 3, dtype=torch.complex64), torch.ones((), dtype=torch.complex64, requires_grad=True)
    expected, actual = fn(z), compile_with_pass(fn, backend)(z)
    assert_close(actual, expected)
    for out in (expected, actual):
        with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
            out.mul_(w)


def test_mH_of_a_0d_tensor_is_its_conj_forward_and_backward():
    # Eager's deprecated mT/mH of a 0-D tensor: the tensor itself / its conj.
    # Kept as a complex op over the pair's view, its backward hit view_as_real
    # of a conj tangent.
    def fn(z):
        return z.sum().exp().mH, z.sum().mT

    z = torch.randn(3, 2, dtype=torch.complex64, requires_grad=True)
    expected, actual = fn(z), _compiled(fn)(z)
    assert_close([t.resolve_conj() for t in actual], [t.resolve_conj() for t in expected])
    want = torch.autograd.grad(sum(t.abs() for t in expected), z)
    got = torch.autograd.grad(sum(t.abs() for t in actual), z)
    assert_close(got, want)


def test_matmul_under_no_grad_returned_takes_writes_with_grad_as_in_eager():
    # Dynamo's fake matmul (a Python decomposition) is a view of its bmm result;
    # eager's kernel returns a tensor of its own, which takes the write.
    def fn(z):
        with torch.no_grad():
            return z @ z.mT

    z = torch.randn(2, 3, 2, dtype=torch.complex128, requires_grad=True)
    expected, actual = fn(z), _compiled(fn)(z)
    assert_close(actual, expected)
    w = torch.ones((), dtype=torch.complex128, requires_grad=True)
    for out in (expected, actual):
        out.mul_(w)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_returned_multi_output_view_of_a_written_input_stays_eagers_view(backend):
    # Eager's view ops are replayed on the input through the in-place op that
    # wrote it (not rebuilt by as_strided): the view refuses writes with grad.
    def fn(z):
        z *= z
        return z.unbind(0)[0]

    z, w = torch.randn(3, 2, dtype=torch.complex64), torch.ones((), dtype=torch.complex64, requires_grad=True)
    expected_z, actual_z = z.clone(), z.clone()
    expected, actual = fn(expected_z), compile_with_pass(fn, backend)(actual_z)
    assert actual._base is actual_z
    assert_close(actual, expected)
    for out in (expected, actual):
        with pytest.raises(RuntimeError, match="multiple views"):
            out.mul_(w)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_returned_detach_of_a_tensor_that_requires_grad_leaves_the_graph_unchanged(backend):
    # AOTAutograd rebuilt the detached output from the other one with the view
    # ops of the pair's complex view (view_as_complex of a complex tensor: a crash).
    def fn(z):
        v = z - 2 * z
        return v, v.detach()

    z = torch.randn(2, 3, dtype=torch.complex128, requires_grad=True)
    expected, actual = fn(z), compile_with_pass(fn, backend)(z)
    assert_close(actual, expected)
    assert actual[0].requires_grad and not actual[1].requires_grad
    assert actual[0].untyped_storage().data_ptr() == actual[1].untyped_storage().data_ptr()


def test_returned_new_tensor_with_a_returned_lazy_view_leaves_the_graph_unchanged():
    # Resolved, the lazy view would not share the new tensor's storage; as views
    # of the hidden pair, the new tensor would refuse in-place writes with grad.
    def fn(z):
        v = z.reciprocal()
        return v, torch._neg_view(v)

    z, w = torch.randn(2, 3, dtype=torch.complex64), torch.ones((), dtype=torch.complex64, requires_grad=True)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    actual = torch.compile(fn, options={"pre_grad_custom_pass": complex_pass})(z)
    assert_close([t.resolve_neg() for t in actual], [t.resolve_neg() for t in fn(z)])
    assert actual[1].is_neg() and actual[0].untyped_storage().data_ptr() == actual[1].untyped_storage().data_ptr()
    actual[0].mul_(w)
    (decision,) = [d for d in complex_pass.last_report.decisions if d.action == "kept"]
    assert "lazy conj/neg view" in decision.reason


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("program", ["written_then_unbound", "conj_under_no_grad", "mH_under_no_grad"])
def test_returned_views_refuse_writes_with_grad_where_eagers_do(backend, program):
    # Eager's fake values carry each view's creation (no_grad, multi-output):
    # the returned view refuses as eager's does whichever route made it. The
    # written tensor is found by the node that made it, not by the write.
    def written_then_unbound(z):
        v = z.exp()
        v.zero_()
        return v.unbind(0)[0]

    def conj_under_no_grad(z):
        v = z.exp()
        with torch.no_grad():
            return v.conj()

    def mH_under_no_grad(z):
        v = z.exp()
        with torch.no_grad():
            return v.mH

    fn = locals()[program]
    z, w = torch.randn(3, 3, dtype=torch.complex64), torch.ones((), dtype=torch.complex64, requires_grad=True)
    expected, actual = fn(z), compile_with_pass(fn, backend)(z)
    assert_close(actual.resolve_conj(), expected.resolve_conj())
    assert actual.stride() == expected.stride()
    for out in (expected, actual):
        with pytest.raises(RuntimeError, match="view"):
            out.mul_(w)


def test_kept_value_written_by_a_rule_takes_an_in_place_write_with_grad():
    # fft stays complex; the rule for neg_ writes it through its entry view, and
    # AOTAutograd would return it as a view of the written pair.
    def fn(x):
        v = torch.fft.fft(x)
        v.neg_()
        return v

    x = torch.randn(4, dtype=torch.complex64)
    expected_x, actual_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected, actual = fn(expected_x), _compiled(fn)(actual_x)
    assert_close(actual, expected)
    w = torch.full((), 2j, requires_grad=True)
    for out in (expected, actual):
        out.mul_(w)  # raises for a view of a custom Function's output
    assert_close(torch.autograd.grad(actual.abs().sum(), actual_x), torch.autograd.grad(expected.abs().sum(), expected_x))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_no_op_of_a_kept_value_returned_is_that_value(backend):
    # Found by the fuzzer: exp is kept (its input is written later), and
    # resolve_neg without the bit hands back the same tensor. Returned through
    # the pair it became a view that AOTAutograd rebuilt under no_grad, which
    # refused the in-place write with grad eager's tensor takes.
    def fn(z, t):
        v = z.exp()
        same = v.resolve_neg()
        u = torch.complex(t, t)
        z.mul_(z)
        return v, same, u

    z, t = torch.randn(3, 2, dtype=torch.complex64), torch.randn(3, 2, requires_grad=True)
    expected, actual = fn(z.clone(), t), compile_with_pass(fn, backend)(z.clone(), t)
    assert_close(actual, expected)
    assert expected[1] is expected[0] and actual[1] is actual[0]
    w = torch.ones((), dtype=torch.complex64, requires_grad=True)
    for out in (expected, actual):
        out[1].mul_(w)


def test_outputs_sharing_storage_share_it_as_in_eager():
    def fn(z):
        y = z * 2
        return y, y.detach(), y.real

    z = torch.randn(3, dtype=torch.complex64)
    y, detached, real = _compiled(fn)(z)
    y.mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))  # y has its own storage
    assert torch.equal(detached, y.detach()) and torch.equal(real, y.real)


# ---------------------------------------------------------------------- 4. autograd


def test_input_used_first_under_no_grad_keeps_its_gradient():
    def fn(z):
        with torch.no_grad():
            a = z * 2
        return a + z * 3

    z = torch.randn(3, dtype=torch.complex64)
    compile_and_compare(fn, z)  # compares z.grad with eager's


def test_view_made_under_no_grad_gets_no_gradient():
    def fn(x):
        with torch.no_grad():
            z = torch.view_as_complex(x)
        return z * 2 + torch.view_as_complex(x)

    compile_and_compare(fn, torch.randn(3, 2))


@pytest.mark.parametrize("dynamic", [False, True])
def test_returned_view_of_a_view_made_under_no_grad_passes_no_gradient(dynamic):
    # Eager's views of the input, replayed at the output, each in its own grad
    # mode: v1 requires grad, but the chain to x is cut under no_grad.
    def fn(x):
        with torch.no_grad():
            v0 = x.chunk(2, -1)[0]
        return v0.chunk(2, -1)[0]

    x = torch.randn(2, 1, 3, dtype=torch.complex64, requires_grad=True)
    actual = torch.compile(fn, dynamic=dynamic, options={"pre_grad_custom_pass": ComplexToRealPass(fused_rotary=False)})(x)
    expected = fn(x)
    assert actual.requires_grad == expected.requires_grad
    for out in (expected, actual):
        assert torch.autograd.grad(out.abs().sum(), x, allow_unused=True) == (None,)


def test_read_of_an_input_the_graph_writes_later_keeps_its_gradient():
    # Inductor saved the rule's read of x for backward as x itself, which the
    # no_grad write then changed: the op is kept (eager's exp saves its result).
    def fn(x):
        y = x.exp()
        with torch.no_grad():
            x.div_(2)
        return y

    x = torch.randn(3, dtype=torch.complex64)
    expected_x, actual_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected, actual = fn(expected_x), _compiled(fn)(actual_x)
    assert_close(actual, expected)
    assert_close(torch.autograd.grad(actual.abs().sum(), actual_x), torch.autograd.grad(expected.abs().sum(), expected_x))


def test_in_place_rules_do_not_overwrite_what_autograd_saved():
    def fn(z, w):
        y = z * 2
        y.mul_(w)
        y.log_()
        return y

    report, _ = compile_and_compare(fn, torch.randn(3, dtype=torch.complex64), torch.randn(3, dtype=torch.complex64))
    assert _all_rewritten(report), report.format()


def test_double_backward_refuses_as_stock_does():
    def fn(z):
        return (z * z * z).abs().sum()

    z = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    (grad,) = torch.autograd.grad(_compiled(fn)(z), z, create_graph=True)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        torch.autograd.grad(grad.abs().sum() + z.abs().sum(), z)


def test_gradient_of_log_at_zero_is_not_finite_as_in_eager():
    # Eager's is grad / conj(0) = inf+nanj; a detached stand-in for log|0| made it 0.
    def fn(z):
        return z.log()

    z = torch.tensor([0j, 1 + 1j], requires_grad=True)
    (expected,) = torch.autograd.grad(fn(z), z, torch.ones(2, dtype=torch.complex64))
    (actual,) = torch.autograd.grad(_compiled(fn)(z), z, torch.ones(2, dtype=torch.complex64))
    assert not torch.isfinite(torch.view_as_real(expected[0])).all()
    assert not torch.isfinite(torch.view_as_real(actual[0])).all()
    assert_close(actual[1], expected[1])


# ------------------------------------------------------------------ 5. casts, modes


def test_cast_to_bool_is_true_for_any_nonzero_part():
    z = torch.tensor([1j, 0, 1 + 0j, -0.0 - 0j, float("nan")], dtype=torch.complex64)
    report, _ = compile_and_compare(lambda z: z.to(torch.bool), z, grad=False)
    assert _all_rewritten(report), report.format()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_leaves_complex_matmul_in_complex(dtype):
    def fn(a, b, x, w):
        with torch.autocast("cpu", dtype=dtype):
            return a @ b, torch.einsum("ij,jk->ik", a, b), x @ w  # the last is real: autocast applies

    a, b = torch.randn(4, 4, dtype=torch.complex64), torch.randn(4, 4, dtype=torch.complex64)
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    expected = fn(a, b, x, w)
    actual = _compiled(fn)(a, b, x, w)
    assert [t.dtype for t in actual] == [t.dtype for t in expected] == [torch.complex64, torch.complex64, dtype]
    assert_close(actual[:2], expected[:2])


def test_ambient_autocast_is_turned_off_for_the_rewrite_only():
    fn = lambda a, b: (a @ b, a.real @ b.real)  # noqa: E731
    a, b = torch.randn(4, 4, dtype=torch.complex64), torch.randn(4, 4, dtype=torch.complex64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected, actual = fn(a, b), _compiled(fn)(a, b)
    assert [t.dtype for t in actual] == [t.dtype for t in expected] == [torch.complex64, torch.bfloat16]
    assert_close(actual[0], expected[0])


# ------------------------------------------------------------------- diagnostics


def test_an_undone_walk_leaves_only_its_reason_in_reports_and_counters():
    def fn(z):
        y = z * 2 + 1
        y.t_()
        return y.exp()

    complex_pass = ComplexToRealPass(fused_rotary=False)
    gm = dynamo_graph(fn, torch.randn(3, 3, dtype=torch.complex64))
    counters.clear()
    complex_pass(gm.graph)
    assert [d.action for d in complex_pass.last_report.decisions] == ["kept"]
    assert dict(counters["inductor_complex"]) == {"kept": 1}


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_kept_write_under_no_grad_into_a_value_that_requires_grad_compiles(backend, dynamic):
    # Found by the fuzzer's long run: `out=` has no rule, so the op is kept and
    # writes through a complex view of the pair. Made under the no_grad of the
    # write, that view made AOTAutograd refuse the graph (a compile error);
    # eager's tensor was made with grad, and so is the view now.
    def fn(x):
        v = x * x
        with torch.no_grad():
            torch.mul(x, 2, out=v)
        return x, v

    x = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    expected, actual = fn(x), compile_with_pass(fn, backend, dynamic)(x)
    assert_close(actual, expected)
    assert actual[1].requires_grad == expected[1].requires_grad


@pytest.mark.parametrize("dynamic", [False, True])
def test_value_made_under_no_grad_then_written_with_grad_compiles(dynamic):
    # Found by the fuzzer's long run: exp is kept (its input is written later),
    # so later rules read it through an entry view. Made under exp's no_grad,
    # that view could not be read after `v.mul_(x)` wrote its base with grad:
    # AOTAutograd refused the graph (a compile error).
    def fn(n, x):
        with torch.no_grad():
            v = x.exp()
        v.mul_(x)
        with torch.no_grad():
            x.mul_(n)
        return n, v

    n, x = torch.randint(-3, 4, (3,)), torch.randn(3, dtype=torch.complex64)
    expected_x, actual_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected = fn(n, expected_x.clone())
    actual = compile_with_pass(fn, "aot_eager", dynamic)(n, actual_x.clone())
    assert_close(actual, expected)
    assert_close(torch.autograd.grad(actual[1].abs().sum(), actual_x), torch.autograd.grad(expected[1].abs().sum(), expected_x))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_view_of_a_tensor_written_in_place_shares_its_storage_across_a_graph_break(backend):
    # Found by the fuzzer's long run (a wrong number): `out=` into a
    # non-contiguous tensor breaks Dynamo's graph, so the first graph returns
    # v and its view v.imag. The in-place op's result (v itself) was taken for
    # a view of v and given a storage of its own: eager's write into v after
    # the graph then did not reach the returned v.imag.
    def fn(x):
        v = x * x
        imag = v.imag
        v *= x
        torch.mul(x, 2, out=v)
        return imag

    def first_graph(x):
        v = x * x
        imag = v.imag
        v *= x
        return v, imag

    x = torch.randn(3, 2, dtype=torch.complex64).t()
    assert_close(compile_with_pass(fn, backend)(x.clone()), fn(x.clone()))
    v, imag = compile_with_pass(first_graph, backend)(x.clone())
    assert imag.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()


def test_kept_write_with_grad_into_a_no_grad_view_leaves_the_graph_to_stock():
    # Found by the fuzzer's long run: matmul's rule returns a view of its GEMM,
    # made under no_grad here; the kept mul_ (its operand carries the conj bit)
    # then writes into it with grad, which autograd refuses for any view of it
    # (a compile error). Eager's v is a tensor of its own: the graph is left as it was.
    def fn(x):
        with torch.no_grad():
            v = x @ x
        v.mul_(x)
        return x, x.exp()

    base = torch.randn(3, 3, dtype=torch.complex128)
    expected = fn(base.conj().clone().requires_grad_().conj())
    # (The real GEMM form, the default: complex_blas_on_cpu's op returns a tensor of its own.)
    complex_pass = ComplexToRealPass(fused_rotary=False)
    compiled = torch.compile(fn, backend=lambda gm, ex: complex_pass(gm.graph) or gm.forward)
    x = base.conj().clone().requires_grad_().conj()
    actual = compiled(x)
    assert_close(actual, expected)
    decision = next(d for r in complex_pass.reports for d in r.decisions if d.action == "kept")
    assert "a view under no_grad" in decision.reason
    blas_pass = ComplexToRealPass(fused_rotary=False, complex_blas_on_cpu=True)
    compiled = torch.compile(fn, backend=lambda gm, ex: blas_pass(gm.graph) or gm.forward)
    assert_close(compiled(base.conj().clone().requires_grad_().conj()), expected)
    assert_close(compile_with_pass(fn, "aot_eager")(base.conj().clone().requires_grad_().conj()), expected)


def _gradient_of(outputs, leaf):
    loss = sum((torch.view_as_real(o) if o.is_complex() else o).sum() * (i + 1) for i, o in enumerate(outputs))
    return torch.autograd.grad(loss, leaf)


WHOLE_WRITES = {
    "add_": lambda x: x.add_(1j),
    "iadd": lambda x: x.__iadd__(1j),
    "exp_": lambda x: x.exp_(),
    "copy_": lambda x: x.copy_(x * 2),
    "fill_": lambda x: x.fill_(2j),
    "zero_": lambda x: x.zero_(),
    "setitem_ellipsis": lambda x: x.__setitem__(Ellipsis, 1j),
}


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("write", WHOLE_WRITES, ids=list(WHOLE_WRITES))
def test_write_of_a_whole_input_after_it_came_to_require_grad_keeps_its_backward(write, dynamic):
    # Found by the fuzzer's long run: `x.mul_(w)` makes the input require
    # grad, then a rule writes the whole of it. Written through its entry
    # view, AOTAutograd's backward read the input's strides, and the min-cut
    # partitioner, saving the input for them, recomputed from it the value
    # mul_'s backward needs after the write: the backward raised (dynamic
    # shapes). A setitem or fill_ through a view taken before the input
    # required grad raised at compile ("a leaf Variable that requires grad").
    def fn(x, w):
        x.mul_(w)
        real = x.real
        WHOLE_WRITES[write](x)
        return x, real

    x = torch.randn(2, 3, 2, dtype=torch.complex64)
    w = torch.randn(3, 2, dtype=torch.float64)
    expected_w, actual_w = w.clone().requires_grad_(), w.clone().requires_grad_()
    expected = fn(x.clone(), expected_w)
    actual = compile_with_pass(fn, "aot_eager", dynamic)(x.clone(), actual_w)
    assert_close(actual, expected)
    # (float64 gradients through complex64 math: float32's rounding)
    assert_close(_gradient_of(actual, actual_w), _gradient_of(expected, expected_w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [False, True])
def test_kept_value_written_by_a_rule_with_grad_is_returned_as_its_own_tensor(dynamic):
    # Found by the fuzzer's long run: when a write with grad made the next use
    # of v0 take a new entry view, the output bridge no longer found the view
    # the rule wrote through, returned v0 as a view of the graph's buffer, and
    # autograd refused the in-place write with grad that eager's v0 takes.
    def fn(x):
        v = x.clone()
        v[..., :1] = 2.5
        e = x.exp()
        with torch.no_grad():
            x.mul_(x)
        return v, e

    x = torch.randn(3, dtype=torch.complex64)
    expected = fn(x.clone().requires_grad_())
    actual = compile_with_pass(fn, "aot_eager", dynamic)(x.clone().requires_grad_())
    assert_close(actual, expected)
    actual[0].mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))
    expected[0].mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))
    assert_close(actual[0], expected[0])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_kept_in_place_op_returned_twice_takes_writes_with_grad(backend):
    # Found by the fuzzer's long run: `v.add_(w)` with w of a wider dtype is
    # kept and writes through a complex view of v's pair; returned with
    # `v.resolve_neg()` (the same tensor in eager), both came back as views
    # of the graph's buffer and refused the in-place writes with grad that
    # eager's v takes. Each now is a tensor of its own, the same one.
    def fn(x, w):
        v = 2 / x
        v.add_(w)
        return v, v.resolve_neg()

    x, w = torch.randn(3, 3, dtype=torch.complex64), torch.randn(3, dtype=torch.complex128)
    expected = fn(x, w.clone().requires_grad_())
    actual = compile_with_pass(fn, backend)(x, w.clone().requires_grad_())
    assert_close(actual, expected)
    assert actual[0] is actual[1]
    for out in (actual[0], expected[0]):
        out.mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))
    assert_close(actual[0], expected[0])


@pytest.mark.parametrize("dynamic", [False, True])
def test_rewritten_op_between_a_write_and_a_no_grad_read_keeps_its_gradient(dynamic):
    # Found by the fuzzer: the kept `v.copy_(x)` is a write with grad, so v's
    # entry view is made again after it. It went before the first node after
    # the write, one the rewrite of `x * 2` had made, whose grad mode the pass
    # did not know: it took it for no_grad, made the view with grad on and
    # then turned grad off, so `x * 2` ran under no_grad and lost its gradient.
    def fn(x):
        v = torch.fft.fft(x)
        v.copy_(x)
        doubled = x * 2
        with torch.no_grad():
            read = v * 1
        return doubled, read

    x = torch.randn(3, dtype=torch.complex64)
    x_eager, x_compiled = x.clone().requires_grad_(), x.clone().requires_grad_()
    expected = fn(x_eager)
    actual = compile_with_pass(fn, "aot_eager", dynamic)(x_compiled)
    assert_close(actual, expected)
    assert [t.requires_grad for t in actual] == [t.requires_grad for t in expected] == [True, False]
    torch.view_as_real(actual[0]).sum().backward()
    torch.view_as_real(expected[0]).sum().backward()
    assert_close(x_compiled.grad, x_eager.grad)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_write_into_a_kept_value_returned_beside_its_view_takes_writes_with_grad(backend):
    # Found by the fuzzer's long run: `v` stays complex (it reads x, which the
    # graph writes afterwards); the rule for `v.zero_()` wrote through v's real
    # view, so AOTAutograd rebuilt the returned v, and its view `u`, as views
    # of the written pair made inside the compiled function, and both refused
    # the in-place writes with grad that eager's take. The write is now kept.
    def fn(x, y):
        v = x.add(y, alpha=2)
        v.zero_()
        u = v.unsqueeze(-1)
        x.mul_(x)
        return v, u

    x, y = torch.randn(3, dtype=torch.complex64), torch.randn(3)
    x_eager, x_compiled = x.clone(), x.clone()
    expected = fn(x_eager, y.clone().requires_grad_())
    actual = compile_with_pass(fn, backend)(x_compiled, y.clone().requires_grad_())
    assert_close(actual, expected)
    assert_close(x_compiled, x_eager)
    for i in range(2):
        for out in (actual[i], expected[i]):
            out.mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))
    assert_close(actual, expected)


@pytest.mark.parametrize("dynamic", [False, True])
def test_read_with_grad_after_a_no_grad_write_into_an_input_keeps_its_gradient(dynamic):
    # Found by the fuzzer's long run: the write inside no_grad (kept: another
    # dtype) makes x's entry view be made again after it, still inside the
    # no_grad region, so `x * 1` read x through a view that cut its gradient:
    # x.grad silently missed that term. The view is now made with grad.
    def fn(w, x):
        v = torch.complex(w, w)
        with torch.no_grad():
            x *= v
        return x * 1, x

    w, x = torch.randn(3, requires_grad=True), torch.randn(2, 3, dtype=torch.complex128)
    grads = []
    for run in (fn, compile_with_pass(fn, "aot_eager", dynamic)):
        leaf = x.clone().requires_grad_()
        outputs = run(w, leaf)
        torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
        grads.append(leaf.grad)
    assert_close(grads[1], grads[0])
    assert torch.equal(grads[0], torch.full_like(grads[0], 2))


def test_layout_under_autocast_follows_eagers_contiguous_angle():
    # Found by the fuzzer's long run: eager's complex angle of a transposed
    # tensor is contiguous, and so is what is computed from it; under autocast
    # the pass kept the meta kernel's transposed strides for the result of
    # torch.complex, which autocast leaves alone.
    def fn(x):
        a = x.angle()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = torch.complex(a, a)
        return a, z

    x = torch.randn(3, 2, dtype=torch.complex128).t()
    expected = fn(x)
    actual = compile_with_pass(fn, "aot_eager")(x)
    assert_close(actual, expected)
    assert [t.stride() for t in actual] == [t.stride() for t in expected] == [(3, 1), (3, 1)]


@pytest.mark.parametrize("write", ["real_mul", "setitem"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_write_through_a_view_of_an_inlined_op_lands(write, dynamic):
    # Found by the fuzzer's long run, a silent wrong number: `fft` is inlined
    # as its aten op, whose fresh fake value no longer shared storage with
    # Dynamo's `v.real`; the rewriter took the write's operand for a read of
    # another tensor and gave it a copy, so `v.real.mul_(2)` was lost. The
    # inlined result now keeps the op's own fake value.
    def fn(x):
        v = torch.fft.fft(x)
        if write == "real_mul":
            v.real.mul_(2)
        else:
            v[..., :1] = 2.5
        return v, x.exp()

    x = torch.randn(3, dtype=torch.complex64)
    expected = fn(x.clone().requires_grad_())
    actual = compile_with_pass(fn, "aot_eager", dynamic)(x.clone().requires_grad_())
    assert_close(actual, expected)
    for out in (actual[0], expected[0]):
        out.mul_(torch.ones((), dtype=torch.complex64, requires_grad=True))
    assert_close(actual[0], expected[0])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_new_tensor_that_requires_grad_returned_with_its_aliases_takes_writes_with_grad(backend, dynamic):
    # Found by the fuzzer's long run: `v` (a copy, as x is transposed) requires
    # grad and is returned three times: itself, `resolve_neg` of it (the same
    # tensor) and a view. As views of one hidden pair, AOTAutograd made them
    # inside the compiled function and they refused the in-place writes with
    # grad eager's take. Now `v` gets a storage of its own and its views are
    # made from it by eager's view ops.
    def fn(x):
        v = x.flatten()
        v.neg_()
        return v, v.resolve_neg(), v[1:]

    base = torch.randn(3, 4, dtype=torch.complex64, requires_grad=True)
    results = []
    for run in (fn, compile_with_pass(fn, backend, dynamic=dynamic)):
        base.grad = None
        outs = run(base.t().conj())
        assert outs[0].data_ptr() == outs[1].data_ptr() == outs[2].data_ptr() - 8
        for out in outs:
            out.mul_(torch.full((), 1 + 1j, dtype=torch.complex64, requires_grad=True))
        sum(torch.view_as_real(out).sum() * (i + 1) for i, out in enumerate(outs)).backward()
        results.append(([out.detach().clone() for out in outs], base.grad.clone()))
    assert_close(results[1], results[0])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_real_and_complex_views_of_a_new_tensor_share_its_storage(backend, dynamic):
    # Found by the fuzzer's long run: the caller never sees `v` itself, only a
    # real view and a complex view of it. The complex view got a storage of its
    # own and the real view stayed a real buffer, so they no longer shared
    # storage as eager's do. Both are now made from one storage of v's own.
    def fn(x):
        v = x.exp()
        return torch.view_as_real(v), v.view(-1)

    x = torch.randn(3, dtype=torch.complex64)
    expected = fn(x)
    actual = compile_with_pass(fn, backend, dynamic=dynamic)(x)
    assert_close(actual, expected)
    assert actual[0].data_ptr() == actual[1].data_ptr()
    actual[1].mul_(2)
    assert_close(torch.view_as_complex(actual[0]), actual[1])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_returned_lazy_view_sharing_storage_with_another_output_keeps_sharing_it(backend):
    # Found by the fuzzer's long run (a silently wrong number): `v` views a new
    # real tensor and `v.mH` is a lazy conj view of it; the lazy view came back
    # resolved, sharing nothing, so the caller's write through it (here the
    # eager code after a graph break) did not reach `v`. The graph is now left
    # to stock, which returns both as views of one storage.
    def fn(x):
        v = torch.view_as_complex(torch.stack((x, x), -1))
        with torch.no_grad():
            h = v.mH
        return v, h

    x = torch.randn(2, 3)
    actual, expected = compile_with_pass(fn, backend)(x), fn(x)
    assert_close(actual, expected)
    assert actual[1].is_conj() and actual[0].data_ptr() == actual[1].data_ptr()
    actual[1].mul_(2)
    expected[1].mul_(2)
    assert_close(actual[0], expected[0])


@pytest.mark.parametrize("split", ["chunk", "split", "unbind"])
@pytest.mark.parametrize("backend", ["inductor", "aot_eager_post_grad"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_returned_piece_of_a_split_of_a_returned_tensor_stays_its_view(split, backend, dynamic):
    # Found by the fuzzer's long run through Inductor: `v.chunk(2, -1)[0]` came back
    # a tensor of its own with strides (1, 1) for eager's view (2, 1) of `v`. The
    # rewrite after autograd kept a forward graph's returned views as AOTAutograd
    # fixed them, but walked past split/unbind, whose value is a list of views.
    def fn(x0, x1):
        v = x1 * x0
        piece = {"chunk": lambda: v.chunk(2, -1)[0], "split": lambda: v.split(1, -1)[0],
                 "unbind": lambda: v.unbind(-1)[0]}[split]()
        return v, piece

    x0, x1 = torch.randn(3, 2), torch.randn(3, 2, dtype=torch.complex64)
    actual, expected = compile_with_pass(fn, backend, dynamic=dynamic)(x0, x1), fn(x0, x1)
    assert_close(actual, expected)
    assert actual[1].stride() == expected[1].stride() and actual[1].data_ptr() == actual[0].data_ptr()
    actual[1].mul_(2)
    expected[1].mul_(2)
    assert_close(actual[0], expected[0])
