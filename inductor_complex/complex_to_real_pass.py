"""The Inductor pre-grad pass that turns complex tensors into real pairs.

Inductor refuses to generate code for any op that reads or writes a complex
tensor and runs it eagerly instead. Run before autograd, this pass rewrites
complex values as real ``[..., 2]`` tensors and complex ops as real math, so
Inductor fuses them like any other code and autograd derives real backward
graphs. It never raises: a graph it cannot handle is left exactly as it was.
"""

from __future__ import annotations

import collections
import functools
import logging
import pathlib

import torch
import torch.fx
from torch._dynamo.utils import counters
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files
from torch._inductor.virtualized import V

from . import lone_products, pair_planes
from .aten_lowering import lower_to_aten
from .complex_outputs import view_pairs_as_complex
from .graph_meta import meta_key
from .inductor_nodes import cpu_code_is_cpp
from .matmul_calls import call_kernel_op
from .pair_planes import compute_pairs_in_planes
from .report import COUNTER, Report
from .rewrite import ComplexRewriter, GraphLeftUnchanged, graph_has_complex
from .rotary.pattern import fuse_rotary_sites
from .spectrum_bins import fold_spectrum_slices
from .rotary.table_edges import read_complex_tables
from .targets import unwrap_edge_ops

log = logging.getLogger(__name__)

_PACKAGE_DIR = pathlib.Path(__file__).parent
REPORTS_KEPT = 64  # recent graphs whose reports `ComplexToRealPass.reports` keeps


@functools.lru_cache(1)
def _source_files() -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in _PACKAGE_DIR.rglob("*.py")))


class ComplexToRealPass(CustomGraphPass):
    """Rewrite complex values as real pairs; install as ``pre_grad_custom_pass``.

    Options:
        fused_rotary: send the complex rotary-embedding idiom to the fused
            kernel. ``None`` (default) decides per site: on for CUDA tensors
            when Triton works, and for CPU tensors under ``torch.compile``
            when the C kernel builds and the rotated tensor holds 4096
            pairs or more (smaller ones measured faster unfused; not in aten graphs: AOTInductor's CPU
            runtime cannot call it). ``True`` forces it, ``False`` turns it off.
        complex_blas_on_cpu: under ``torch.compile``, send products of two
            complex matrices on CPU to eager's complex BLAS through an opaque
            op on the real pairs (:mod:`.eager_kernels`). ``None`` (default)
            does so for products of at least 2^18 multiply-adds per thread
            (static sizes; it measured faster than the real GEMM form at every
            square size, and slower for one model's smaller products), ``True``
            for every one, ``False`` for none.
            Exported programs and AOTInductor always get the real GEMM form
            (their runtimes cannot call the op).
        planes_on_cpu: past autograd on CPU, compute each piece of pair math
            as separate real and imaginary planes, and move pairs in and out
            of memory as one word each, so Inductor's loops vectorize
            (:mod:`.pair_planes`). ``None`` (default) does so where Inductor's
            vector code is AVX-512 (on AVX2 it emulates the words' 64-bit
            shifts, and planes measured slower than pairs) and the piece
            holds enough pairs to pay for the extern views it adds (sizes
            measured, ``pair_planes.MIN_PAIRS_PER_EXTERN_CALL``), ``True``
            wherever it can, ``False`` nowhere. A piece whose loops would also
            compute a transcendental function stays as it is either way
            (their vector forms round otherwise). Not in AOTInductor's graphs.
            Where pair math stays in pairs (scalar loops), a complex product
            that is only returned is written part by part, one pass over the
            pairs, instead of the pair-swap form that fuses into its readers;
            a new complex result is a ``view.dtype`` of its pair buffer
            rather than a copy (:mod:`.complex_outputs`); and under
            ``torch.compile`` a product of graph inputs that is only returned,
            with nothing to fuse, stays eager's complex op
            (:mod:`.lone_products`); where they vectorize, unless planes are
            asked for everywhere, such products of complex128 inputs do (their
            float64 parts take no plane).
        real_ffts: compute ``_fft_r2c``, ``_fft_c2c`` and ``_fft_c2r`` (what
            every ``torch.fft`` function, ``stft`` and ``istft`` become in aten
            graphs) as products with real DFT bases held as constants
            (:mod:`.rules.fft`), for runtimes that have no FFT on real pairs
            (AOTInductor packages for ExecuTorch's CUDA backend, TensorRT).
            ``False`` (default) keeps FFT kernels, faster at size. Bases grow as
            ``n^2``: longer transforms than ``rules.dft_bases.MAX_BASIS_ELEMENTS``
            allows stay FFTs. Under ``torch.compile`` Dynamo's graph keeps its
            FFTs and the post-grad companion rewrites them in the forward and
            backward graphs (a spectrum the forward saves for backward stays one).
    """

    lowers_to_aten = False  # see PostGradComplexToRealPass

    def __init__(self, *, fused_rotary: bool | None = None, complex_blas_on_cpu: bool | None = None,
                 planes_on_cpu: bool | None = None, real_ffts: bool = False):
        for name, value in (("fused_rotary", fused_rotary), ("complex_blas_on_cpu", complex_blas_on_cpu),
                            ("planes_on_cpu", planes_on_cpu)):
            if value is not None and not isinstance(value, bool):  # 0 == False: not an option
                raise TypeError(f"{name} must be None, True or False, got {value!r}")
        if not isinstance(real_ffts, bool):
            raise TypeError(f"real_ffts must be True or False, got {real_ffts!r}")
        self.fused_rotary = fused_rotary
        self.complex_blas_on_cpu = complex_blas_on_cpu
        self.planes_on_cpu = planes_on_cpu
        self.real_ffts = real_ffts
        if fused_rotary is not False:
            # Register the kernel ops now: a compile served from Inductor's caches
            # calls them without running the pass, which would have imported them.
            from .kernels import rotary  # noqa: F401
        self.last_report: Report | None = None
        # Inductor calls the pass once per graph, higher-order-op bodies
        # (torch.cond branches, checkpointed regions) before their parent, so
        # `last_report` alone would hide what happened inside them.
        self.reports: collections.deque[Report] = collections.deque(maxlen=REPORTS_KEPT)
        # The same rewrite after autograd (``enable()`` installs both); its
        # reports are those of the forward and backward aten graphs.
        self.post_grad = None if self.lowers_to_aten else PostGradComplexToRealPass(
            complex_blas_on_cpu=complex_blas_on_cpu, planes_on_cpu=planes_on_cpu, real_ffts=real_ffts)
        # and the fused rotary sites' tables, on the graph autograd traced before it
        # is split into forward and backward.
        self.joint = None if self.lowers_to_aten else JointGraphTables()

    def __deepcopy__(self, memo):
        # Inductor deep-copies configs (AOTInductor's inductor_configs); the pass
        # holds only immutable options, and sharing it keeps `last_report` visible.
        return self

    def options(self) -> dict:
        return {"fused_rotary": self.fused_rotary, "complex_blas_on_cpu": self.complex_blas_on_cpu,
                "planes_on_cpu": self.planes_on_cpu, "real_ffts": self.real_ffts}

    def inductor_options(self) -> dict:
        """``torch.compile(model, options=p.inductor_options())``: this pass
        before autograd and its ``joint`` and ``post_grad`` companions after it,
        for one compile."""
        return {"pre_grad_custom_pass": self, "joint_custom_post_pass": self.joint,
                "post_grad_custom_pre_pass": self.post_grad}

    def _cache_key_parts(self) -> str:
        # The default's matmul choice depends on the thread count (eager_kernels).
        threads = torch.get_num_threads() if self.complex_blas_on_cpu is None else None
        # and its planes choice on the CPU's vector ISA (pair_planes).
        words_vectorize = pair_planes.words_unvectorized_reason() is None if self.planes_on_cpu is None else None
        return repr((type(self).__name__, sorted(self.options().items()), threads, words_vectorize))

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"ComplexToRealPass({opts})"

    def uuid(self) -> bytes:
        # Inductor keys its caches on this: any change to the package's source
        # or to the options must give a new id.
        return get_hash_for_files(_source_files(), self._cache_key_parts())

    def _rewriter_options(self, graph: torch.fx.Graph) -> dict:
        # Dynamo's graph (torch.compile) carries "example_value"; AOTInductor
        # hands this hook an aten graph, whose runtime must not see complex.
        dynamo_graph = meta_key(graph) == "example_value"
        return {"complex_blas_on_cpu": self.complex_blas_on_cpu if dynamo_graph else False,
                "scalar_pair_loops_on_cpu": self.scalar_pair_loops_on_cpu(),
                "keep_lone_products": self.lone_products_kept() if dynamo_graph else None,
                "backward_rewritten": dynamo_graph and companion_installed() and not is_body_graph(graph),
                # (Dynamo's graphs leave their FFTs to the post-grad companion: AOTAutograd
                # has taken the module's buffers before this hook, so no basis could be one)
                "real_ffts": self.real_ffts and not dynamo_graph,
                "constants_as_pairs": not dynamo_graph and V.aot_compilation}

    def scalar_pair_loops_on_cpu(self) -> bool:
        """Inductor's CPU loops over pairs stay scalar: the post-grad companion does not
        compute pair math in planes here (see ``planes_on_cpu``). Not where Inductor
        writes Triton for CPU tensors: its pair loops there are the ones it writes on a GPU."""
        if not cpu_code_is_cpp():
            return False
        if self.planes_on_cpu is None:
            return pair_planes.words_unvectorized_reason() is not None
        return not self.planes_on_cpu

    def lone_products_kept(self) -> str | None:
        """Which complex products with nothing to fuse stay eager's under torch.compile
        (:mod:`.lone_products`): with one cheap op of their operands where pair loops
        are scalar; else those of complex128 inputs, whose pairs no plane takes,
        unless planes are asked for everywhere. (Measured on Inductor's C++ code only.)"""
        if not cpu_code_is_cpp():
            return None
        if self.scalar_pair_loops_on_cpu():
            return lone_products.WITH_CHEAP_OPERANDS
        return None if self.planes_on_cpu is True else lone_products.OF_FLOAT64_INPUTS

    def aten_decompositions(self) -> dict | None:
        """How the rules' torch-level calls are traced into aten ops, where the
        graph must hold aten ops only (``None``: as Inductor decomposes)."""
        return None

    def __call__(self, graph: torch.fx.Graph) -> None:
        report = Report()
        self.last_report = report
        self.reports.append(report)
        rewriter, walk_starts = None, 0
        try:
            if not graph_has_complex(graph):
                return
            unwrap_edge_ops(graph)  # ExecuTorch's Edge programs, as its AOTInductor backends hand them over
            fuse_rotary_sites(graph, report, self.fused_rotary)
            options = self._rewriter_options(graph)
            if options.get("real_ffts"):  # (only where the rules will take the folded calls)
                fold_spectrum_slices(graph)
            walk_starts = len(report.decisions)  # the fused sites stay fused if the walk is undone
            rewriter = ComplexRewriter(graph, report, **options)
            rewriter.run()
            if self.lowers_to_aten:
                lower_to_aten(graph, rewriter.fake_mode, self.aten_decompositions())
        except GraphLeftUnchanged as why:
            rewriter.undo()
            report.withdraw_since(walk_starts)
            report.add(why.node, why.op, "kept", f"{why.reason}; graph left unchanged")
        except Exception as error:  # never break the user's compile
            counters[COUNTER]["pass_failed"] += 1
            log.warning(
                "inductor_complex: rewrite failed (%s: %s); graph left unchanged",
                type(error).__name__, error, exc_info=log.isEnabledFor(logging.DEBUG),
            )
            if rewriter is not None:
                report.withdraw_since(walk_starts)
                try:
                    rewriter.undo()
                except Exception:  # pragma: no cover - undo only resets args and erases its own nodes
                    log.error("inductor_complex: could not undo a failed rewrite", exc_info=True)
        finally:
            report.commit()


class PostGradComplexToRealPass(ComplexToRealPass):
    """The same rewrite for AOTAutograd's functional aten graphs, forward and
    backward; install as ``post_grad_custom_pre_pass``.

    A pre-grad pass never sees a backward graph: what stays complex before
    autograd (FFTs, which have no real-pair form) gives complex gradient math
    (``slice_scatter``, ``mul``, ``full``, ``copy`` of complex tensors) that only
    appears after it. Inductor lowers these graphs as they are, so the rules'
    torch-level calls are traced into aten ops (:mod:`.aten_lowering`).
    """

    lowers_to_aten = True

    def __init__(self, *, complex_blas_on_cpu: bool | None = None, planes_on_cpu: bool | None = None,
                 real_ffts: bool = False):
        # (rotary sites are fused before autograd)
        super().__init__(fused_rotary=False, complex_blas_on_cpu=complex_blas_on_cpu, planes_on_cpu=planes_on_cpu,
                         real_ffts=real_ffts)

    def __repr__(self) -> str:
        return (f"PostGradComplexToRealPass(complex_blas_on_cpu={self.complex_blas_on_cpu!r}, "
                f"planes_on_cpu={self.planes_on_cpu!r}, real_ffts={self.real_ffts!r})")

    def __call__(self, graph: torch.fx.Graph) -> None:
        super().__call__(graph)
        if V.aot_compilation:
            return  # (AOTInductor's graphs get neither op, and its C++ wrapper no dtype views)
        steps = [(call_kernel_op, {}), (read_complex_tables, {})]  # the kernel ops' calls, past autograd
        if self.planes_on_cpu is not False:
            steps.append((compute_pairs_in_planes, {"always": self.planes_on_cpu is True}))
        steps.append((view_pairs_as_complex, {}))  # new complex results the planes left as copies
        for step, options in steps:
            try:
                step(graph, **options)
            except Exception as error:  # each change a step makes is whole: the graph still runs
                log.warning("inductor_complex: %s failed (%s: %s); what it had not reached is left as it was",
                            step.__name__, type(error).__name__, error)

    def _rewriter_options(self, graph: torch.fx.Graph) -> dict:
        # A backward graph's outputs are gradients, which autograd takes as they
        # come (views of a real buffer included). Any other graph returns the
        # caller's tensors, already given eager's aliasing by the pre-grad pass.
        return {"keep_writes": True, "keep_returned": not is_backward_graph(graph),
                "complex_blas_on_cpu": False if V.aot_compilation else self.complex_blas_on_cpu,
                "scalar_pair_loops_on_cpu": V.aot_compilation or self.scalar_pair_loops_on_cpu(),
                "keep_lone_products": None if V.aot_compilation else self.lone_products_kept(),
                "real_ffts": self.real_ffts}


def companion_installed() -> bool:
    """Whether the compile running this pass rewrites complex ops after autograd
    too: its ``post_grad_custom_pre_pass`` is the companion (``install()``,
    ``inductor_options()``). Rules may then leave complex math to the backward
    graph (:mod:`.rules.eager_derivative`)."""
    return isinstance(torch._inductor.config.post_grad_custom_pre_pass, PostGradComplexToRealPass)


def is_body_graph(graph: torch.fx.Graph) -> bool:
    """A body of a higher-order op in Dynamo's graph (a ``torch.cond`` branch, a
    checkpointed region): Dynamo marks only the graph it hands the backend
    (``dynamo_flat_name_to_original_fqn`` in its module's meta). After autograd
    those bodies are not the graphs Inductor's post-grad hook gets, so complex
    math left to their backward would stay complex."""
    module = graph.owning_module
    return module is None or "dynamo_flat_name_to_original_fqn" not in getattr(module, "meta", {})


def is_backward_graph(graph: torch.fx.Graph) -> bool:
    """AOTAutograd's backward graphs take the tangents as ``tangents_1``, ``tangents_2``, ..."""
    return any(n.name.startswith("tangents") for n in graph.find_nodes(op="placeholder"))


class JointGraphTables(CustomGraphPass):
    """The fused CPU rotary sites read the complex table itself, in the graph
    AOTAutograd traced before splitting it into forward and backward; install as
    ``joint_custom_post_pass``.

    Past the split it is too late for training: the forward saves the table's
    pairs, a view it makes with an extern ``view_as_real`` call (~10 us of the
    quick CPU training rope's ~460). Here both ops still read that view and take
    the table instead (:mod:`.rotary.table_edges`), which the backward then saves
    as it came in. Inference graphs pass through here too.
    """

    def __call__(self, graph: torch.fx.Graph) -> None:
        if V.aot_compilation:
            return  # (AOTInductor's graphs get no kernel op; see PostGradComplexToRealPass)
        try:
            read_complex_tables(graph)
        except Exception as error:  # the step's changes are whole: the graph still runs
            log.warning("inductor_complex: read_complex_tables failed on a joint graph (%s: %s); "
                        "the graph is left as it was", type(error).__name__, error)

    def __repr__(self) -> str:
        return "JointGraphTables()"

    def uuid(self) -> bytes:
        return get_hash_for_files(_source_files(), type(self).__name__)
