"""Find the complex rotary idiom in a graph and send it to the fused kernel.

The idiom, in any of its real spellings and in both graph forms::

    xc  = view_as_complex(x.float().reshape(..., -1, 2))   # or .view / .unflatten, cast optional
    out = view_as_real(xc * table).flatten(3)              # or flatten(-2) / flatten(2) / reshape
    out = out.type_as(x)                                   # or .to(dtype) / .float() / none

becomes ``rotary_embedding(x_q, x_k, view_as_real(table), out_dtype)``: one
launch for q and k when they share a table. This runs on the complex graph,
before the generic rewrite, which then turns ``view_as_real(table)`` and the
table's own chain into real pairs like any other complex value.
"""

from __future__ import annotations

import dataclasses
import logging
import operator

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..graph_meta import graph_fake_mode, meta_key, propagate_fake_values
from ..report import Report
from ..targets import normalize
from ..values import fake_value

log = logging.getLogger(__name__)

Node = torch.fx.Node

_CASTS = {"float", "to", "type_as", "_to_copy", "type", "double", "half", "bfloat16"}
_SPLIT_INTO_PAIRS = {"reshape", "view", "unflatten"}
_MERGE_PAIRS = {"flatten", "reshape", "view"}
_KERNEL_INPUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_KERNEL_TABLE_DTYPES = (torch.complex64, torch.complex128)


@dataclasses.dataclass
class RotarySite:
    """One rotated tensor: ``last`` is the node whose value the kernel replaces."""

    mul: Node
    source: Node  # the real input x, before its float cast
    table: Node  # the complex table operand of the multiply
    last: Node
    chain: list[Node]  # mul, view_as_real, merge, cast: removed once replaced
    feeders: list[Node]  # view_as_complex, reshape, cast of x: removed if nothing else reads them
    layout: str  # "bshd", "bhsd" (heads before sequence) or "thd" (packed tokens)
    out_dtype: torch.dtype


def _eq(a, b) -> bool:
    return statically_known_true(a == b)


def _same_shape(a, b) -> bool:
    """Equal shapes, where needed by adding a guard: the idiom's own
    ``reshape(..., -1, 2)`` already requires ``2 * (D // 2) == D``, but with a
    dynamic head dim that fact is a runtime truth, not a symbolic identity."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if not _eq(x, y):
            try:
                if not bool(x == y):
                    return False
            except Exception:  # data-dependent: cannot decide
                return False
    return True


def _name(node) -> str | None:
    call = normalize(node) if isinstance(node, Node) and node.op in ("call_function", "call_method") else None
    return call.name if call else None


def _only_user(node: Node) -> Node | None:
    return next(iter(node.users)) if len(node.users) == 1 else None


class _Refused(Exception):
    pass


def _source_of_pairs(operand: Node) -> tuple[Node, list[Node]]:
    """x for ``view_as_complex(x[.float()].reshape(..., -1, 2))``, and the nodes in between."""
    if _name(operand) != "view_as_complex":
        raise _Refused("operand is not view_as_complex of the input")
    split = operand.args[0]
    if _name(split) not in _SPLIT_INTO_PAIRS:
        raise _Refused("pairs not made by reshape/view/unflatten")
    pairs_in, pairs = fake_value(split.args[0]), fake_value(split)
    if not (
        pairs.ndim == pairs_in.ndim + 1
        and _eq(pairs.shape[-1], 2)
        and all(_eq(a, b) for a, b in zip(pairs.shape[:-2], pairs_in.shape[:-1]))
    ):
        raise _Refused("the reshape does more than split the last dim into pairs")
    source = split.args[0]
    feeders = [operand, split]
    if _name(source) in _CASTS and isinstance(fake_value(source.args[0]), torch.Tensor):
        before = fake_value(source.args[0])
        # Rounding to float32 first is exact for the kernel's input dtypes.
        if before.dtype in _KERNEL_INPUT_DTYPES and before.device == pairs_in.device:
            feeders.append(source)
            source = source.args[0]
    if fake_value(source).dtype not in _KERNEL_INPUT_DTYPES:
        raise _Refused(f"input dtype {fake_value(source).dtype} is not bf16/fp16/fp32")
    return source, feeders


def _layout(product: torch.Tensor, table: torch.Tensor) -> str:
    """Which dims of the product are batch, sequence and heads, read off the table's broadcast."""
    if table.ndim > product.ndim or not _eq(table.shape[-1], product.shape[-1]):
        raise _Refused("table does not broadcast against the pairs")
    padded = [1] * (product.ndim - table.ndim) + list(table.shape)
    if product.ndim == 4:
        for layout, (b, s, h) in (("bshd", (0, 1, 2)), ("bhsd", (0, 2, 1))):
            if (
                _eq(padded[h], 1)
                and _eq(padded[s], product.shape[s])
                and (_eq(padded[b], 1) or _eq(padded[b], product.shape[b]))
            ):
                return layout
        raise _Refused("table is not [B or 1, S, 1, D/2] nor [B or 1, 1, S, D/2] for this input")
    if product.ndim == 3 and _eq(padded[1], 1) and _eq(padded[0], product.shape[0]):
        return "thd"
    raise _Refused(f"rank-{product.ndim} product is not [B, S, H, D/2], [B, H, S, D/2] or [T, H, D/2]")


def _match(mul: Node) -> RotarySite:
    a, b = mul.args[:2] if len(mul.args) >= 2 else (None, None)
    if not (isinstance(a, Node) and isinstance(b, Node)):
        raise _Refused("not a tensor × tensor multiply")
    table = b if _name(a) == "view_as_complex" else a
    x_operand = a if table is b else b
    source, feeders = _source_of_pairs(x_operand)
    product, table_value = fake_value(mul), fake_value(table)
    if not (isinstance(table_value, torch.Tensor) and table_value.dtype == product.dtype == fake_value(x_operand).dtype):
        raise _Refused("table and input differ in complex dtype (a promotion the kernel does not do)")
    if product.dtype not in _KERNEL_TABLE_DTYPES:
        raise _Refused(f"complex dtype {product.dtype}")
    if table_value.requires_grad:
        # The kernel's backward gives the table no gradient; fusing would drop it.
        raise _Refused("the table requires grad (the kernel gives it none)")
    layout = _layout(product, table_value)
    as_real = _only_user(mul)
    if _name(as_real) != "view_as_real":
        raise _Refused("product is used other than by one view_as_real")
    merge = _only_user(as_real)
    if _name(merge) not in _MERGE_PAIRS or not _same_shape(fake_value(merge).shape, fake_value(source).shape):
        raise _Refused("pairs are not merged back into the input's shape")
    chain, last = [mul, as_real, merge], merge
    cast = _only_user(merge)
    if _name(cast) in _CASTS and isinstance(fake_value(cast), torch.Tensor) and not fake_value(cast).is_complex():
        chain.append(cast)
        last = cast
    out_dtype = fake_value(last).dtype
    if out_dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise _Refused(f"output dtype {out_dtype}")
    return RotarySite(mul, source, table, last, chain, feeders, layout, out_dtype)


def find_rotary_sites(graph: torch.fx.Graph) -> tuple[list[RotarySite], list[tuple[Node, str]]]:
    """Sites of the idiom, and candidates refused with why.

    A candidate is ``view_as_real(view_as_complex(...) * table)``: the frame of
    the idiom. Complex multiplies outside that frame are not rotary code and are
    not reported.
    """
    sites, refused = [], []
    for node in graph.nodes:
        if _name(node) != "mul" or not isinstance(fake_value(node), torch.Tensor) or not fake_value(node).is_complex():
            continue
        # A candidate has the idiom's frame: view_as_complex(...) * table → view_as_real.
        if not any(_name(arg) == "view_as_complex" for arg in node.args[:2]):
            continue
        if not any(_name(user) == "view_as_real" for user in node.users):
            continue
        try:
            sites.append(_match(node))
        except _Refused as why:
            refused.append((node, str(why)))
    return sites, refused


def _kernel_refusal(site: RotarySite, fused_rotary: bool | None, dynamo_graph: bool) -> str | None:
    from ..kernels import rotary as kernel
    from ..kernels import rotary_cpu

    device = fake_value(site.source).device
    if device.type == "cpu":
        if fused_rotary is None and not dynamo_graph:
            # AOTInductor's C++ runtime cannot call an op whose CPU kernel is Python's.
            return "an aten graph (AOTInductor, export): its CPU runtime cannot call the Python-built CPU kernel"
        if not rotary_cpu.available() and not kernel.HAS_TRITON:
            return f"the CPU kernel could not be built ({rotary_cpu.unavailable_reason()}) and triton is not importable"
        if fused_rotary is None and not rotary_cpu.available():
            return (f"the CPU kernel could not be built ({rotary_cpu.unavailable_reason()}); "
                    "fused_rotary=True runs the Triton kernel in its interpreter, slowly")
        if fused_rotary is None:
            return _too_small_for_cpu_kernel(fake_value(site.source))
        return None
    if not kernel.HAS_TRITON:
        return "triton is not importable"
    if fused_rotary is None and device.type != "cuda":
        return f"tensors are on {device.type}; the fused kernel runs on CUDA and CPU"
    if fused_rotary is None and not torch.cuda.is_available():
        return "CUDA is not available"
    return None


# Below this many complex elements (pairs) per rotated tensor the CPU kernel's
# extern call is no faster than Inductor's code for the pair math (tiny decode
# steps). `python -m perf.rope_cpu_threshold` (one thread, S=1, static shapes,
# 2026-12-05, two runs): 128 and 1024 pairs per q took 59-64 us fused against
# 58-67 unfused (a tie); from 4096 pairs the kernel won both runs (62-65 against
# 65-69; 16384: 70-71 against 90-91). Training steps (B=1-4, S=4-16, 8/2 heads,
# D=64) agreed: 4096 pairs 402-437 us fused against 411-465. (Until the C++ glue
# read a complex table without views, each call cost ~17 us more and the
# crossover sat at 16384.)
CPU_KERNEL_MIN_PAIRS = 4096


class _TooSmall(str):
    """A refusal for size alone, which a partner sharing the site's table can waive."""


def _too_small_for_cpu_kernel(value: torch.Tensor) -> str | None:
    """Why not to call the kernel: only where the size is known to be small.

    A dynamic size (a batch or sequence Dynamo marked dynamic) gets the kernel:
    the compiled code serves every size, and by measurement (2026-12-04, one
    thread, dynamic batch or sequence) the kernel is never slower than stock
    while Inductor's pair math is up to 1.8x slower than stock at the large
    ones (B=64 decode: 429 us against stock's 240 and the kernel's 170; S=2048:
    1059 against 643 and 505). At small sizes the kernel costs 13-19 us more a
    call than the pair math and stays faster than stock (74 against 99 at the
    tiny decode shape).
    """
    pairs = value.numel() // 2  # (a site's source is the real input)
    if not statically_known_true(pairs < CPU_KERNEL_MIN_PAIRS):
        return None
    return _TooSmall(f"{pairs} pairs on CPU, below {CPU_KERNEL_MIN_PAIRS}: the kernel's call "
                     "measured no faster than Inductor's code there; fused_rotary=True forces it")


def _pair_up(sites: list[RotarySite], order: dict[Node, int]) -> list[list[RotarySite]]:
    """q and k sharing a table (same input dtype, output dtype, layout, batch, seq, head dim) → one launch."""
    groups, used = [], set()
    for i, q in enumerate(sites):
        if i in used:
            continue
        used.add(i)
        group = [q]
        for j in range(i + 1, len(sites)):
            k = sites[j]
            if j in used or k.table is not q.table or not _compatible(q, k):
                continue
            # The launch goes where both inputs exist and before either result is used.
            launch_at = max(order[q.mul], order[k.mul])
            uses = [order[user] for site in (q, k) for user in site.last.users]
            if launch_at < min(uses, default=len(order)):
                group.append(k)
                used.add(j)
                break
        groups.append(group)
    return groups


def _compatible(q: RotarySite, k: RotarySite) -> bool:
    qv, kv = fake_value(q.source), fake_value(k.source)
    if q.layout != k.layout or q.out_dtype != k.out_dtype or qv.dtype != kv.dtype or qv.ndim != kv.ndim:
        return False
    head_dim = 1 if q.layout == "bhsd" else qv.ndim - 2  # heads may differ: [B,S,H,D], [B,H,S,D], [T,H,D]
    return all(_eq(a, b) for d, (a, b) in enumerate(zip(qv.shape, kv.shape)) if d != head_dim)


class _Emitter:
    """Inserts the kernel call for a group of sites, with fake metadata."""

    def __init__(self, graph: torch.fx.Graph):
        self.graph = graph
        self.fake_mode = graph_fake_mode(graph)
        self.key = meta_key(graph)

    def call(self, target, *args, origin: Node, method: bool = False) -> Node:
        node = (self.graph.call_method if method else self.graph.call_function)(target, args)
        propagate_fake_values([node], origin, self.fake_mode, self.key)
        return node

    def kernel_input(self, site: RotarySite) -> Node:
        """x as ``[B, S, H, D]`` (a view)."""
        if site.layout == "bhsd":
            return self.call("transpose", site.source, 1, 2, origin=site.mul, method=True)
        if site.layout == "thd":
            return self.call("unsqueeze", site.source, 0, origin=site.mul, method=True)
        return site.source

    def kernel_output(self, site: RotarySite, out: Node) -> Node:
        if site.layout == "bhsd":
            return self.call("transpose", out, 1, 2, origin=site.mul, method=True)
        if site.layout == "thd":
            return self.call("squeeze", out, 0, origin=site.mul, method=True)
        return out

    def table(self, site: RotarySite) -> Node:
        """The complex table as real pairs ``[Bt, S, D/2, 2]``."""
        product = fake_value(site.mul)
        pairs = self.call(torch.view_as_real, site.table, origin=site.mul)
        for _ in range(product.ndim - fake_value(site.table).ndim):
            pairs = self.call("unsqueeze", pairs, 0, origin=site.mul, method=True)
        if site.layout == "bshd":
            return self.call("squeeze", pairs, 2, origin=site.mul, method=True)
        if site.layout == "bhsd":
            return self.call("squeeze", pairs, 1, origin=site.mul, method=True)
        squeezed = self.call("squeeze", pairs, 1, origin=site.mul, method=True)
        return self.call("unsqueeze", squeezed, 0, origin=site.mul, method=True)


def _emit(graph: torch.fx.Graph, group: list[RotarySite], order: dict[Node, int]) -> None:
    from ..kernels import rotary as kernel  # noqa: F401  (registers the ops)

    emitter = _Emitter(graph)
    anchor = max(group, key=lambda site: order[site.mul]).mul
    new_nodes_start = anchor.prev
    try:
        with graph.inserting_before(anchor):
            table = emitter.table(group[0])
            inputs = [emitter.kernel_input(site) for site in group]
            out_dtype = group[0].out_dtype
            if len(group) == 2:
                both = emitter.call(torch.ops.inductor_complex.rotary_embedding.default, *inputs, table, out_dtype, origin=anchor)
                outs = [emitter.call(operator.getitem, both, i, origin=anchor) for i in range(2)]
            else:
                outs = [emitter.call(torch.ops.inductor_complex.rotary_embedding_single.default, inputs[0], table, out_dtype, origin=anchor)]
            results = [emitter.kernel_output(site, out) for site, out in zip(group, outs)]
        for site, result in zip(group, results):
            want, got = fake_value(site.last), fake_value(result)
            if got.dtype != want.dtype or not _same_shape(got.shape, want.shape):
                raise _Refused(f"kernel result {got.dtype}{tuple(got.shape)} for {want.dtype}{tuple(want.shape)}")
    except Exception:
        cursor = anchor.prev
        while cursor is not new_nodes_start:
            previous = cursor.prev
            graph.erase_node(cursor)
            cursor = previous
        raise
    for site, result in zip(group, results):
        site.last.replace_all_uses_with(result)
        for node in [*reversed(site.chain), *site.feeders]:
            if not node.users:
                graph.erase_node(node)


def fuse_rotary_sites(graph: torch.fx.Graph, report: Report, fused_rotary: bool | None) -> None:
    """Replace every rotary site the kernel can serve; log and count the rest."""
    if fused_rotary is False:
        return
    sites, refused = find_rotary_sites(graph)
    for node, reason in refused:
        report.add(node, "rotary idiom", "fused_refused", reason)
    ready, small, dynamo_graph = [], [], meta_key(graph) == "example_value"
    for site in sites:
        reason = _kernel_refusal(site, fused_rotary, dynamo_graph)
        if reason is None:
            ready.append(site)
        elif isinstance(reason, _TooSmall):
            small.append((site, reason))
        else:
            report.add(site.mul, "rotary idiom", "fused_refused", reason)
    for site, reason in small:
        # A small k beside a q the kernel takes (one table) joins q's call: the pair
        # costs one call, where apart it cost a call, Inductor's kernel and the table's view.
        if any(other.table is site.table and _compatible(other, site) for other in ready):
            ready.append(site)
        else:
            report.add(site.mul, "rotary idiom", "fused_refused", reason)
    if not ready:
        return
    order = {node: i for i, node in enumerate(graph.nodes)}
    for group in _pair_up(ready, order):
        try:
            _emit(graph, group, order)
        except Exception as error:  # the generic rewrite still handles these sites
            for site in group:
                report.add(site.mul, "rotary idiom", "fused_refused", f"kernel call failed: {type(error).__name__}: {error}")
            continue
        for site in group:
            report.add(site.mul, "rotary_embedding" if len(group) == 2 else "rotary_embedding_single", "fused")
