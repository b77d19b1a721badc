"""Random complex programs, and a check that compiling them with the pass changes nothing.

A program is Python source over a few inputs: complex ops, views, in-place
writes through every route (``_`` methods, setitem, ``out=``, ``.real`` /
``.imag`` / ``view_as_real`` of complex storage, the real base of a complex
view), ``no_grad`` / ``enable_grad`` / autocast regions, real operands of other
dtypes, inputs carrying the conj or neg bit, returned views. Programs are built
one statement at a time, each run eagerly as it is drawn, so every program
runs in eager.

:func:`check_program` runs a program in eager and compiled with the pass on
identical inputs and compares what a user can observe: outputs (values,
dtype, shape, strides, lazy bits), the inputs afterwards (mutations), which
outputs and inputs share storage, what a write into an input after the call
does to the outputs, whether an output can be written with grad enabled, and
the inputs' gradients. Where the compiled program differs or raises, stock
``torch.compile`` on the same program decides: a difference stock shares is
torch's, not the pass's.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import linecache
from typing import Callable

import torch
from hypothesis import strategies as st
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.debugging import aot_eager
from torch._functorch.aot_autograd import make_boxed_func

from inductor_complex import ComplexToRealPass

COMPLEX = (torch.complex64, torch.complex128)
REAL = (torch.float32, torch.float64, torch.bfloat16, torch.int64)
SHAPES = ((3,), (2, 3), (3, 3), (2, 1, 3), (3, 2), (2, 3, 2))  # [..., 2]: complex views of real storage
TOLERANCES = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.complex64: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-9, atol=1e-11),
    torch.complex128: dict(rtol=1e-9, atol=1e-11),
    torch.bfloat16: dict(rtol=3e-2, atol=3e-2),
}

# Statement templates: the kinds of their operands ('c' complex tensor, 'r' real
# floating tensor, 't' any tensor) and the source. Each returns a new value
# unless it is a write ("{0}" is then the target).
UNARY = [
    "{0}.exp()", "torch.sin({0})", "{0}.sqrt()", "{0}.reciprocal()", "-{0}", "{0}.log()", "torch.tanh({0})",
    "{0} ** 2", "{0}.square()", "{0}.abs()", "{0}.angle()", "{0}.sgn()", "{0} * 2", "{0} * 1j",
    "{0} + (1 - 2j)", "{0} / 3", "2 / {0}", "{0}.sum()", "{0}.sum(0)", "{0}.mean(-1)", "{0}.cumsum(0)", "{0}.prod(0)",
    "{0}.conj()", "{0}.conj_physical()", "{0}.resolve_conj()", "{0}.resolve_neg()", "torch._neg_view({0})",
    "{0}.real", "{0}.imag", "torch.view_as_real({0})", "{0}.to(torch.complex128)", "{0}.to(torch.complex64)",
    "{0}.to(torch.bool)", "{0}.to(torch.complex64, False, True)", "{0}.to(torch.float32)", "{0}.clone()",
    "{0}.contiguous()", "{0}.detach()", "{0}.t()", "{0}.transpose(0, -1)", "{0}[0]", "{0}[..., 1:]",
    "{0}[None]", "{0}.unsqueeze(-1)", "{0}.flatten()", "{0}.reshape(-1)", "{0}.view(-1)", "{0}.H", "{0}.mH",
    "{0}.flip(0)", "{0}.narrow(0, 0, 1)", "{0}.expand(2, *{0}.shape)", "{0}.unbind(0)[0]",
    "{0}.chunk(2, -1)[0]", "torch.stack([{0}, {0}])", "{0}.isfinite()", "torch.polar({0}.abs(), {0}.angle())",
    "torch.fft.fft({0})", "{0}.unfold(0, 1, 1)", "{0}.diagonal()", "{0}.repeat(2, 1)", "{0}.roll(1, 0)",
    "{0}.index_select(0, torch.tensor([0, 0]))", "{0}.tril()", "{0}.cumprod(0)", "{0}.var()", "{0} @ {0}.mH",
    "torch.view_as_real({0}).unbind(-1)[1]", "{0}.squeeze()", "{0}.permute(*reversed(range({0}.dim())))",
]
BINARY = [
    "{0} * {1}", "{0} + {1}", "{0} - {1}", "{0} / {1}", "torch.where({0}.real > 0, {0}, {1})", "{0} @ {1}",
    "torch.cat([{0}, {1}])", "{0} == {1}", "{0}.add({1}, alpha=2)",
]
REAL_PAIRS = [
    "torch.complex({0}, {1})", "torch.polar({0}.abs(), {1})", "torch.view_as_complex(torch.stack(({0}, {1}), -1))",
    "torch.view_as_complex({0})", "torch.view_as_complex({0}) * {1}",
]
WRITES = [
    "{0}.mul_({1})", "{0}.add_({1})", "{0}.add_(1j)", "{0}[0] = {1}", "{0}[..., :1] = 2.5", "{0}.copy_({1})",
    "{0}.zero_()", "torch.mul({1}, 2, out={0})", "{0}.real.mul_(2)", "{0}.imag.add_(1)",
    "torch.view_as_real({0}).add_(1)", "{0}.exp_()", "{0}.div_(2)", "{0}.neg_()", "{0}.fill_(1 - 1j)",
    "{0} *= {1}", "{0}.sub_({1}, alpha=2)", "{0}[torch.tensor([0])] = {1}", "{0}.index_fill_(0, torch.tensor([0]), 2j)",
    "torch.view_as_real({0})[..., 1] = 0.5", "{0}.unsqueeze(0).mul_(2)", "{0}.conj().mul_(2)",
]
REAL_WRITES = ["{0}.mul_(2)", "{0}.add_(1)", "{0}[0] = 3.0"]
REGIONS = [
    "with torch.no_grad():", "with torch.enable_grad():",
    'with torch.autocast("cpu", dtype=torch.bfloat16):',
]


@dataclasses.dataclass(frozen=True)
class Input:
    """How to build one input, identically for every run."""

    dtype: torch.dtype
    shape: tuple
    layout: str  # contiguous | transposed | strided
    bits: str  # none | conj | neg (complex only)
    requires_grad: bool
    seed: int

    def build(self, perturb: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
        """(the tensor passed, the leaf whose gradient is compared); ``perturb``
        scales every floating value by ``1 + perturb * noise``."""
        gen = torch.Generator().manual_seed(self.seed)
        shape = list(self.shape)
        if self.layout == "transposed":
            shape[-1], shape[-2] = shape[-2], shape[-1]
        elif self.layout == "strided":
            shape[-1] *= 2
        if self.dtype == torch.int64:
            leaf = torch.randint(-3, 4, shape, generator=gen)
        else:
            leaf = torch.randn(shape, generator=gen, dtype=self.dtype)
            if perturb:
                noise = torch.randn(shape, generator=torch.Generator().manual_seed(self.seed + 1), dtype=self.dtype)
                leaf = leaf * (1 + perturb * noise.real)
        if self.requires_grad:
            leaf.requires_grad_(True)
        x = leaf
        if self.layout == "transposed":
            x = x.transpose(-1, -2)
        elif self.layout == "strided":
            x = x[..., ::2]
        if self.bits == "conj":
            x = x.conj()
        elif self.bits == "neg":
            x = torch._neg_view(x)
        return x, leaf


@dataclasses.dataclass
class Program:
    inputs: list[Input]
    lines: list[str]
    outputs: list[str]
    dynamic: bool = False  # compile with dynamic shapes

    @property
    def source(self) -> str:
        names = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        body = "\n".join(f"    {line}" for line in self.lines)
        return f"def program({names}):\n{body}\n    return ({', '.join(self.outputs)},)\n"

    @property
    def precision(self) -> torch.dtype:
        """The least precise dtype the program may compute in, which sets the tolerance."""
        dtypes = {inp.dtype for inp in self.inputs}
        if torch.bfloat16 in dtypes or "autocast" in self.source:
            return torch.bfloat16
        if dtypes & {torch.complex64, torch.float32, torch.int64} or "complex64" in self.source or "float32" in self.source:
            return torch.float32
        return torch.float64

    def function(self):
        filename = f"<fuzz program {abs(hash(self.source))}>"
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
        namespace = {"torch": torch}
        exec(compile(self.source, filename, "exec"), namespace)
        return namespace["program"]

    def __str__(self) -> str:
        header = [f"# x{i}: {inp}" for i, inp in enumerate(self.inputs)] + (["# dynamic shapes"] if self.dynamic else [])
        return "\n".join([*header, self.source])

    __repr__ = __str__


# ------------------------------------------------------------------ generation


def _kind(value) -> str | None:
    if not isinstance(value, torch.Tensor):
        return None
    if value.is_complex():
        return "c"
    return "r" if value.is_floating_point() else "i"


@st.composite
def inputs(draw) -> Input:
    dtype = draw(st.sampled_from(COMPLEX + COMPLEX + REAL))
    shape = draw(st.sampled_from(SHAPES))
    layout = draw(st.sampled_from(["contiguous", "contiguous", "transposed", "strided"] if len(shape) > 1 else ["contiguous", "strided"]))
    bits = draw(st.sampled_from(["none", "none", "conj", "neg"])) if dtype.is_complex else "none"
    requires_grad = dtype != torch.int64 and draw(st.booleans())
    return Input(dtype, shape, layout, bits, requires_grad, draw(st.integers(0, 2**16)))


@st.composite
def programs(draw, max_statements: int = 8) -> Program:
    """A program that runs in eager: each statement is kept only if it does."""
    program_inputs = draw(st.lists(inputs(), min_size=1, max_size=3))
    if not any(i.dtype.is_complex for i in program_inputs):
        program_inputs[0] = dataclasses.replace(program_inputs[0], dtype=torch.complex64, bits="none")
    env = {f"x{i}": inp.build()[0] for i, inp in enumerate(program_inputs)}
    lines: list[str] = []
    for index in range(draw(st.integers(1, max_statements))):
        choice = draw(st.sampled_from(["unary", "unary", "binary", "binary", "pair", "write", "write", "real_write"]))
        statement = _statement(draw, choice, env, index)
        if statement is None:
            continue
        # Up to two nested regions (no_grad, enable_grad, autocast) around it.
        block = [statement]
        for region in reversed(draw(st.lists(st.sampled_from(REGIONS), max_size=2))):
            block = [region, *("    " + line for line in block)]
        if _runs("\n".join(block), env):
            lines.extend(block)
    values = [name for name in env if isinstance(env[name], torch.Tensor)]
    outputs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
    last = [name for name in values if name.startswith("v")][-1:]
    outputs += [name for name in last if name not in outputs]
    return Program(program_inputs, lines, outputs, dynamic=draw(st.integers(0, 4)) == 0)


def _pick(draw, env, kind: str):
    names = [n for n, v in env.items() if _kind(v) is not None and (kind == "t" or _kind(v) == kind)]
    return draw(st.sampled_from(names)) if names else None


def _statement(draw, choice: str, env: dict, index: int) -> str | None:
    if choice == "unary":
        a = _pick(draw, env, "c")
        return a and f"v{index} = " + draw(st.sampled_from(UNARY)).format(a)
    if choice == "binary":
        a, b = _pick(draw, env, "c"), _pick(draw, env, "t")
        if a is None or b is None:
            return None
        if draw(st.booleans()):
            a, b = b, a
        return f"v{index} = " + draw(st.sampled_from(BINARY)).format(a, b)
    if choice == "pair":
        a, b = _pick(draw, env, "r"), _pick(draw, env, "r")
        return a and b and f"v{index} = " + draw(st.sampled_from(REAL_PAIRS)).format(a, b)
    if choice == "write":
        a, b = _pick(draw, env, "c"), _pick(draw, env, "t")
        return a and b and draw(st.sampled_from(WRITES)).format(a, b)
    a = _pick(draw, env, "r")
    return a and draw(st.sampled_from(REAL_WRITES)).format(a)


def _runs(source: str, env: dict) -> bool:
    """Run a statement on the eager values; keep its effects only if it ran cleanly."""
    trial = dict(env)
    try:
        exec(source, {"torch": torch}, trial)
    except Exception:
        return False
    if any(isinstance(v, torch.Tensor) and v.is_complex() and v.dtype == torch.complex32 for v in trial.values()):
        return False
    env.clear()
    env.update(trial)
    return True


# -------------------------------------------------------------------- checking


class Mismatch(AssertionError):
    pass


def _rewritten(graph_pass, gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph_pass(gm.graph)
    gm.graph.lint()
    gm.recompile()
    return gm


def _post_grad_then_eager(post_grad):
    """An AOTAutograd compiler: the post-grad pass on the forward or backward graph, run eagerly."""
    def compiler(gm, example_inputs):
        return make_boxed_func(_rewritten(post_grad, gm).forward)
    return compiler


def compile_with_pass(fn, backend: str, dynamic: bool = False):
    """``fn`` compiled with the pass (before and after autograd): by Inductor;
    through AOTAutograd with eager kernels (``aot_eager``: the pre-grad pass
    only); or ``aot_eager_post_grad``: through AOTAutograd with Inductor's
    decompositions, the post-grad pass on each graph, eager kernels."""
    # planes_on_cpu=True: the fuzzer's small programs would rarely pay for planes by
    # default, and the planar form past autograd is the rewrite to check against eager.
    complex_pass = ComplexToRealPass(fused_rotary=False, planes_on_cpu=True)
    if backend == "inductor":
        return torch.compile(fn, dynamic=dynamic, options=complex_pass.inductor_options())
    after = aot_eager if backend == "aot_eager" else _aot_with_inductors_decompositions(complex_pass.post_grad)

    def pass_then_aot(gm, example_inputs):
        return after(_rewritten(complex_pass, gm), example_inputs)

    return torch.compile(fn, backend=pass_then_aot, dynamic=dynamic)


def _aot_with_inductors_decompositions(post_grad=None):
    """AOTAutograd as Inductor runs it (its decompositions, input mutations kept
    in the graph), then ``post_grad`` on each graph, then eager kernels."""
    from torch._inductor.decomposition import select_decomp_table

    compiler = _post_grad_then_eager(post_grad or (lambda graph: None))
    return aot_autograd(fw_compiler=compiler, bw_compiler=compiler, decompositions=select_decomp_table(),
                        keep_inference_input_mutations=True)


def _compile_stock(fn, backend: str, dynamic: bool = False):
    """The same compile without the pass (its decompositions decide strides too)."""
    if backend == "aot_eager_post_grad":
        return torch.compile(fn, dynamic=dynamic, backend=_aot_with_inductors_decompositions())
    return torch.compile(fn, dynamic=dynamic, backend="inductor" if backend == "inductor" else "aot_eager")


@dataclasses.dataclass
class Run:
    outputs: tuple | None
    args: list
    leaves: list
    error: Exception | None = None
    again: Callable[[], Run] | None = None  # the same run afresh


# How far inputs are moved to find the ill-conditioned elements of a program's
# results (a chain of exp turns one ulp into a flipped sign): about ten times
# the rounding differences a rule may have from eager's kernel.
PERTURBATION = {torch.float64: 1e-14, torch.float32: 1e-6, torch.bfloat16: 1e-2}


def _run(program: Program, fn, perturb: float = 0.0) -> Run:
    built = [inp.build(perturb) for inp in program.inputs]
    args, leaves = [b[0] for b in built], [b[1] for b in built]
    again = functools.partial(_run, program, fn, perturb)
    try:
        return Run(tuple(fn(*args)), args, leaves, again=again)
    except Exception as error:  # noqa: BLE001 - compared with eager's behaviour
        return Run(None, args, leaves, error, again)


def _plain(t: torch.Tensor) -> torch.Tensor:
    """The values of a tensor, its lazy bits applied, detached."""
    return t.detach().resolve_conj().resolve_neg()


def _close(actual, expected, what: str, precision: torch.dtype = torch.float64, shaky=None) -> None:
    """``actual`` equals eager's ``expected`` within the tolerance, except where
    ``shaky`` (eager again on slightly moved inputs) shows eager's own result
    is ill-conditioned."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        raise Mismatch(f"{what}: {actual.dtype}{tuple(actual.shape)} for eager's {expected.dtype}{tuple(expected.shape)}")
    a, e = _plain(actual), _plain(expected)
    if not (e.is_floating_point() or e.is_complex()):
        stable = _plain(shaky) == e if shaky is not None and shaky.shape == e.shape else torch.ones_like(e, dtype=torch.bool)
        if not torch.equal(a[stable], e[stable]):
            raise Mismatch(f"{what}: values differ\n{a}\n{e}")
        return
    # The looser of the dtype's own tolerance and that of the program's least precise math.
    tol = max(TOLERANCES.get(e.dtype, TOLERANCES[torch.float32]), TOLERANCES[precision], key=lambda t: t["rtol"])
    if shaky is not None and shaky.shape == expected.shape:
        stable = torch.isclose(_plain(shaky), e, equal_nan=True, **tol)
        a, e = a[stable], e[stable]
    try:
        torch.testing.assert_close(a, e, equal_nan=True, **tol)
    except AssertionError as error:
        raise Mismatch(f"{what}: {error}") from None


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(a.numel() and b.numel()) and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _storage_pattern(tensors) -> list[bool]:
    ptrs = [t.untyped_storage().data_ptr() if t.numel() else None for t in tensors]
    return [a is not None and a == b for a, b in itertools.combinations(ptrs, 2)]


def check_outputs(ours: Run, eager: Run, shaky: Run, precision) -> None:
    """Values, dtypes, shapes, strides, lazy bits, requires_grad; inputs after the call; shared storage."""
    if len(ours.outputs) != len(eager.outputs):
        raise Mismatch("number of outputs")
    resolved = []  # outputs eager returns as lazy views of computed tensors, the pass resolved
    for i, (o, e, w) in enumerate(zip(ours.outputs, eager.outputs, shaky.outputs)):
        _close(o, e, f"output {i}", precision, w)
        if (o.is_conj(), o.is_neg()) != (e.is_conj(), e.is_neg()):
            # The pass returns a lazy view of a computed tensor resolved (README,
            # limitations: Inductor would copy it without applying the bit).
            if o.is_conj() or o.is_neg() or any(_shares(e, a) for a in eager.args):
                raise Mismatch(f"output {i}: lazy bits {(o.is_conj(), o.is_neg())} for eager's {(e.is_conj(), e.is_neg())}")
            resolved.append(i)
        ours_strides = [s for s, n in zip(o.stride(), o.shape) if n > 1]
        eager_strides = [s for s, n in zip(e.stride(), e.shape) if n > 1]
        if ours_strides != eager_strides:
            raise Mismatch(f"output {i}: strides {o.stride()} for eager's {e.stride()}")
        if o.requires_grad != e.requires_grad:
            raise Mismatch(f"output {i}: requires_grad {o.requires_grad} for eager's {e.requires_grad}")
    for i, (a, e, w) in enumerate(zip(ours.args, eager.args, shaky.args)):
        _close(a, e, f"input {i} after the call", precision, w)
    kept = [i for i in range(len(eager.outputs)) if i not in resolved]  # a resolved copy shares nothing
    ours_shared = _storage_pattern([*ours.args, *(ours.outputs[i] for i in kept)])
    if ours_shared != _storage_pattern([*eager.args, *(eager.outputs[i] for i in kept)]):
        raise Mismatch("which outputs and inputs share storage differs from eager")


def _gradients(run: Run) -> list:
    outs = [o for o in run.outputs if o.requires_grad and (o.is_floating_point() or o.is_complex())]
    leaves = [leaf for leaf in run.leaves if leaf.requires_grad]
    if not outs or not leaves:
        return []
    loss = 0
    for o in outs:
        values = torch.view_as_real(o.resolve_conj().resolve_neg()) if o.is_complex() else o
        values = values.to(torch.float64).reshape(-1)
        loss = loss + (values * torch.linspace(-1, 1, values.numel(), dtype=torch.float64)).sum()
    return list(torch.autograd.grad(loss, leaves, allow_unused=True))


def check_gradients(ours: Run, eager: Run, shaky: Run, precision) -> None:
    try:
        expected, wobbly = _gradients(eager), _gradients(shaky)
    except RuntimeError:  # eager's own backward refuses (an in-place write over a saved value)
        return
    try:
        got = _gradients(ours)
    except RuntimeError as error:
        raise Mismatch(f"backward raised where eager's did not: {error}") from None
    for i, (g, e, w) in enumerate(zip(got, expected, wobbly)):
        if (g is None) != (e is None):
            raise Mismatch(f"gradient {i}: {'none' if g is None else 'one'} where eager has {'none' if e is None else 'one'}")
        if g is not None:
            g, e = _at_singular_points(g, e, f"gradient {i}")
            _close(g, e, f"gradient {i}", precision, w)


def _finite(t: torch.Tensor) -> torch.Tensor:
    t = _plain(t)
    return torch.isfinite(torch.view_as_real(t)).all(-1) if t.is_complex() else torch.isfinite(t)


def _at_singular_points(got: torch.Tensor, expected: torch.Tensor, what: str):
    """Where eager's gradient is not finite (log or a division at exactly 0),
    ours must not be finite either; which of inf and NaN each part holds there
    comes from c10's complex division by zero, which autograd through real
    math does not reproduce, so those elements are compared no further."""
    if got.shape != expected.shape or not (expected.is_floating_point() or expected.is_complex()):
        return got, expected
    singular = ~_finite(expected)
    if not singular.any():
        return got, expected
    if _finite(got)[singular].any():
        raise Mismatch(f"{what}: finite where eager's is not (inf/NaN)\n{got}\n{expected}")
    return _plain(got).masked_fill(singular, 0), _plain(expected).masked_fill(singular, 0)


def _outputs_after_input_writes(run: Run) -> list:
    with torch.no_grad():
        for arg in run.args:
            try:
                arg.mul_(2)
            except RuntimeError:  # an overlapping or integer view: the same in every run
                pass
    return [_plain(o) for o in run.outputs]


def check_writes_after_the_call(ours: Run, eager: Run, shaky: Run, precision) -> None:
    """A write into an input after the call shows in exactly the outputs it shows in eager."""
    after = zip(_outputs_after_input_writes(ours), _outputs_after_input_writes(eager), _outputs_after_input_writes(shaky))
    for i, (o, e, w) in enumerate(after):
        _close(o, e, f"output {i} after a write into the inputs", precision, w)


def _writable_with_grad(run: Run) -> list[bool]:
    ok = []
    for i, o in enumerate(run.outputs):
        if o.is_complex():
            o = run.again().outputs[i]  # each on a run of its own: which outputs share storage is checked apart
            try:
                o.mul_(torch.ones((), dtype=o.dtype, requires_grad=True))
                ok.append(True)
            except RuntimeError:
                ok.append(False)
    return ok


def check_output_writability(ours: Run, eager: Run, shaky: Run, precision) -> None:
    """Each complex output, on its own, takes an in-place write with grad exactly where eager's does."""
    got, want = _writable_with_grad(ours), _writable_with_grad(eager)
    if got != want:
        raise Mismatch(f"in-place writes with grad into the complex outputs succeed: {got}, in eager: {want}")


CHECKS = (check_outputs, check_gradients, check_writes_after_the_call, check_output_writability)


def _references(program: Program, fn, perturb: float) -> tuple[Run, Run]:
    """Eager's run, and eager's run on slightly moved inputs (itself where that raises)."""
    eager, shaky = _run(program, fn), _run(program, fn, perturb)
    return eager, (shaky if shaky.error is None else _run(program, fn))


def check_program(program: Program, backend: str = "aot_eager") -> list[str]:
    """Compare the program compiled with the pass against eager (every check on
    fresh runs). Raises Mismatch where they differ and stock torch.compile does
    not; returns the differences stock shares (torch's own)."""
    fn = program.function()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = compile_with_pass(fn, backend, program.dynamic)
    ours = [_run(program, compiled) for _ in CHECKS]
    failed = torch._dynamo.utils.counters["inductor_complex"]["pass_failed"]
    stock: list[Run] = []

    def stock_runs() -> list[Run]:
        if not stock:
            torch._dynamo.reset()
            stock_fn = _compile_stock(fn, backend, program.dynamic)
            stock.extend(_run(program, stock_fn) for _ in CHECKS)
        return stock

    if ours[0].error is not None:
        if stock_runs()[0].error is not None:
            return [f"stock raises too: {type(stock[0].error).__name__}"]
        raise Mismatch(f"compiled with the pass raised {type(ours[0].error).__name__}: {ours[0].error}")
    if failed:
        raise Mismatch("the pass failed on a graph (it was left unchanged)")
    shared = []
    perturb = PERTURBATION[program.precision]
    for i, check in enumerate(CHECKS):
        try:
            check(ours[i], *_references(program, fn, perturb), program.precision)
        except Mismatch as why:
            try:
                check(stock_runs()[i], *_references(program, fn, perturb), program.precision)
            except Exception:  # noqa: BLE001 - stock differs from eager here too
                shared.append(f"{check.__name__}: stock differs too ({why})")
                continue
            raise
    return shared
