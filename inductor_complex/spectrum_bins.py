"""A spectrum read only through slices of its transformed dims is computed only there.

FNO's ``rfft2(x)[..., :m1, :m2]`` and ``[..., -m1:, :m2]`` keep a few of the
bins: an FFT kernel computes them all anyway, but a DFT product (rules/fft.py)
computes each bin on its own, so only the kept ones need computing. Before the
walk, where FFTs become DFT products (``real_ffts``), each slice of a
transform along one of its dims whose every reader is such a slice becomes
``inductor_complex::fft_bins``: the transform restricted to those bins, which
eager runs as the FFT and the slice (and so gives the same numbers), and whose
rule is the DFT of those bins alone. Slices of slices fold in turn.

Only in aten graphs, which spell the transforms ``_fft_r2c`` and ``_fft_c2c``,
and only where nothing writes the spectrum (a slice is a view of it; the
folded bins are a tensor of their own).
"""

from __future__ import annotations

import torch
import torch.fx

from .graph_meta import fake_run
from .mutation import mutates, shares_storage
from .rules import dft_bases
from .values import fake_value

Node = torch.fx.Node
aten = torch.ops.aten


@torch.library.custom_op("inductor_complex::fft_bins", mutates_args=())
def fft_bins(x: torch.Tensor, forward_r2c: bool, dim: list[int], normalization: int, flag: bool,
             bin_dims: list[int], starts: list[int], stops: list[int], steps: list[int]) -> torch.Tensor:
    """``_fft_r2c(x, dim, normalization, onesided=flag)`` (``forward_r2c``) or
    ``_fft_c2c(x, dim, normalization, forward=flag)``, sliced to
    ``range(start, stop, step)`` along each of ``bin_dims``."""
    return _sliced_spectrum(x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps).clone()


@fft_bins.register_fake
def _(x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps):
    spectrum = _sliced_spectrum(x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps)
    return torch.empty_like(spectrum, memory_format=torch.contiguous_format)


def _sliced_spectrum(x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps):
    spectrum = (aten._fft_r2c if forward_r2c else aten._fft_c2c)(x, dim, normalization, flag)
    for d, start, stop, step in zip(bin_dims, starts, stops, steps):
        spectrum = spectrum[(slice(None),) * d + (slice(start, stop, step),)]
    return spectrum


_TRANSFORMS = {aten._fft_r2c.default: True, aten._fft_c2c.default: False}
_FFT_BINS = torch.ops.inductor_complex.fft_bins.default


def _as_bins_call(node: Node):
    """``node`` as ``fft_bins``' arguments (a transform is one with no bins yet), or None."""
    if node.op != "call_function":
        return None
    if node.target in _TRANSFORMS:
        x, dim, normalization, flag = node.args
        return [x, _TRANSFORMS[node.target], list(dim), normalization, flag, [], [], [], []]
    if node.target is _FFT_BINS:
        return [node.args[0], *node.args[1:3], *node.args[3:5], *(list(a) for a in node.args[5:])]
    return None


def _kept(slice_node: Node, spectrum) -> tuple[int, range] | None:
    """The transformed-dim bins a slice keeps, as (dim, range), or None."""
    if slice_node.op != "call_function" or slice_node.target is not aten.slice.Tensor or slice_node.kwargs:
        return None
    _, d, start, stop, step = (*slice_node.args, *(None, 0, None, None, 1)[len(slice_node.args):])
    if any(not isinstance(v, (int, type(None))) for v in (d, start, stop, step)) or (step or 1) < 1:
        return None
    d = d + spectrum.ndim if d < 0 else d
    size = spectrum.shape[d]
    if not isinstance(size, int):
        return None
    return d, range(*slice(start, stop, step).indices(size))


def fold_spectrum_slices(graph: torch.fx.Graph) -> int:
    """Fold slices of transforms into ``fft_bins`` calls (module docstring); returns how many."""
    folded: list[Node] = []
    todo = [n for n in graph.nodes if _as_bins_call(n) is not None]
    while todo:
        node = todo.pop(0)
        made = _fold_readers(graph, node)
        folded += made
        todo += made  # (their own slices fold next)
    if folded:
        _refresh_views_of(graph, set(folded))
    return len(folded)


def _fold_readers(graph: torch.fx.Graph, node: Node) -> list[Node]:
    """``node``'s slices, each as an ``fft_bins`` call, where every reader is one."""
    call, spectrum = _as_bins_call(node), fake_value(node)
    if not isinstance(spectrum, torch.Tensor) or not node.users or mutates(node):
        return []
    x, forward_r2c, dim, normalization, flag, bin_dims, starts, stops, steps = call
    transformed = {d % spectrum.ndim for d in dim}
    kept = {user: _kept(user, spectrum) for user in node.users}
    if any(k is None or k[0] not in transformed or k[0] in bin_dims for k in kept.values()):
        return []  # a reader of the whole spectrum (or of a dim already folded)
    if any(mutates(u) for user in node.users for u in user.users):
        return []
    made = []
    for user, (d, bins) in kept.items():
        if not _fits(x, d, len(bins), dim, forward_r2c):
            continue
        args = (x, forward_r2c, dim, normalization, flag, [*bin_dims, d], [*starts, bins.start],
                [*stops, bins.stop], [*steps, bins.step])
        with graph.inserting_before(user):
            bins_call = graph.call_function(_FFT_BINS, args)
        bins_call.meta = {k: v for k, v in user.meta.items() if k != "val"}
        with fake_value(user).fake_mode:
            bins_call.meta["val"] = _FFT_BINS(fake_value(x), *args[1:])
        user.replace_all_uses_with(bins_call)
        graph.erase_node(user)
        made.append(bins_call)
    if not node.users:
        graph.erase_node(node)
    return made


def _refresh_views_of(graph: torch.fx.Graph, changed: set[Node]) -> None:
    """Fake values again for the views read from the folded calls: they were
    views of the spectrum, and the rewrite checks each result's aliasing by them."""
    for node in graph.nodes:
        if node in changed or node.op != "call_function" or not any(a in changed for a in node.all_input_nodes):
            continue
        value = fake_value(node)
        if not isinstance(value, torch.Tensor):
            continue
        again = fake_run(node, value.fake_mode, grad_enabled=False)
        if any(shares_storage(again, fake_value(a)) for a in node.all_input_nodes if a in changed):
            node.meta["val"] = again  # (a tensor of its own keeps its value, and its views theirs)
            changed.add(node)


def _fits(x: Node, d: int, bins: int, dim, forward_r2c: bool) -> bool:
    """Whether the DFT rule will take the folded call (else it stays eager's: the FFT and a slice)."""
    signal = fake_value(x)
    n = signal.shape[d]
    if not isinstance(n, int):
        return False
    part = signal.dtype.to_real() if signal.is_complex() else signal.dtype
    kind = "r2c" if forward_r2c and d == dim[-1] % signal.ndim else "c2c"
    return part in (torch.float32, torch.float64) and dft_bases.basis_elements(kind, n, bins) <= dft_bases.MAX_BASIS_ELEMENTS
