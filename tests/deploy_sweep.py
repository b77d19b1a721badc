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
    # The rest of the rule table, each op alone (constants made inside the function).
    "exp2": (torch.exp2, 1), "logaddexp": (torch.logaddexp, 2), "positive_add": (lambda z: +z + 1, 1),
    "rsub": (lambda z: 2 - z, 1), "div_real": (lambda z: z / 2.5, 1), "pow_real_tensor": (lambda z: z ** z.real, 1),
    "pow_3": (lambda z: z**3, 1), "rpow": (lambda z: 2**z, 1), "mul_complex_scalar": (lambda z: z * (1.5 - 2j), 1),
    "std": (lambda z: z.std(0), 1), "var_mean": (lambda z: torch.var_mean(z, 1)[1], 1),
    "std_mean": (lambda z: torch.std_mean(z, 0)[0], 1), "mean_all": (lambda z: z.mean(), 1),
    "cumprod": (lambda z: z.cumprod(-1), 1), "norm": (lambda z: z.norm(dim=0), 1),
    "tril": (torch.tril, 1), "triu": (lambda z: torch.triu(z, 1), 1), "roll": (lambda z: torch.roll(z, 1, 0), 1),
    "diagonal": (lambda z: torch.diagonal(z) * 2, 1), "diag_embed": (lambda z: torch.diag_embed(z[0]), 1),
    "repeat": (lambda z: z.repeat(2, 1), 1), "expand": (lambda z: z[:1].expand(3, 4) * 1, 1),
    "permute_reshape": (lambda z: z[None].permute(2, 0, 1).reshape(4, 3) * 1, 1),
    "narrow": (lambda z: z.narrow(1, 1, 2) * 1, 1), "select": (lambda z: z[1] * 1, 1),
    "index_select": (lambda z: torch.index_select(z, 1, torch.tensor([2, 0, 2])), 1),
    "gather": (lambda z: torch.gather(z, 1, torch.tensor([[0, 3], [1, 1], [2, 0]])), 1),
    "index": (lambda z: z[torch.tensor([2, 0])], 1),
    "scatter": (lambda z, w: z.scatter(1, torch.tensor([[0, 3], [1, 1], [2, 0]]), w), 2),
    "scatter_add": (lambda z, w: z.scatter_add(1, torch.tensor([[0, 3], [1, 1], [2, 0]]), w), 2),
    "index_add": (lambda z, w: z.index_add(0, torch.tensor([2, 0, 2]), w), 2),
    "index_fill": (lambda z: z.index_fill(1, torch.tensor([1, 3]), 2 - 1j), 1),
    "index_put": (lambda z, w: torch.index_put(z, (torch.tensor([0, 2]),), w[:2]), 2),
    "masked_fill": (lambda z: z.masked_fill(z.real > 0.7, 1j), 1),
    "masked_scatter": (lambda z, w: z.masked_scatter(z.real > 0.7, w), 2),
    "slice_scatter": (lambda z, w: torch.slice_scatter(z, w[:, :2], 1, 1, 3), 2),
    "select_scatter": (lambda z, w: torch.select_scatter(z, w[0], 0, 1), 2),
    "diagonal_scatter": (lambda z, w: torch.diagonal_scatter(z, w[0, :3]), 2),
    "pad_constant": (lambda z: torch.nn.functional.pad(z, (1, 2)), 1),
    "pad_reflect": (lambda z: torch.nn.functional.pad(z[None], (2, 1), mode="reflect")[0], 1),
    "pad_replicate": (lambda z: torch.nn.functional.pad(z[None], (2, 1), mode="replicate")[0], 1),
    "pad_circular": (lambda z: torch.nn.functional.pad(z[None], (2, 1), mode="circular")[0], 1),
    "split": (lambda z: torch.split(z, 3, 1)[1] * 1, 1), "chunk": (lambda z: torch.chunk(z, 2, 1)[0] * 2, 1),
    "unbind": (lambda z: z.unbind(0)[2] * 1, 1), "movedim": (lambda z: z[None].movedim(0, 2) * 1, 1),
    "isnan": (torch.isnan, 1), "isinf": (torch.isinf, 1), "ne": (lambda z, w: z != w, 2),
    "logical_not": (torch.logical_not, 1), "logical_and": (torch.logical_and, 2), "logical_xor": (torch.logical_xor, 2),
    "all": (lambda z: z.all(1), 1), "any": (lambda z: z.any(0), 1),
    "mm": (lambda z, w: torch.mm(z, w.mT), 2), "bmm": (lambda z, w: torch.bmm(z[None], w.mT[None]), 2),
    "addmm": (lambda z, w: torch.addmm(z[:, :3], z, w.mT), 2),
    "baddbmm": (lambda z, w: torch.baddbmm(z[None, :, :3], z[None], w.mT[None]), 2),
    "addmv": (lambda z, w: torch.addmv(z[:, 0], z, w[0]), 2), "dot": (lambda z, w: torch.dot(z[0], w[0]), 2),
    "vdot": (lambda z, w: torch.vdot(z[0], w[0]), 2), "trace": (lambda z: torch.trace(z), 1),
    "linear": (lambda z, w: torch.nn.functional.linear(z, w), 2),
    "conv1d": (lambda z, w: torch.nn.functional.conv1d(z[:, None], w[:, None, :2]), 2),
    "conv2d": (lambda z, w: torch.nn.functional.conv2d(z[None, None], w[None, None, :2, :2]), 2),
    "conv_transpose1d": (lambda z, w: torch.nn.functional.conv_transpose1d(z[None], w[:, None, :2]), 2),
    "l1_loss": (lambda z, w: torch.nn.functional.l1_loss(z, w), 2),
    "zeros_like": (lambda z: torch.zeros_like(z) + z, 1), "full_like": (lambda z: torch.full_like(z, 2 - 1j) * z, 1),
    "ones": (lambda z: z + torch.ones(3, 4, dtype=z.dtype), 1),
    "to_complex128": (lambda z: z.to(torch.complex128) * 2, 1), "real_to_complex": (lambda z: z.real.to(z.dtype) * z, 1),
    "isclose": (lambda z, w: torch.isclose(z, w, rtol=0.5), 2), "trapezoid": (lambda z: torch.trapezoid(z), 1),
    "diff": (lambda z: torch.diff(z), 1),
}

RUNTIMES = ("executorch", "onnxruntime")


def inputs(count: int) -> tuple:
    gen = torch.Generator().manual_seed(0)
    # Parts in (0.2, 1.2): away from branch cuts and the poles of tan/atanh.
    return tuple(torch.complex(torch.rand(3, 4, generator=gen) + 0.2, torch.rand(3, 4, generator=gen) + 0.2) for _ in range(count))


def groups(size: int = 8) -> list[tuple[str, ...]]:
    """The ops in groups of ``size`` that take the same inputs: CI exports, rewrites
    and lowers each group as one program (a failure names the group; the script's
    table, op by op, says which op)."""
    by_count: dict[int, list[str]] = {}
    for name, (_, count) in OPS.items():
        by_count.setdefault(count, []).append(name)
    return [tuple(names[i:i + size]) for names in by_count.values() for i in range(0, len(names), size)]


@functools.lru_cache(maxsize=None)  # (one rewrite serves both runtimes)
def program(names: tuple[str, ...]):
    """The rewritten program of the ops ``names`` (all taking the same inputs), its
    real inputs, and eager's results as real tensors."""
    from inductor_complex import real_signature, rewrite_exported_program

    counts = {OPS[name][1] for name in names}
    assert len(counts) == 1, f"{names} take different inputs"
    args = inputs(counts.pop())

    def ops(*operands):
        return tuple(OPS[name][0](*operands) for name in names)

    rewritten = rewrite_exported_program(torch.export.export(FunctionModule(ops), args), signature="real")
    made_real = set(real_signature(rewritten)["outputs"])
    expected = [torch.view_as_real(out) if i in made_real else out for i, out in enumerate(ops(*args))]
    return rewritten, tuple(torch.view_as_real(a) for a in args), expected


def run(rewritten, args, runtime: str, tmp_dir: pathlib.Path) -> list:
    if runtime == "executorch":
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime

        lowered = to_edge_transform_and_lower(rewritten).to_executorch()
        return list(Runtime.get().load_program(lowered.buffer).load_method("forward").execute(list(args)))
    import onnxruntime

    path = str(tmp_dir / "op.onnx")
    torch.onnx.export(rewritten, dynamo=True).save(path)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {spec.name: a.numpy() for spec, a in zip(session.get_inputs(), args)}
    return [torch.from_numpy(out) for out in session.run(None, feeds)]


def check(names: tuple[str, ...], runtime: str, tmp_dir: pathlib.Path) -> None:
    rewritten, args, expected = program(tuple(names))
    got = run(rewritten, args, runtime, tmp_dir)
    assert len(got) == len(expected), (len(got), len(expected))
    for name, g, e in zip(names, got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5, equal_nan=True, check_dtype=True, msg=lambda m: f"{name}: {m}")


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
                    check((name,), runtime, pathlib.Path(tmp))
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
