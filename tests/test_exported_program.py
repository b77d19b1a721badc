"""rewrite_exported_program: exported programs with no complex value inside,
valid, saved and loaded, with eager's numbers, in Core ATen."""

from __future__ import annotations

import io
import math

import pytest
import torch
from complex_testing import assert_close
from exported_models import models

from inductor_complex import real_signature, rewrite_exported_program
from inductor_complex.core_aten import core_aten_decompositions

MODELS = models()
# What torch.export itself emits outside Core ATen (ExecuTorch removes it).
EXPORTS_OWN = {torch.ops.aten._assert_tensor_metadata.default}


def _exported(name):
    module, args, dynamic_shapes = MODELS[name]
    return module, args, torch.export.export(module, args, dynamic_shapes=dynamic_shapes)


def _saved_and_loaded(ep):
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    buffer.seek(0)
    return torch.export.load(buffer)


def _complex_values(ep) -> list[str]:
    return [n.name for n in ep.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].is_complex()]


def _outside_core_aten(ep) -> set:
    return {
        n.target for n in ep.graph.nodes
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
        and torch.Tag.core not in n.target.tags and n.target not in EXPORTS_OWN
    }


def _longer(args, name):
    """The example inputs with their dynamic length changed (the program must follow)."""
    module, _, dynamic_shapes = MODELS[name]
    if dynamic_shapes is None:
        return args
    grown = []
    for arg, dims in zip(args, dynamic_shapes):
        shape = list(arg.shape)
        for d in dims:
            shape[d] += 3
        grown.append(torch.randn(shape, dtype=arg.dtype))
    return tuple(grown)


@pytest.mark.parametrize("signature", ["keep", "real"])
@pytest.mark.parametrize("name", list(MODELS))
def test_rewritten_program_is_valid_saves_and_gives_eagers_numbers(name, signature):
    module, args, ep = _exported(name)
    rewritten = rewrite_exported_program(ep, signature=signature)
    rewritten.validate()
    loaded = _saved_and_loaded(rewritten)
    real = real_signature(rewritten)
    for inputs in (args, _longer(args, name)):
        expected = module(*inputs)
        given = [torch.view_as_real(t) if i in real["inputs"] else t for i, t in enumerate(inputs)]
        if real["outputs"]:
            expected = torch.view_as_real(expected)
        assert_close(loaded.module()(*given), expected, rtol=1e-5, atol=1e-5)
    # Nothing outside Core ATen that the program did not hold itself (istft's own
    # decomposition keeps `unfold`, which ExecuTorch and onnxruntime run).
    stocks_own = _outside_core_aten(ep.run_decompositions(core_aten_decompositions()))
    stocks_own -= {torch.ops.aten.view_as_complex.default, torch.ops.aten.view_as_real.default, torch.ops.aten.polar.default}
    assert not _outside_core_aten(rewritten) - stocks_own - {torch.ops.aten.view_as_complex.default, torch.ops.aten.view_as_real.default}
    if signature == "real" or not any(t.is_complex() for t in args):
        assert not _complex_values(rewritten)
        assert not _outside_core_aten(rewritten) - stocks_own
    assert not any(v.is_complex() for v in [*rewritten.state_dict.values(), *rewritten.constants.values()])


def test_stock_program_is_complex_and_outside_core_aten():
    # What the rewrite buys: the same export, without it.
    _, _, ep = _exported("llama_rope")
    stock = ep.run_decompositions()
    assert _complex_values(stock)
    assert torch.ops.aten.view_as_complex.default in _outside_core_aten(stock)
    assert stock.state_dict["freqs_cis"].is_complex()


def test_complex_user_inputs_and_outputs_keep_their_dtype():
    module, (z,), ep = _exported("complex_in_out")
    rewritten = rewrite_exported_program(ep)
    out = rewritten.module()(z)
    assert out.dtype == torch.complex64
    assert_close(out, module(z), rtol=1e-5, atol=1e-5)
    # The complex values left are the input and output, through views only.
    view_ops = {torch.ops.aten.view_as_real.default, torch.ops.aten.view_as_complex.default}
    for node in rewritten.graph.nodes:
        if node.op == "call_function" and node.name in _complex_values(rewritten):
            assert node.target in view_ops, node.format_node()


def test_real_signature_records_what_it_made_real():
    _, _, ep = _exported("complex_in_out")
    rewritten = rewrite_exported_program(ep, signature="real")
    assert real_signature(rewritten) == {"inputs": [0], "outputs": [0]}
    assert real_signature(_saved_and_loaded(rewritten)) == {"inputs": [0], "outputs": [0]}  # torch.export.save keeps it
    assert real_signature(ep) == {"inputs": [], "outputs": []}
    placeholder = [n for n in rewritten.graph.nodes if n.op == "placeholder"][-1]
    assert placeholder.meta["val"].shape[-1] == 2 and placeholder.meta["val"].dtype == torch.float32


def _with_a_second_placeholder_for(ep, name: str):
    """``ep`` with one read of buffer placeholder ``name`` moved to a second
    placeholder of the same buffer, as partitioners make them."""
    from torch.export.graph_signature import ExportGraphSignature, InputSpec, TensorArgument

    graph = ep.graph_module.graph
    first = next(n for n in graph.find_nodes(op="placeholder") if n.name == name)
    with graph.inserting_after(first):
        second = graph.placeholder(f"{name}_again")
    second.meta = dict(first.meta)
    list(first.users)[-1].replace_input_with(first, second)
    ep.graph_module.recompile()
    specs = []
    for spec in ep.graph_signature.input_specs:
        specs.append(spec)
        if spec.arg.name == name:
            specs.append(InputSpec(kind=spec.kind, arg=TensorArgument(name=second.name), target=spec.target, persistent=spec.persistent))
    return ep._update(ep.graph_module, ExportGraphSignature(input_specs=specs, output_specs=list(ep.graph_signature.output_specs)))


def test_buffer_with_several_placeholders_is_converted_once():
    module, args, ep = _exported("llama_rope")
    twice = _with_a_second_placeholder_for(ep, "b_freqs_cis")
    buffers = [s for s in twice.graph_signature.input_specs if s.target == "freqs_cis"]
    assert len(buffers) == 2 and all(len(n.users) == 1 for n in twice.graph.find_nodes(op="placeholder") if n.name.startswith("b_freqs"))
    rewritten = rewrite_exported_program(twice)
    assert rewritten.state_dict["freqs_cis"].shape == (*module.freqs_cis.shape, 2)
    assert_close(torch.view_as_complex(rewritten.state_dict["freqs_cis"]), module.freqs_cis)
    assert not _complex_values(rewritten)
    for x in (*args, torch.randn(2, 9, 16)):
        assert_close(_saved_and_loaded(rewritten).module()(x), module(x), rtol=1e-5, atol=1e-5)


def test_the_callers_program_is_left_as_it_was():
    _, args, ep = _exported("llama_rope")
    before = ep.graph_module.code
    rewrite_exported_program(ep)
    assert ep.graph_module.code == before
    assert ep.state_dict["freqs_cis"].is_complex()


def test_bad_arguments_are_named():
    _, _, ep = _exported("complex_mlp")
    with pytest.raises(TypeError, match="ExportedProgram"):
        rewrite_exported_program(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="signature"):
        rewrite_exported_program(ep, signature="complex")
    with pytest.raises(TypeError, match="fused_rotary"):
        rewrite_exported_program(ep, fused_rotary=0)
    with pytest.raises(TypeError, match="complex128_as_float32"):
        rewrite_exported_program(ep, complex128_as_float32="yes")


# ------------------------------------------------------- Core ATen forms


def _decomposed(op):
    return core_aten_decompositions()[op]


def test_hypot_form_neither_overflows_nor_underflows_and_is_inf_at_inf():
    x = torch.tensor([3.0, 1e30, 1e-30, 0.0, -0.0, math.inf, math.inf, -math.inf, math.nan, 5.0, 1e38])
    y = torch.tensor([4.0, 1e30, 1e-30, 0.0, 2.0, math.nan, 1.0, math.nan, 1.0, -12.0, 1e38])
    got, expected = _decomposed(torch.ops.aten.hypot.default)(x, y), torch.hypot(x, y)
    torch.testing.assert_close(got, expected, equal_nan=True, rtol=2e-7, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_signbit_and_copysign_forms_are_exact_at_signed_zeros(dtype):
    x = torch.tensor([1.0, -2.0, 0.0, -0.0, math.inf, -math.inf, 3.0], dtype=dtype)
    sign = torch.tensor([-0.0, 0.0, -1.0, 5.0, -0.0, 2.0, -math.inf], dtype=dtype)
    assert torch.equal(_decomposed(torch.ops.aten.signbit.default)(sign), torch.signbit(sign))
    got, expected = _decomposed(torch.ops.aten.copysign.Tensor)(x, sign), torch.copysign(x, sign)
    assert torch.equal(got, expected) and torch.equal(torch.signbit(got), torch.signbit(expected))


@pytest.mark.parametrize("shape, offset, dim1, dim2", [
    ((3, 4), 0, 0, 1), ((3, 4), 2, 0, 1), ((4, 3), -1, 0, 1), ((2, 3, 5), 1, 2, 0),
    ((2, 3, 5), -2, -1, -2), ((3, 2), 5, 0, 1),  # an empty diagonal
])
def test_diagonal_scatter_form_is_exact(shape, offset, dim1, dim2):
    x = torch.randn(shape)
    x[(0,) * x.ndim] = math.nan
    src = torch.randn(torch.diagonal(x, offset, dim1, dim2).shape)
    got = _decomposed(torch.ops.aten.diagonal_scatter.default)(x, src, offset, dim1, dim2)
    expected = torch.diagonal_scatter(x, src, offset, dim1, dim2)
    assert torch.equal(got.isnan(), expected.isnan()) and torch.equal(got.nan_to_num(), expected.nan_to_num())


@pytest.mark.parametrize("dim, keepdim", [(None, False), ([1], False), ([0, 2], True)])
def test_var_mean_form_is_var_and_mean(dim, keepdim):
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    var, mean = _decomposed(torch.ops.aten.var_mean.correction)(x, dim, correction=2, keepdim=keepdim)
    expected = torch.var_mean(x, dim, correction=2, keepdim=keepdim)
    torch.testing.assert_close(var, expected[0])
    torch.testing.assert_close(mean, expected[1])


def test_complex128_as_float32_leaves_no_double_and_warns():
    module, args, ep = _exported("polar_in_forward_c128")
    with pytest.warns(UserWarning, match="computed in float32"):
        rewritten = rewrite_exported_program(ep, complex128_as_float32=True)
    rewritten.validate()
    dtypes = {n.meta["val"].dtype for n in rewritten.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    # Floating point is float32 only; the product's pair-index mask (int32 iota, bool) is not data.
    assert {d for d in dtypes if d.is_floating_point or d.is_complex} == {torch.float32}, dtypes
    assert dtypes <= {torch.float32, torch.int32, torch.int64, torch.bool}, dtypes
    for inputs in (args, _longer(args, "polar_in_forward_c128")):
        assert_close(_saved_and_loaded(rewritten).module()(*inputs), module(*inputs), rtol=1e-5, atol=1e-5)
    # Off by default: the program still computes in double.
    doubles = rewrite_exported_program(ep)
    assert torch.float64 in {n.meta["val"].dtype for n in doubles.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}


def test_complex128_weights_and_inputs_become_single():
    class Complex128(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(4, dtype=torch.complex128))

        def forward(self, z):
            return z * self.table

    module, z = Complex128(), torch.randn(3, 4, dtype=torch.complex128)
    with pytest.warns(UserWarning, match="float32"):
        rewritten = rewrite_exported_program(torch.export.export(module, (z,)), signature="real", complex128_as_float32=True)
    assert rewritten.state_dict["table"].dtype == torch.float32
    got = rewritten.module()(torch.view_as_real(z).float())
    assert got.dtype == torch.float32
    assert_close(got, torch.view_as_real(module(z)).float(), rtol=1e-5, atol=1e-5)


def test_complex_input_to_a_real_signature_module_is_named():
    _, (z,), ep = _exported("complex_in_out")
    module = rewrite_exported_program(ep, signature="real").module()
    with pytest.raises(TypeError, match=r"input 0 \('z'\) is a torch.complex64 tensor of shape \(4, 6\).*float32.*view_as_real"):
        module(z)
    with pytest.raises(TypeError, match=r"input 0 \('z'\) is a torch.float64 tensor"):
        module(torch.view_as_real(z).double())
    assert_close(module(torch.view_as_real(z)), torch.view_as_real(MODELS["complex_in_out"][0](z)), rtol=1e-5, atol=1e-5)


def test_rewrite_of_a_program_it_cannot_make_valid_returns_it_unrewritten(monkeypatch):
    # A valid program in, a valid program out: had the rewrite left an in-place
    # write (its functional spelling failing), the program comes back as it was, with a warning.
    import inductor_complex.exported as exported

    monkeypatch.setattr(exported, "functionalize_fresh_writes", lambda graph: [])
    options = exported.ExportedProgramPass._rewriter_options  # (eager's strides by empty_strided and copy_)
    monkeypatch.setattr(exported.ExportedProgramPass, "_rewriter_options",
                        lambda self, graph: {**options(self, graph), "portable_forms": False})
    module, args, ep = _exported("llama4_rope")
    with pytest.warns(UserWarning, match="not a valid exported program.*unrewritten"):
        program = rewrite_exported_program(ep, signature="real")
    program.validate()
    assert_close(program.module()(*args), module(*args), rtol=1e-5, atol=1e-5)
