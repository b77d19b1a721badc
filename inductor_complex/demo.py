"""``python -m inductor_complex demo``: stock torch.compile vs. the pass on a Llama.

The model is a small Llama-style transformer whose rotary embedding is Meta's
reference code, complex numbers and all. Stock Inductor cannot generate code
for complex tensors, so it runs those ops eagerly between kernels; with
:class:`ComplexToRealPass` they become real arithmetic that Inductor fuses.
The demo compiles the model both ways and prints, side by side, how many ops
the pass rewrote, which complex ops Inductor still left to eager, how far each
result is from eager PyTorch, and the time per training step.

It doubles as a smoke check: it exits 1 (after a ``FAIL`` line) when the pass
changes the numbers beyond a tolerance or fails on the model.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import math
import platform
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.utils import counters

from .complex_to_real_pass import ComplexToRealPass
from .fallbacks import ZERO_COPY_VIEWS, count_complex_fallbacks
from .llama_rope import apply_rotary_emb_complex as apply_rotary_emb
from .llama_rope import precompute_freqs_cis
from .report import COUNTER

# Allowed max |compiled - eager|, scaled by max(1, max |eager|): Inductor
# reorders float math, and bf16 rounds every intermediate it stores.
TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 5e-2}


# --------------------------------------------------------------------------
# The model: Meta's Llama reference, shrunk.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class ModelArgs:
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 8
    n_kv_heads: int = 4
    vocab_size: int = 1024
    ffn_hidden: int = 688  # Llama's 2/3 * 4 * dim, rounded to a multiple of 16
    max_seq_len: int = 256
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope: bool = True  # False: the same model without its rotary embedding (perf's limit)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """Grouped-query attention: each kv head serves ``n_rep`` query heads."""
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim
    )


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return out.type_as(x) * self.weight


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads, self.n_kv_heads = args.n_heads, args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.rope = args.rope
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        # -1 heads: under tensor parallel each rank holds a slice of them (as torchtitan writes it).
        xq = self.wq(x).view(bsz, seqlen, -1, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, -1, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, -1, self.head_dim)
        if self.rope:
            xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        n_rep = self.n_heads // self.n_kv_heads
        keys, values = repeat_kv(xk, n_rep), repeat_kv(xv, n_rep)
        q, k, v = (t.transpose(1, 2) for t in (xq, keys, values))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(bsz, seqlen, -1))


class FeedForward(nn.Module):
    """SwiGLU MLP."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, args.ffn_hidden)
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs, device=None, dtype=torch.float32):
        super().__init__()
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(TransformerBlock(args) for _ in range(args.n_layers))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        # Cast before the complex buffer exists: Module.to(bfloat16) would
        # cast it too, silently dropping the imaginary part. Like real Llama,
        # the rotary table stays complex64 (float32 pairs) under bf16 weights.
        self.to(device=device, dtype=dtype)
        freqs_cis = precompute_freqs_cis(args.dim // args.n_heads, args.max_seq_len, args.rope_theta)
        self.register_buffer("freqs_cis", freqs_cis.to(device), persistent=False)

    def forward(self, tokens: torch.Tensor, start_pos: int = 0):
        seqlen = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        for layer in self.layers:
            h = layer(h, freqs_cis)
        return self.output(self.norm(h))


# --------------------------------------------------------------------------
# Measuring one compiled variant.
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Variant:
    """What one way of running the model produced (eager, stock, or with the pass)."""

    name: str
    output: torch.Tensor | None = None
    grads: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    decisions: dict[str, int] = dataclasses.field(default_factory=dict)  # pass action → count
    fallbacks: list[str] = dataclasses.field(default_factory=list)  # aten ops left to eager
    errors: dict[str, float] = dataclasses.field(default_factory=dict)  # "output"/grad name → max |error|
    ms_per_step: float = math.nan
    report_text: str = ""  # the pass's decisions, one per line

    @property
    def rewritten(self) -> int:
        return self.decisions.get("rewritten", 0)

    @property
    def fallbacks_beyond_views(self) -> list[str]:
        return [op for op in self.fallbacks if op not in ZERO_COPY_VIEWS]

    @property
    def zero_copy_views(self) -> int:
        return len(self.fallbacks) - len(self.fallbacks_beyond_views)


@dataclasses.dataclass
class DemoResult:
    """Everything the demo measured; ``main`` returns it so tests can assert on it."""

    header: str
    stock: Variant
    with_pass: Variant
    tolerance: float
    table: str
    failures: list[str]

    @property
    def ok(self) -> bool:
        return not self.failures


# Gradients compared against eager: the input embedding, and a projection
# whose gradient flows back through the rotary embedding's backward.
GRAD_PARAMS = ("tok_embeddings.weight", "layers.0.attention.wq.weight")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _step(model, tokens, grad_out):
    """One training step's compute (forward + backward); returns the output."""
    model.zero_grad(set_to_none=True)
    out = model(tokens)
    out.backward(grad_out)
    return out


def _grads(model) -> dict[str, torch.Tensor]:
    params = dict(model.named_parameters())
    return {name: params[name].grad.detach().clone() for name in GRAD_PARAMS}


@contextlib.contextmanager
def _no_compile_caches():
    """A cache hit would skip Inductor's lowering, leaving no fallbacks to count."""
    with torch._inductor.config.patch(fx_graph_cache=False), \
            torch._functorch.config.patch(enable_autograd_cache=False):
        yield


def compile_and_check(name, model, tokens, grad_out, complex_pass=None):
    """Compile ``model`` (with ``complex_pass`` if given) and run its first step.

    Returns the compiled model and a :class:`Variant` holding that step's
    output and gradients, the complex ops Inductor refused while compiling,
    and the pass's decisions. Each variant gets its own backend object, so
    Dynamo traces afresh for it (a ``BACKEND_MATCH`` guard) and, with the
    caches off, Inductor and the pass see every graph: no ``_dynamo.reset()``
    is needed in between, and both compiled models stay usable for timing.
    """
    counters[COUNTER].clear()
    options = complex_pass.inductor_options() if complex_pass is not None else None
    compiled = torch.compile(model, options=options)
    variant = Variant(name)
    # The first step compiles forward and backward: count what Inductor refuses then.
    with _no_compile_caches(), count_complex_fallbacks() as found:
        out = _step(compiled, tokens, grad_out)
    variant.output, variant.grads = out.detach().clone(), _grads(model)
    variant.fallbacks = found.ops
    # Counters, not last_report: with graph breaks the pass runs once per graph.
    variant.decisions = {k: v for k, v in counters[COUNTER].items() if v}
    if complex_pass is not None and complex_pass.last_report is not None:
        variant.report_text = complex_pass.last_report.format()
    return compiled, variant


def time_interleaved(runs, tokens, grad_out, steps: int) -> None:
    """Median fwd+bwd step time of each ``(compiled, variant)``, in ms.

    Steps alternate between the variants so that load from other processes
    (or clock changes) hits both alike instead of skewing one of them.
    """
    for compiled, _ in runs:
        for _ in range(3):  # warm up allocator and autotuning
            _step(compiled, tokens, grad_out)
    times = {id(v): [] for _, v in runs}
    for _ in range(steps):
        for compiled, variant in runs:
            _sync(tokens.device)
            start = time.perf_counter()
            _step(compiled, tokens, grad_out)
            _sync(tokens.device)
            times[id(variant)].append(time.perf_counter() - start)
    for _, variant in runs:
        variant.ms_per_step = statistics.median(times[id(variant)]) * 1e3


def _max_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return (actual.float() - expected.float()).abs().max().item()


def _scale(t: torch.Tensor) -> float:
    return max(1.0, t.float().abs().max().item())


# --------------------------------------------------------------------------
# Output.
# --------------------------------------------------------------------------


def _short(op: str) -> str:
    """``aten.mul.Tensor`` → ``mul``: table cells stay narrow."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else op


def _left_to_eager_cell(v: Variant) -> str:
    real_work = collections.Counter(_short(op) for op in v.fallbacks_beyond_views)
    cell = str(sum(real_work.values()))
    if real_work:  # the most frequent few; the full list is printed below the table
        names = [op for op, _ in real_work.most_common(2)] + (["..."] if len(real_work) > 2 else [])
        cell += f" ({', '.join(names)})"
    if v.zero_copy_views:
        cell += f" (+{v.zero_copy_views} zero-copy views)"
    return cell


def _rewritten_cell(v: Variant) -> str:
    cell = str(v.rewritten)
    extra = [f"{v.decisions[k]} {k}" for k in ("fused", "bridged", "kept") if v.decisions.get(k)]
    return f"{cell} ({', '.join(extra)})" if extra else cell


def format_table(header: str, stock: Variant, with_pass: Variant) -> str:
    rows = [
        ("", stock.name, with_pass.name),
        ("ops rewritten", _rewritten_cell(stock), _rewritten_cell(with_pass)),
        ("complex ops left to eager", _left_to_eager_cell(stock), _left_to_eager_cell(with_pass)),
        ("max |error| vs eager: output", f"{stock.errors['output']:.1e}", f"{with_pass.errors['output']:.1e}"),
    ]
    rows += [
        (f"  grad {name}", f"{stock.errors[name]:.1e}", f"{with_pass.errors[name]:.1e}") for name in GRAD_PARAMS
    ]
    rows.append(("time per step (fwd+bwd)", f"{stock.ms_per_step:.2f} ms", f"{with_pass.ms_per_step:.2f} ms"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}   {b:>{widths[1]}}   {c:>{widths[2]}}" for a, b, c in rows]
    return "\n".join([header, *lines])


def _fallback_details(v: Variant) -> str:
    if not v.fallbacks:
        return f"{v.name}: Inductor generated code for every complex op"
    counts = collections.Counter(v.fallbacks)
    ops = ", ".join(f"{op} x{n}" for op, n in sorted(counts.items()))
    return f"{v.name} left to eager: {ops}"


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} ({torch.backends.cpu.get_cpu_capability()})"


# --------------------------------------------------------------------------
# Entry points.
# --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    parser.add_argument("--batch", type=int, help="batch size (default: 2 on CPU, 8 on CUDA)")
    parser.add_argument("--seq", type=int, help="sequence length (default: 128 on CPU, 1024 on CUDA)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16"],
                        help="activations and weights (default: bfloat16 on CUDA, float32 on CPU)")
    parser.add_argument("--layers", type=int, default=4, help="transformer layers (default: 4)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps after warm-up (default: 10)")
    return parser


def run(args: argparse.Namespace) -> DemoResult:
    """Build the model, run eager / stock / pass, print the comparison, return it."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    on_cuda = device.type == "cuda"
    dtype = getattr(torch, args.dtype) if args.dtype else torch.bfloat16 if on_cuda else torch.float32
    batch = args.batch or (8 if on_cuda else 2)
    seq = args.seq or (1024 if on_cuda else 128)

    torch.manual_seed(0)
    model_args = ModelArgs(n_layers=args.layers, max_seq_len=2 * seq)
    model = Transformer(model_args, device=device, dtype=dtype)
    tokens = torch.randint(model_args.vocab_size, (batch, seq), device=device)
    grad_out = torch.randn(batch, seq, model_args.vocab_size, device=device, dtype=dtype)

    print(f"torch {torch.__version__}, device: {_device_name(device)}")
    header = (
        f"inductor_complex demo: Llama-style model, {model_args.n_layers} layers, dim {model_args.dim}, "
        f"B={batch} S={seq}, {device.type}, {str(dtype).removeprefix('torch.')}"
    )

    eager = Variant("eager", output=_step(model, tokens, grad_out).detach().clone())
    eager.grads = _grads(model)
    torch._dynamo.reset()
    complex_pass = ComplexToRealPass()
    runs = [
        compile_and_check("stock torch.compile", model, tokens, grad_out),
        compile_and_check("+ ComplexToRealPass", model, tokens, grad_out, complex_pass),
    ]
    time_interleaved(runs, tokens, grad_out, args.steps)
    (_, stock), (_, with_pass) = runs
    torch._dynamo.reset()

    tolerance = TOLERANCE[dtype]
    failures = []
    for v in (stock, with_pass):
        v.errors["output"] = _max_error(v.output, eager.output)
        for name in GRAD_PARAMS:
            v.errors[name] = _max_error(v.grads[name], eager.grads[name])
    for name, expected in [("output", eager.output), *eager.grads.items()]:
        allowed = tolerance * _scale(expected)
        if with_pass.errors[name] > allowed:
            failures.append(f"{name}: max |error| {with_pass.errors[name]:.2e} with the pass > {allowed:.1e}")
    if with_pass.decisions.get("pass_failed"):
        failures.append("the pass failed on the model and left the graph unchanged (see the warning above)")

    table = format_table(header, stock, with_pass)
    print(table)
    print()
    print(_fallback_details(stock))
    print(_fallback_details(with_pass))
    if with_pass.fallbacks_beyond_views or with_pass.decisions.get("bridged") or with_pass.decisions.get("kept"):
        print("NOTE: the pass did not rewrite every complex op; its decisions:")
        print(with_pass.report_text)
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(f"OK: the pass matches eager within {tolerance:g} (x max(1, max |eager|))")
    return DemoResult(header, stock, with_pass, tolerance, table, failures)


def main(argv: list[str] | None = None) -> DemoResult:
    """Run the demo with command-line style ``argv``; returns the results."""
    parser = add_arguments(argparse.ArgumentParser(prog="python -m inductor_complex demo", description=__doc__))
    return run(parser.parse_args(argv))
