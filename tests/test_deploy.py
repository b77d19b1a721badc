"""Rewritten exported programs in real runtimes: ExecuTorch (portable and
XNNPACK), ONNX Runtime, and ExecuTorch's Edge programs through the pass;
each against eager, and the stock program failing where it does."""

from __future__ import annotations

import pytest
import torch
from complex_testing import assert_close, require_executorch_runtime
from exported_models import models

from inductor_complex import ComplexToRealPass, real_signature, rewrite_exported_program

MODELS = models()
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def _exported(name):
    module, args, dynamic_shapes = MODELS[name]
    return module, args, torch.export.export(module, args, dynamic_shapes=dynamic_shapes)


def _for_runtime(name):
    """The rewritten program (real signature: these runtimes hold no complex
    tensor), its inputs as the runtime takes them, and eager's result as it returns it."""
    module, args, ep = _exported(name)
    program = rewrite_exported_program(ep, signature="real")
    real = real_signature(program)
    inputs = [torch.view_as_real(t) if i in real["inputs"] else t for i, t in enumerate(args)]
    expected = module(*args)
    return program, inputs, torch.view_as_real(expected) if real["outputs"] else expected


# ------------------------------------------------------------- ExecuTorch


def _executorch_run(program, inputs, partitioners):
    from executorch.exir import to_edge_transform_and_lower
    from executorch.runtime import Runtime

    lowered = to_edge_transform_and_lower(program, partitioner=partitioners).to_executorch()
    method = Runtime.get().load_program(lowered.buffer).load_method("forward")
    return method.execute(list(inputs))[0]


def _partitioners(kind):
    if kind == "portable":
        return []
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return [XnnpackPartitioner()]


@pytest.mark.parametrize("kind", ["portable", "xnnpack"])
@pytest.mark.parametrize("name", list(MODELS))
def test_executorch_runs_the_rewritten_program_with_eagers_numbers(name, kind):
    require_executorch_runtime()
    program, inputs, expected = _for_runtime(name)
    assert_close(_executorch_run(program, inputs, _partitioners(kind)), expected, **TOLERANCE)


@pytest.mark.parametrize("name", list(MODELS))
def test_executorch_cannot_lower_the_stock_program(name):
    # What the rewrite buys: view_as_complex and polar are not Core ATen, and
    # complex ops fail ExecuTorch's dtype checks.
    require_executorch_runtime()
    _, args, ep = _exported(name)
    with pytest.raises(Exception):  # noqa: B017 - each model fails a different check
        _executorch_run(ep, args, [])


def test_pass_rewrites_executorchs_edge_programs():
    # ExecuTorch's AOTInductor backends hand Inductor Edge programs: Edge op
    # wrappers and *_copy view ops, which the pass must read.
    exir = pytest.importorskip("executorch.exir")
    for name in ("llama_rope", "polar_in_forward_c128", "complex_in_out", "complex_mlp"):
        module, args, ep = _exported(name)
        with torch.no_grad():  # (to_edge retraces with grad: complex views refuse)
            edge = exir.to_edge(ep, compile_config=exir.EdgeCompileConfig(_check_ir_validity=False))
        graph_module = edge.exported_program().module()
        assert any("_copy" in str(n.target) for n in graph_module.graph.nodes)
        complex_pass = ComplexToRealPass(fused_rotary=False)
        complex_pass(graph_module.graph)
        graph_module.recompile()
        report = complex_pass.last_report
        assert report.count("rewritten") > 0 and not [d for d in report.decisions if d.action in ("kept", "bridged")], name
        assert_close(graph_module(*args), module(*args), **TOLERANCE)


# ------------------------------------------------------------ ONNX Runtime


def _onnx_run(program, inputs, tmp_path):
    onnxruntime = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    path = str(tmp_path / "model.onnx")
    torch.onnx.export(program, dynamo=True).save(path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {spec.name: t.numpy() for spec, t in zip(session.get_inputs(), inputs)}
    return torch.from_numpy(session.run(None, feeds)[0])


@pytest.mark.parametrize("name", list(MODELS))
def test_onnx_runtime_runs_the_rewritten_program_with_eagers_numbers(name, tmp_path):
    program, inputs, expected = _for_runtime(name)
    assert_close(_onnx_run(program, inputs, tmp_path), expected, **TOLERANCE)


# The stock exporter handles the plain Llama rope and the MLP's real-input
# complex ops; these it does not (polar in complex128, complex in and out, S4D).
@pytest.mark.parametrize("name", ["polar_in_forward_c128", "complex_in_out", "s4d_kernel"])
def test_onnx_export_or_runtime_fails_on_the_stock_program(name, tmp_path):
    _, args, ep = _exported(name)
    with pytest.raises(Exception):  # noqa: B017 - the exporter or onnxruntime, by model
        _onnx_run(ep, args, tmp_path)


# ------------------------------------- ExecuTorch's CUDA backend, on the CPU


@pytest.fixture
def cuda_backend_on_cpu(monkeypatch):
    """ExecuTorch's CUDA partitioner and backend with the device set to CPU:
    the same AOTInductor lowering and fallback-kernel check, CPU kernels."""
    pytest.importorskip("executorch.backends.cuda.cuda_backend")
    from executorch.backends.cuda.cuda_backend import CudaBackend
    from executorch.backends.cuda.cuda_partitioner import CudaPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    options = CudaBackend.get_aoti_compile_options.__func__

    def cpu_options(cls, compile_specs):
        return {**options(cls, compile_specs), "max_autotune": False}  # (no GPU to tune on)

    monkeypatch.setattr(CudaBackend, "get_device_name", classmethod(lambda cls: "cpu"))
    monkeypatch.setattr(CudaBackend, "_setup_cuda_environment_for_fatbin", staticmethod(lambda: False))
    monkeypatch.setattr(CudaBackend, "get_aoti_compile_options", classmethod(cpu_options))

    def lower(program):
        partitioner = CudaPartitioner([CudaBackend.generate_method_name_compile_spec("forward")])
        with torch.no_grad():  # (as ExecuTorch's export scripts lower)
            return to_edge_transform_and_lower(program, partitioner=[partitioner],
                                               compile_config=EdgeCompileConfig(_check_ir_validity=False))

    return lower


def test_cuda_backend_misses_complex_fallback_kernels_for_the_stock_program(cuda_backend_on_cpu):
    # The failure first reported from deployment, reproduced.
    _, _, ep = _exported("polar_in_forward_c128")
    with pytest.raises(RuntimeError, match="missing fallback kernels") as failure:
        cuda_backend_on_cpu(ep)
    for kernel in ("polar", "mul_Tensor", "view_as_complex_copy", "view_as_real_copy"):
        assert kernel in str(failure.value)


def test_cuda_backend_lowers_the_rewritten_program(cuda_backend_on_cpu):
    _, _, ep = _exported("polar_in_forward_c128")
    cuda_backend_on_cpu(rewrite_exported_program(ep, signature="real"))


def test_cuda_backend_lowers_the_stock_program_with_the_pass_installed(cuda_backend_on_cpu):
    # The README's one line, inside the backend: the pass reads the Edge program it compiles.
    import inductor_complex

    _, _, ep = _exported("polar_in_forward_c128")
    with inductor_complex.enabled():
        cuda_backend_on_cpu(ep)


# On the CPU, AOTInductor calls extern GEMM kernels, which the CUDA backend
# has no fallback for; on a GPU it generates them with Triton (max_autotune).
CPU_GEMMS = {"aoti_torch_cpu_mm_out", "aoti_torch_cpu_bmm_out", "aoti_torch_cpu_addmm_out"}


def _missing_fallback_kernels(lower, program) -> set[str]:
    try:
        lower(program)
    except RuntimeError as error:
        if "missing fallback kernels" not in str(error):
            raise
        return {line.strip()[2:] for line in str(error).splitlines() if line.strip().startswith("- ")}
    return set()


@pytest.mark.parametrize("name", ["llama_rope", "complex_mlp"])
def test_cuda_backend_misses_only_cpu_gemms_for_rewritten_models_with_linear_layers(name, cuda_backend_on_cpu):
    _, _, ep = _exported(name)
    stock = _missing_fallback_kernels(cuda_backend_on_cpu, ep)
    assert stock - CPU_GEMMS, stock  # complex kernels among them
    assert _missing_fallback_kernels(cuda_backend_on_cpu, rewrite_exported_program(ep, signature="real")) <= CPU_GEMMS
