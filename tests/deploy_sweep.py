"""The deployment op sweep: each complex op alone in a module, exported,
rewritten (``signature="real"``), and run in ExecuTorch (portable kernels)
and onnxruntime against eager.

``python tests/deploy_sweep.py`` writes ``perf/results/deploy_sweep.md``;
``tests/test_deploy_sweep.py`` checks every op in CI.
"""

from __future__ import annotations

import functools
import pathlib
import sys

import torch
from complex_testing import FunctionModule

# name → (the op on complex tensors z, w, as eager runs it, how many complex inputs)
OPS = {
    "add": (lambda z, w: z + w, 2), "sub": (lambda z, w: z - w, 2), "mul": (lambda z, w: z * w, 2),
    "div": (lambda z, w: z / w, 2), "mul_real": (lambda z: z * 2.5, 1), "neg": (lambda z: -z, 1),
    "conj_physical": (lambda z: torch.conj_physical(z), 1), "conj_resolved": (lambda z: z.conj().resolve_conj(), 1),
    "abs": (torch.abs, 1), "angle": (torch.angle, 1), "real": (lambda z: z.real * 1, 1), "imag": (lambda z: z.imag * 1, 1),
    "exp": (torch.exp, 1), "log": (torch.log, 1), "log10": (torch.log10, 1), "log2": (torch.log2, 1),
    "log1p": (torch.log1p, 1), "expm1": (torch.expm1, 1), "sqrt": (torch.sqrt, 1), "rsqrt": (torch.rsqrt, 1),
    "reciprocal": (torch.reciprocal, 1), "square": (torch.square, 1), "pow_2": (lambda z: z**2, 1),
    "pow_half": (lambda z: z**0.5, 1), "pow_complex": (lambda z, w: z**w, 2), "sgn": (torch.sgn, 1),
    "sigmoid": (torch.sigmoid, 1), "sin": (torch.sin, 1), "cos": (torch.cos, 1), "tan": (torch.tan, 1),
    "sinh": (torch.sinh, 1), "cosh": (torch.cosh, 1), "tanh": (torch.tanh, 1), "asin": (torch.asin, 1),
    "acos": (torch.acos, 1), "atan": (torch.atan, 1), "asinh": (torch.asinh, 1), "acosh": (torch.acosh, 1),
    "atanh": (torch.atanh, 1), "sum": (lambda z: z.sum(-1), 1), "mean": (lambda z: z.mean(0), 1),
    "cumsum": (lambda z: z.cumsum(-1), 1), "prod": (lambda z: z.prod(-1), 1), "matmul": (lambda z, w: z @ w.mT, 2),
    "einsum": (lambda z, w: torch.einsum("ij,kj->ik", z, w), 2), "cat": (lambda z, w: torch.cat([z, w], 0), 2),
    "stack": (lambda z, w: torch.stack([z, w], 1), 2), "transpose_contiguous": (lambda z: z.t().contiguous(), 1),
    "flip": (lambda z: z.flip(-1), 1), "where": (lambda z, w: torch.where(z.real > 0, z, w), 2),
    "eq": (lambda z, w: z == w, 2), "isfinite": (torch.isfinite, 1), "polar": (lambda z: torch.polar(z.real.abs(), z.imag), 1),
    "complex": (lambda z: torch.complex(z.real, z.imag * 2), 1), "view_as_complex": (lambda z: torch.view_as_complex(torch.view_as_real(z) * 2), 1),
    "vector_norm": (lambda z: torch.linalg.vector_norm(z, dim=-1), 1), "var": (lambda z: z.var(-1), 1),
}

RUNTIMES = ("executorch", "onnxruntime")


def inputs(count: int) -> tuple:
    gen = torch.Generator().manual_seed(0)
    # Parts in (0.2, 1.2): away from branch cuts and the poles of tan/atanh.
    return tuple(torch.complex(torch.rand(3, 4, generator=gen) + 0.2, torch.rand(3, 4, generator=gen) + 0.2) for _ in range(count))


@functools.lru_cache(maxsize=None)  # (one rewrite serves both runtimes)
def program(name: str):
    """The rewritten program, its real inputs, and eager's result as a real tensor."""
    from inductor_complex import real_signature, rewrite_exported_program

    fn, count = OPS[name]
    args = inputs(count)
    rewritten = rewrite_exported_program(torch.export.export(FunctionModule(fn), args), signature="real")
    real = real_signature(rewritten)
    expected = fn(*args)
    if real["outputs"]:
        expected = torch.view_as_real(expected)
    return rewritten, tuple(torch.view_as_real(a) for a in args), expected


def run(rewritten, args, runtime: str, tmp_dir: pathlib.Path) -> torch.Tensor:
    if runtime == "executorch":
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime

        lowered = to_edge_transform_and_lower(rewritten).to_executorch()
        return Runtime.get().load_program(lowered.buffer).load_method("forward").execute(list(args))[0]
    import onnxruntime

    path = str(tmp_dir / "op.onnx")
    torch.onnx.export(rewritten, dynamo=True).save(path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {spec.name: a.numpy() for spec, a in zip(session.get_inputs(), args)}
    return torch.from_numpy(session.run(None, feeds)[0])


def check(name: str, runtime: str, tmp_dir: pathlib.Path) -> None:
    rewritten, args, expected = program(name)
    got = run(rewritten, args, runtime, tmp_dir)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True, check_dtype=True)


def main() -> None:
    import tempfile
    import warnings

    warnings.filterwarnings("ignore")
    rows, deployed = [], dict.fromkeys(RUNTIMES, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for name in OPS:
            cells = []
            for runtime in RUNTIMES:
                try:
                    check(name, runtime, pathlib.Path(tmp))
                    cells.append("yes")
                    deployed[runtime] += 1
                except Exception as error:  # noqa: BLE001 - each failure is a table cell
                    cells.append(f"no: {type(error).__name__}: {str(error).splitlines()[0][:80]}")
            rows.append(f"| `{name}` | " + " | ".join(cells) + " |")
            print(rows[-1], flush=True)
    header = [
        "# Deployment op sweep", "",
        f"torch {torch.__version__}; each op alone, exported, `rewrite_exported_program(signature=\"real\")`,",
        "run against eager (rtol = atol = 1e-5). Written by `python tests/deploy_sweep.py`.", "",
        " | ".join(f"{runtime}: {deployed[runtime]} of {len(OPS)}" for runtime in RUNTIMES), "",
        "| op | " + " | ".join(RUNTIMES) + " |", "|---|" + "---|" * len(RUNTIMES),
    ]
    out = pathlib.Path(__file__).resolve().parent.parent / "perf" / "results" / "deploy_sweep.md"
    out.write_text("\n".join([*header, *rows]) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
