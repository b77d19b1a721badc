"""Layout ops, variance/std, the addmm family and in-place zero_/pow_ against eager.

Every op runs through the pass on Dynamo's graph and on torch.export's aten
graph. Layout ops only move, copy or zero whole elements, so their results
must be eager's bit for bit (NaN payloads and signed zeros included); var/std
call eager's own real kernel on the same part views, so they are bitwise too.
Products are compared with tolerances (BLAS summation order). Gradients are
compared with eager autograd in complex128; one chain is compiled with Inductor
forward and backward.
"""

from __future__ import annotations

import math

import expecttest
import pytest
import torch
from complex_testing import assert_close, aten_graph, compile_and_compare, dynamo_graph, normalize_graph, run_pass

inf, nan = math.inf, math.nan
_EDGE = [0.0, -0.0, 1.5, -2.0, inf, -inf, nan, 1e-40, 3e30, -7.25, 0.5]


def _edge(*shape, dtype=torch.complex64):
    """Random values with zeros of both signs, infinities and NaNs mixed in."""
    n = math.prod(shape)
    re = torch.randn(n, dtype=torch.float64)
    im = torch.randn(n, dtype=torch.float64)
    for i in range(0, n, 3):
        re[i] = _EDGE[i % len(_EDGE)]
        im[i] = _EDGE[(5 * i + 2) % len(_EDGE)]
    return torch.complex(re, im).to(dtype).reshape(shape)


def _bits(t: torch.Tensor) -> torch.Tensor:
    parts = torch.view_as_real(t) if t.is_complex() else t
    return parts.contiguous().view(torch.int64 if parts.dtype == torch.float64 else torch.int32)


def _assert_bitwise(actual, expected):
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _assert_bitwise(a, e)
        return
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(_bits(actual), _bits(expected))


def _graph_inputs(gm, captured, args, form):
    """``args`` in the order the graph takes them (Dynamo keeps only the used inputs)."""
    if form == "aten":
        return list(args)
    return [args[next(k for k, c in enumerate(captured) if c is e)] for e in gm.example_inputs]


def _rewritten_outputs(fn, *args):
    """``fn`` through the pass on both graph forms: [(form, outputs)], each fully rewritten."""
    results = []
    for form, capture in (("dynamo", dynamo_graph), ("aten", aten_graph)):
        captured = [a.clone() for a in args]
        gm = capture(fn, *captured)
        report = run_pass(gm)
        assert report.count("bridged") + report.count("kept") == 0, report.format()
        assert report.count("rewritten") > 0
        out = gm(*[a.clone() for a in _graph_inputs(gm, captured, args, form)])
        if form == "dynamo":  # Dynamo's graph returns a tuple of outputs
            out = out[0] if len(out) == 1 else tuple(out)
        results.append((form, out))
    return results


LAYOUT = {
    "tril": lambda z: torch.tril(z),
    "tril_offset": lambda z: torch.tril(z, -1),
    "triu_batched": lambda z: z.reshape(2, 3, 4).triu(1),
    "flip": lambda z: torch.flip(z, [0, -1]),
    "flip_method": lambda z: z.flip(1),
    "fliplr": torch.fliplr,
    "flipud": torch.flipud,
    "roll_flat": lambda z: torch.roll(z, 5),
    "roll_dims": lambda z: torch.roll(z, (1, -2), (0, 1)),
    "roll_negative_dim": lambda z: z.roll(3, -1),
    "fftshift": torch.fft.fftshift,
    "fftshift_dim": lambda z: torch.fft.fftshift(z, -1),
    "ifftshift": lambda z: torch.fft.ifftshift(z, dim=(0, 1)),
    "vstack": lambda z: torch.vstack([z, z[0]]),
    "row_stack": lambda z: torch.row_stack([z[0], z[1]]),
    "hstack_2d": lambda z: torch.hstack([z, z[:, :2]]),
    "hstack_1d": lambda z: torch.hstack((z[0], z[1], z[2, 1])),
    "dstack": lambda z: torch.dstack([z, z.reshape(6, 4, 1)]),
    "dstack_1d": lambda z: torch.dstack([z[0], z[1]]),
    "column_stack": lambda z: torch.column_stack([z[0:2].mT, z[1]]),
    "column_stack_0d": lambda z: torch.column_stack([z[0, 0], z[1, 1]]),
    "atleast_1d": lambda z: torch.atleast_1d(z[0, 0]),
    "atleast_2d": lambda z: torch.atleast_2d(z[0]),
    "atleast_3d": lambda z: torch.atleast_3d(z[1]) * 2,
    "atleast_3d_many": lambda z: torch.atleast_3d(z, z[0], z[0, 0]),
    "diagonal": lambda z: torch.diagonal(z, 1),
    "diagonal_dims": lambda z: z.reshape(2, 3, 4).diagonal(-1, 2, 0) * 2,
    "diag_embed": lambda z: torch.diag_embed(z, 1, 0, 2),
    "var": lambda z: torch.var(z),
    "var_dim_correction": lambda z: torch.var(z, 1, correction=0, keepdim=True),
    "var_unbiased_positional": lambda z: z.var(0, False),
    "std": lambda z: torch.std(z, dim=[0, 1]),
    "std_correction": lambda z: torch.std(z, -1, correction=3),
    "std_correction_past_n": lambda z: torch.std(z, -1, correction=5),  # divisor clamped at 0: inf, NaN
    "var_mean": lambda z: torch.var_mean(z, 1, correction=0, keepdim=True),
    "var_mean_all": lambda z: torch.var_mean(z),
    "std_mean": lambda z: torch.std_mean(z, dim=0),
    "std_mean_mean_only": lambda z: torch.std_mean(z, -1, correction=2)[1] * 2,
    "zero_": lambda z: (z * 2).zero_() + z,
}


# Every case in complex64, a representative few in complex128 too (same code paths).
LAYOUT_CASES = [(name, torch.complex64) for name in LAYOUT] + [
    (name, torch.complex128) for name in ("tril", "roll_flat", "hstack_1d", "diag_embed", "var", "std", "std_mean")
]


@pytest.mark.parametrize("name,dtype", LAYOUT_CASES, ids=[f"{n}-{str(d)[-9:]}" for n, d in LAYOUT_CASES])
def test_layout_and_variance_are_eagers_bits(name, dtype):
    fn = LAYOUT[name]
    z = _edge(6, 4, dtype=dtype)
    if name.startswith(("var", "std")):
        z = torch.randn(6, 4, dtype=dtype) * 30 + 2  # eager's var of NaN rows: NaN either way
        z[2] = complex(-0.0, 0.0)  # an exactly zero variance
    expected = fn(z.clone())
    for form, actual in _rewritten_outputs(fn, z):
        _assert_bitwise(actual, expected)


def test_trace_sums_in_double_like_eager():
    z = torch.randn(300, 300, dtype=torch.complex64) * 1e4
    expected = torch.trace(z)
    for form, actual in _rewritten_outputs(torch.trace, z):
        # Eager's float64 accumulation rounded once (a float32 sum is off in the last bits).
        _assert_bitwise(actual, expected)
    z128 = torch.randn(5, 7, dtype=torch.complex128)
    for form, actual in _rewritten_outputs(lambda z: z.trace(), z128):
        torch.testing.assert_close(actual, z128.trace(), rtol=1e-14, atol=1e-14)


PRODUCTS = {
    "addmm": lambda i, a, b: torch.addmm(i, a, b),
    "addmm_complex_scalars": lambda i, a, b: torch.addmm(i[0], a, b, beta=2 - 1j, alpha=0.5j),
    "addmm_real_scalars": lambda i, a, b: torch.addmm(i[:, :1], a, b, beta=-0.5, alpha=3),
    "addmm_beta0_ignores_nan": lambda i, a, b: torch.addmm(i.masked_fill(i.real > 0, nan), a, b, beta=0),
    "baddbmm": lambda i, a, b: torch.baddbmm(i, a.expand(3, 4, 5), b.expand(3, 5, 2) * 1j, alpha=1 + 1j),
    "addbmm": lambda i, a, b: torch.addbmm(i, torch.stack((a, a * 2)), torch.stack((b, b.conj())), beta=0.25),
    "addmv": lambda i, a, b: torch.addmv(i[:, 0], a, b[:, 1], beta=1j),
    "pow_": lambda i, a, b: (a * 1).pow_(2),
    "pow_complex_exponent": lambda i, a, b: (a * 1).pow_(0.5 + 1j),
    "pow_tensor_exponent": lambda i, a, b: (i * 1).pow_(i.real),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_and_pow_match_eager(name):
    fn = PRODUCTS[name]
    i, a, b = (torch.randn(*s, dtype=torch.complex64) for s in ((4, 2), (4, 5), (5, 2)))
    expected = fn(i, a, b)
    for form, actual in _rewritten_outputs(fn, i, a, b):
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)


def test_writes_land_in_the_callers_tensor():
    # The pair tensor views the input's storage, so in-place writes reach it.
    def fn(z, w):
        z.zero_()
        w[1:].zero_()
        w.pow_(2)
        return z + w

    z, w = _edge(3, 4), _edge(3, 4)
    z_eager, w_eager = z.clone(), w.clone()
    expected = fn(z_eager, w_eager)
    for form, capture in (("dynamo", dynamo_graph), ("aten", aten_graph)):
        gm = capture(fn, z.clone(), w.clone())
        report = run_pass(gm)
        assert report.count("bridged") + report.count("kept") == 0, report.format()
        z_rewritten, w_rewritten = z.clone(), w.clone()
        actual = gm(z_rewritten, w_rewritten)
        actual = actual[0] if form == "dynamo" else actual
        torch.testing.assert_close(actual, expected, equal_nan=True)
        _assert_bitwise(z_rewritten, z_eager)
        torch.testing.assert_close(w_rewritten, w_eager, equal_nan=True)


def _gradients_match(fn, *args):
    """Input gradients of a real loss through the rewritten Dynamo graph vs eager (complex128)."""
    captured = [a.clone().requires_grad_() for a in args]
    gm = dynamo_graph(fn, *captured)
    report = run_pass(gm)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    eager_args = [a.clone().requires_grad_() for a in args]
    rewritten_args = [a.clone().requires_grad_() for a in args]
    expected = fn(*eager_args)
    (actual,) = gm(*_graph_inputs(gm, captured, rewritten_args, "dynamo"))
    seed = torch.randn_like(expected)
    for out, inputs in ((expected, eager_args), (actual, rewritten_args)):
        loss = (torch.view_as_real(out) * torch.view_as_real(seed)).sum() if out.is_complex() else (out * seed).sum()
        loss.backward()
    for got, want in zip(rewritten_args, eager_args):
        assert got.grad is not None and want.grad is not None
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-10, atol=1e-10)


GRADIENTS = {
    "triu": lambda z, w: torch.triu(z, 1) * w[:1],
    "roll_fftshift": lambda z, w: torch.fft.fftshift(torch.roll(z, 2) * w[:1], dim=0),
    "stacks": lambda z, w: torch.hstack([torch.vstack([z, w]), torch.column_stack([w[0], z[1], z[2], w[1], z[0]]).mT]),
    "diagonal_diag_embed_trace": lambda z, w: torch.diag_embed(torch.diagonal(z)) * torch.trace(w[:, :2]),
    "var": lambda z, w: torch.var(z, 0) * w[0].abs(),
    "std_with_zero_variance": lambda z, w: torch.std(torch.cat([z, w[:, :1].expand(2, 4)]), 1, correction=0),
    "var_mean": lambda z, w: torch.var_mean(z, 0)[0] * torch.var_mean(w, 0)[1],
    "std_mean_with_zero_std": lambda z, w: torch.std_mean(torch.cat([z, w[:, :1].expand(2, 4)]), 1, correction=0)[0]
    + torch.std_mean(z, 1)[1].sum(),
    "addmm_beta0": lambda z, w: torch.addmm(w[0, :2].masked_fill(w[0, :2].real > 0, nan), z, w.mT, beta=0, alpha=2j),
    "addbmm_baddbmm": lambda z, w: torch.addbmm(z[0, :2], torch.stack([z[:2], w]), torch.stack([w, z[1:]]).mT, beta=1j)
    + torch.baddbmm(z[:2, :1], z[None, :2], w.mT[None], alpha=-1).sum(0),
    "addmv": lambda z, w: torch.addmv(z[:, 0], z, w[0], beta=0.5 - 2j, alpha=3),
}


@pytest.mark.parametrize("name", list(GRADIENTS))
def test_gradients_match_eager(name):
    z, w = torch.randn(3, 4, dtype=torch.complex128), torch.randn(2, 4, dtype=torch.complex128)
    _gradients_match(GRADIENTS[name], z, w)


def test_refusals_keep_eager_results():
    def fn(z, a, b):
        return torch.addmm(z[:, :2], a, b, alpha=0), torch.flip(z[0, 0], [0])

    z, a, b = torch.randn(3, 4, dtype=torch.complex64), torch.randn(3, 5, dtype=torch.complex64), torch.randn(5, 2)
    b = b.to(torch.complex64).masked_fill(b > 0, nan)  # alpha=0: eager never reads the product
    expected = fn(z, a, b)
    gm = dynamo_graph(fn, z, a, b)
    report = run_pass(gm)
    reasons = " ".join(d.reason for d in report.decisions)
    assert "alpha=0" in reasons and "0-d complex" in reasons, report.format()
    for got, want in zip(gm(z, a, b), expected):
        torch.testing.assert_close(got, want, equal_nan=True)


def test_compiled_chain_forward_backward():
    def fn(x, w, i):
        z = torch.view_as_complex(x)
        y = torch.tril(z) + torch.roll(z.flip(0), 1, 1) * torch.fft.ifftshift(w)
        y = torch.vstack([y, w]).mT
        y = torch.addmm(i, y, torch.diag_embed(w), beta=0.5, alpha=1j).triu()
        y[0].zero_()  # in-place writes on an intermediate
        y.pow_(2)
        return torch.view_as_real(y), torch.std(y, 0) + torch.var(z).mul(torch.trace(y[:4, :4]).abs())

    x, w, i = torch.randn(3, 4, 2), torch.randn(4, dtype=torch.complex64), torch.randn(4, 4, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, x, w, i, atol=1e-4, rtol=1e-4)
    assert report.count("bridged") + report.count("kept") == 0, report.format()
    assert fallbacks.beyond_edges == []


class TestDumps(expecttest.TestCase):
    def test_tril_and_var_dump(self):
        # tril moves the pair dim out of the matrix dims; var is var(re) + var(im).
        def fn(z):
            return torch.tril(z), torch.var(z, dim=0)

        z = torch.randn(2, 2, dtype=torch.complex64)
        gm = dynamo_graph(fn, z)
        run_pass(gm)
        _assert_bitwise(gm(z), fn(z))
        self.assertExpectedInline(normalize_graph(gm), """\
class GraphModule(torch.nn.Module):
    def forward(self, L_z_: "c64[2, 2]"):
        l_z_ = L_z_
        view_as_real: "f32[2, 2, 2]" = torch.view_as_real(l_z_);  l_z_ = None
        movedim: "f32[2, 2, 2]" = view_as_real.movedim(-1, 0)
        tril_1: "f32[2, 2, 2]" = torch.tril(movedim, 0);  movedim = None
        movedim_1: "f32[2, 2, 2]" = tril_1.movedim(0, -1);  tril_1 = None
        contiguous: "f32[2, 2, 2]" = movedim_1.contiguous();  movedim_1 = None
        getitem: "f32[2, 2]" = view_as_real[(Ellipsis, 0)]
        var_1: "f32[2]" = torch.var(getitem, dim = 0);  getitem = None
        getitem_1: "f32[2, 2]" = view_as_real[(Ellipsis, 1)];  view_as_real = None
        var_2: "f32[2]" = torch.var(getitem_1, dim = 0);  getitem_1 = None
        add: "f32[2]" = var_1 + var_2;  var_1 = var_2 = None
        select: "f32[2, 2]" = torch.select(contiguous, -1, 0)
        select_1: "f32[2, 2]" = torch.select(contiguous, -1, 1);  contiguous = None
        complex_1: "c64[2, 2]" = torch.complex(select, select_1);  select = select_1 = None
        return (complex_1, add)""")


@pytest.mark.parametrize(
    "mode, pad, shape",
    [("reflect", (2, 1), (2, 3, 5)), ("reflect", (2, 1), (3, 5)), ("replicate", (1, 2, 2, 0), (2, 3, 4, 5)),
     ("circular", (2, 3), (2, 3, 5)), ("reflect", (1, 1, 1, 0, 0, 1), (1, 2, 3, 4, 5)), ("constant", (-1, 2), (2, 5))],
    ids=["reflect1d", "reflect1d_unbatched", "replicate2d", "circular1d", "reflect3d", "negative_crop"],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_pad_modes_copy_whole_elements(mode, pad, shape, dynamic):
    def fn(z):
        return torch.nn.functional.pad(z, pad, mode=mode)

    z = torch.randn(*shape, dtype=torch.complex64)
    report, fallbacks = compile_and_compare(fn, z, dynamic=dynamic)
    assert report.count("rewritten") == 1 and not report.count("kept"), report.format()
    assert fallbacks.beyond_edges == [], fallbacks.ops
    if not dynamic:
        exported = aten_graph(fn, z)
        aten_report = run_pass(exported)
        assert not aten_report.count("kept") and not aten_report.count("bridged"), aten_report.format()
        assert_close(exported(z), fn(z))


@pytest.mark.parametrize("op, eager", [(torch.ops.aten.numpy_T.default, lambda z: z.T),
                                       (torch.ops.aten.matrix_H.default, lambda z: z.H)], ids=["numpy_T", "matrix_H"])
def test_aten_spellings_of_T_and_H(op, eager):
    # torch >= 2.14 records Tensor.T and Tensor.H as these aten ops; an aten
    # graph holding them is built by hand here (2.13 records permute).
    from torch._subclasses.fake_tensor import FakeTensorMode

    z = torch.randn(3, 4, dtype=torch.complex64)
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(op, (x,))
    product = graph.call_function(torch.ops.aten.mul.Tensor, (y, y))
    graph.output((product,))
    mode = FakeTensorMode()
    with mode:
        x.meta["val"] = mode.from_tensor(z)
        y.meta["val"] = op(x.meta["val"])
        product.meta["val"] = y.meta["val"] * y.meta["val"]
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    report = run_pass(gm)
    assert not report.count("kept") and not report.count("bridged"), report.format()
    (got,) = gm(z)
    assert_close(got, eager(z) * eager(z))
