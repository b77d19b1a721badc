"""Exported programs with nothing complex inside, for runtimes that hold no
complex tensor (ExecuTorch, ONNX Runtime, AOTInductor packages).

``rewrite_exported_program(ep)`` runs the pass on the program's Core ATen
graph, traces the rules' torch-level calls into Core ATen ops, and stores
complex parameters, buffers and constants as their real ``[..., 2]`` form
(``torch.view_as_real``'s layout) under the same names. The graph reads each
one through ``view_as_complex``, which the pass then turns into the pair
itself, so no complex value is left. With ``signature="real"`` complex user
inputs and outputs become real ``[..., 2]`` tensors the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import warnings

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import ExportGraphSignature, InputKind, InputSpec, OutputKind, TensorArgument

from .complex_to_real_pass import ComplexToRealPass
from .core_aten import core_aten_decompositions
from .functional_writes import functionalize_fresh_writes
from .real_inputs import with_input_checks
from .values import fake_value

log = logging.getLogger(__name__)

Node = torch.fx.Node

SIGNATURES = ("keep", "real")
_STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
# What ``signature="real"`` made real, kept in graph_module.meta["custom"]:
# the one part of a graph module's metadata that torch.export.save writes.
REAL_SIGNATURE_KEY = "inductor_complex_real_signature"


class ExportedProgramPass(ComplexToRealPass):
    """The pass for an exported program's graph: its own nodes traced into Core ATen."""

    lowers_to_aten = True

    def __init__(self, *, fused_rotary: bool = False, real_ffts: bool = True):
        super().__init__(fused_rotary=fused_rotary, complex_blas_on_cpu=False,  # no runtime of theirs runs complex
                         real_ffts=real_ffts)
        self.post_grad = None

    def _rewriter_options(self, graph: torch.fx.Graph) -> dict:
        return {**super()._rewriter_options(graph), "portable_forms": True}

    def aten_decompositions(self) -> dict:
        return core_aten_decompositions()


def rewrite_exported_program(ep: ExportedProgram, *, signature: str = "keep", fused_rotary: bool = False,
                             complex128_as_float32: bool = False, real_ffts: bool | None = None) -> ExportedProgram:
    """A new program computing what ``ep`` computes, with no complex value inside.

    ``signature="keep"``: complex user inputs and outputs keep their dtype
    (read and returned through views). ``"real"``: they become real
    ``[..., 2]`` tensors; :func:`real_signature` of the result lists which
    (``{"inputs": [...], "outputs": [...]}``, user positions), also after
    ``torch.export.save`` and ``load``.
    ``complex128_as_float32``: every complex128 and float64 value, input,
    output and weight becomes complex64/float32 (for runtimes without
    doubles, as Torch-TensorRT's ``truncate_double``), with a warning.
    ``real_ffts``: FFTs (every ``torch.fft`` function, ``stft``, ``istft``) as
    products with real DFT bases, held as constants of the program, for
    runtimes without an FFT on real pairs (ExecuTorch, TensorRT). ``None``
    (default): each FFT whose bases fit ``rules.dft_bases.MAX_BASIS_ELEMENTS``
    (bases grow as n^2: up to length 2048 complex, 4095 real), longer ones
    stay FFTs with a warning; ``True``: every one, else :class:`ValueError`
    naming it; ``False``: none (a runtime with FFT kernels on complex tensors).
    Ops the pass cannot rewrite exactly stay complex, with a warning naming them.
    """
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"rewrite_exported_program takes a torch.export.ExportedProgram, got {type(ep).__name__}")
    if signature not in SIGNATURES:
        raise ValueError(f"signature must be one of {SIGNATURES}, got {signature!r}")
    for option, value in (("fused_rotary", fused_rotary), ("complex128_as_float32", complex128_as_float32)):
        if not isinstance(value, bool):
            raise TypeError(f"{option} must be True or False, got {value!r}")
    if real_ffts is not None and not isinstance(real_ffts, bool):
        raise TypeError(f"real_ffts must be None, True or False, got {real_ffts!r}")
    program = ep.run_decompositions()  # a program of its own, in Core ATen
    graph = program.graph_module.graph
    state_dict, constants = dict(program.state_dict), dict(program.constants)
    real_inputs = _real_placeholders(program, graph, state_dict, constants, signature)
    real_outputs = _real_outputs(program, graph, signature)
    graph_pass = ExportedProgramPass(fused_rotary=fused_rotary, real_ffts=real_ffts is not False)
    graph_pass(graph)
    kept = [d for d in graph_pass.last_report.decisions if d.action in ("kept", "bridged")]
    if real_ffts:
        _require_real_ffts(kept)
    writes_left = functionalize_fresh_writes(graph)
    _int64_indices(graph)
    graph.eliminate_dead_code()
    input_specs = _lifted_constants(program.graph_module, program.graph_signature.input_specs, constants)
    program.graph_module.recompile()
    if complex128_as_float32:
        warnings.warn(
            "rewrite_exported_program(complex128_as_float32=True): complex128 and float64 values are computed "
            "in float32 (about 7 significant digits instead of 16, magnitudes up to 3e38 instead of 1e308)",
            stacklevel=2)
        _truncate_doubles(graph, state_dict, constants)
    signature_after = _renamed_outputs(ExportGraphSignature(input_specs, program.graph_signature.output_specs), graph)
    try:
        rewritten = program._update(program.graph_module, signature_after, state_dict=state_dict, constants=constants)
        rewritten = rewritten.run_decompositions(core_aten_decompositions())  # what the rules emit outside Core ATen
    except Exception as error:  # a valid program in, a valid program out
        left = ", ".join(sorted({str(n.target) for n in writes_left})) or "none"
        warnings.warn(
            f"inductor_complex: the rewritten program is not a valid exported program ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}; in-place writes left: {left}); "
            "returning the program unrewritten, its complex ops kept", stacklevel=2)
        return ep.run_decompositions(core_aten_decompositions())
    custom = rewritten.graph_module.meta.setdefault("custom", {})
    custom[REAL_SIGNATURE_KEY] = {"inputs": real_inputs, "outputs": real_outputs}
    rewritten = with_input_checks(rewritten, real_inputs)
    if kept:
        log.warning("inductor_complex: %d ops stay complex in the exported program: %s",
                    len(kept), "; ".join(f"{d.op} ({d.reason})" for d in kept))
    return rewritten


_FFTS = ("_fft_r2c", "_fft_c2c", "_fft_c2r")
_INDEXING = (torch.ops.aten.index_put.default, torch.ops.aten.index.Tensor)


def _int64_indices(graph: torch.fx.Graph) -> None:
    """int32 index tensors of ``index_put``/``index`` read as int64: the same
    elements, and ONNX's ScatterND and GatherND take int64 only (torch.onnx
    passes int32 on, and onnxruntime refuses the model). ``istft``'s overlap-add
    indexes with an int32 ``arange``."""
    for node in [n for op in _INDEXING for n in graph.find_nodes(op="call_function", target=op)]:
        indices = list(node.args[1])
        for i, index in enumerate(indices):
            value = fake_value(index)
            if isinstance(value, torch.Tensor) and value.dtype == torch.int32:
                with graph.inserting_before(node):
                    indices[i] = graph.call_function(torch.ops.aten._to_copy.default, (index,), {"dtype": torch.int64})
                with value.fake_mode:
                    indices[i].meta["val"] = value.to(torch.int64)
        node.args = (node.args[0], indices, *node.args[2:])


def _require_real_ffts(kept) -> None:
    ffts = [d for d in kept if any(name in d.op for name in _FFTS)]
    if ffts:
        raise ValueError("rewrite_exported_program(real_ffts=True): these FFTs stay complex: "
                         + "; ".join(f"{d.op} ({d.reason})" for d in ffts)
                         + ". real_ffts=None keeps them as FFT kernels with a warning")


def _lifted_constants(module: torch.fx.GraphModule, input_specs, constants: dict) -> list:
    """Tensors the rules made attributes of the module (DFT bases) as the
    program's constants: one placeholder of kind CONSTANT_TENSOR each, before
    the user inputs, as torch.export lifts a module's own tensor constants."""
    graph = module.graph
    specs = list(input_specs)
    reads: dict[str, list[Node]] = {}
    for node in graph.find_nodes(op="get_attr"):
        if isinstance(getattr(module, node.target, None), torch.Tensor):
            reads.setdefault(node.target, []).append(node)
    at = next((i for i, spec in enumerate(specs) if spec.kind == InputKind.USER_INPUT), len(specs))
    for name, nodes in reads.items():
        placeholders = graph.find_nodes(op="placeholder")
        with graph.inserting_before(placeholders[at]) if at < len(placeholders) else graph.inserting_after(
                placeholders[-1] if placeholders else None):
            placeholder = graph.placeholder(f"c{name}")
        placeholder.meta = dict(nodes[0].meta)
        for node in nodes:
            node.replace_all_uses_with(placeholder)
            graph.erase_node(node)
        constants[name] = getattr(module, name)
        delattr(module, name)
        specs.insert(at, InputSpec(kind=InputKind.CONSTANT_TENSOR, arg=TensorArgument(name=placeholder.name), target=name))
        at += 1
    return specs


def real_signature(program: ExportedProgram) -> dict[str, list[int]]:
    """The user inputs and outputs (by position) that :func:`rewrite_exported_program`
    made real ``[..., 2]`` tensors; empty lists for a program it did not rewrite."""
    if not isinstance(program, ExportedProgram):
        raise TypeError(f"real_signature takes a torch.export.ExportedProgram, got {type(program).__name__}")
    recorded = program.graph_module.meta.get("custom", {}).get(REAL_SIGNATURE_KEY)
    return {"inputs": list(recorded["inputs"]), "outputs": list(recorded["outputs"])} if recorded \
        else {"inputs": [], "outputs": []}


def _real_placeholders(program, graph, state_dict, constants, signature) -> list[int]:
    """Complex state (and, for ``"real"``, complex user inputs) made real
    placeholders read through ``view_as_complex``; returns the user inputs made real."""
    placeholders = graph.find_nodes(op="placeholder")
    made_real: dict[str, torch.Tensor] = {}  # state name → its real form (one buffer may have several placeholders)
    real_inputs, user_index = [], 0
    for spec, node in zip(program.graph_signature.input_specs, placeholders):
        value = fake_value(node)
        is_complex = isinstance(value, torch.Tensor) and value.is_complex()
        if spec.kind in _STATE_KINDS and is_complex:
            store = state_dict if spec.target in state_dict else constants
            if spec.target not in made_real:
                made_real[spec.target] = _real_state(store[spec.target])
                store[spec.target] = made_real[spec.target]
            _read_as_complex(graph, node)
        elif spec.kind == InputKind.USER_INPUT:
            if signature == "real" and is_complex:
                _read_as_complex(graph, node)
                real_inputs.append(user_index)
            user_index += 1
    return real_inputs


def _real_state(value: torch.Tensor) -> torch.Tensor:
    real = torch.view_as_real(value.detach().resolve_conj().resolve_neg()).clone()
    if isinstance(value, torch.nn.Parameter):
        return torch.nn.Parameter(real, requires_grad=value.requires_grad)
    return real


def _read_as_complex(graph: torch.fx.Graph, placeholder: Node) -> None:
    """``placeholder`` holds the real form from now on; its users read a complex view of it."""
    complex_value = fake_value(placeholder)
    with complex_value.fake_mode:
        real_value = torch.view_as_real(complex_value.resolve_conj().resolve_neg())
        placeholder.meta["val"] = real_value
        with graph.inserting_after(graph.find_nodes(op="placeholder")[-1]):
            view = graph.call_function(torch.ops.aten.view_as_complex.default, (placeholder,))
        view.meta["val"] = torch.view_as_complex(real_value)
    placeholder.meta.pop("tensor_meta", None)
    placeholder.replace_all_uses_with(view, delete_user_cb=lambda user: user is not view)


def _real_outputs(program, graph, signature) -> list[int]:
    """Complex values the graph hands back as state updates (and, for
    ``"real"``, as user outputs) returned as their real form; returns the user outputs made real."""
    output = graph.find_nodes(op="output")[0]
    values = list(output.args[0])
    real_outputs, user_index = [], 0
    for i, (spec, value) in enumerate(zip(program.graph_signature.output_specs, values)):
        user = spec.kind == OutputKind.USER_OUTPUT
        is_complex = isinstance(value, Node) and isinstance(fake_value(value), torch.Tensor) and fake_value(value).is_complex()
        if is_complex and (spec.kind == OutputKind.BUFFER_MUTATION or (user and signature == "real")):
            with graph.inserting_before(output):
                values[i] = graph.call_function(torch.ops.aten.view_as_real.default, (value,))
            with fake_value(value).fake_mode:
                values[i].meta["val"] = torch.view_as_real(fake_value(value).resolve_conj().resolve_neg())
            if user:
                real_outputs.append(user_index)
        user_index += user
    output.args = (tuple(values),)
    return real_outputs


def _renamed_outputs(signature: ExportGraphSignature, graph: torch.fx.Graph) -> ExportGraphSignature:
    """The signature with each output spec naming the node the graph now returns."""
    returned = graph.find_nodes(op="output")[0].args[0]
    specs = [
        dataclasses.replace(spec, arg=TensorArgument(name=value.name))
        if isinstance(spec.arg, TensorArgument) and isinstance(value, Node) else spec
        for spec, value in zip(signature.output_specs, returned)
    ]
    return ExportGraphSignature(input_specs=list(signature.input_specs), output_specs=specs)


_NARROWER = {torch.float64: torch.float32, torch.complex128: torch.complex64}


def _truncate_doubles(graph: torch.fx.Graph, state_dict: dict, constants: dict) -> None:
    """Doubles made singles: weights, the dtypes ops are asked for, and the
    inputs (their fake values, from which the final retrace computes the rest)."""
    for store in (state_dict, constants):
        for name, value in store.items():
            if isinstance(value, torch.Tensor) and value.dtype in _NARROWER:
                narrow = value.detach().to(_NARROWER[value.dtype])
                store[name] = torch.nn.Parameter(narrow, value.requires_grad) if isinstance(value, torch.nn.Parameter) else narrow
    for node in graph.nodes:
        if node.op == "placeholder":
            value = fake_value(node)
            if isinstance(value, torch.Tensor) and value.dtype in _NARROWER:
                with value.fake_mode:
                    node.meta["val"] = torch.empty_strided(value.shape, value.stride(), dtype=_NARROWER[value.dtype], device=value.device)
                node.meta.pop("tensor_meta", None)
        node.args, node.kwargs = torch.fx.node.map_aggregate((node.args, node.kwargs), lambda a: _NARROWER.get(a, a))
