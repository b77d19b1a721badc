"""The CPU rotary kernel registered with the dispatcher from C++.

Why: compiled code calls ``inductor_complex::rotary_embedding_cpu`` (and
``..._single_cpu``) once per rope site. Through a Python kernel each call
paid about 55 us before the C kernel ran (the dispatcher's jump into Python,
argument checks, ctypes), which at decode shapes was as much as the kernel's
own time. Built against the installed torch's headers, the same C kernel
(:data:`rotary_cpu._SOURCE`) plus the glue below registers as those ops'
``CPU`` kernel, so the dispatcher calls it directly.

The Python kernels stay registered under ``CompositeExplicitAutograd``: a
backend's own kernel outranks that key, so the C++ one serves CPU tensors once
loaded, and the Python one serves them before (a compile-cache hit in a fresh
process) or where this build failed (no headers, another compiler); no kernel
is registered twice. With ``TRITON_INTERPRET=1`` the C++ kernel hands the call
back to the Python one, which runs the Triton kernel in its interpreter (how
the tests check the Triton kernel's numerics).

The library also exports ``inductor_complex_rotary_into``, which writes into
outputs the caller allocated: compiled code reaches it through a small Python
binding (:mod:`.rotary_cpu_direct`) rather than through the dispatcher.
"""

from __future__ import annotations

import torch

# Appended to rotary_cpu._SOURCE, whose extern "C" entry points it calls.
GLUE_SOURCE = r"""
#include <torch/library.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/empty.h>
#include <ATen/Parallel.h>
#include <atomic>
#include <optional>
#include <tuple>

typedef void (*rotary_fn)(const void*, void*, int64_t, int64_t, int64_t, int64_t, const void*, void*,
                         int64_t, int64_t, int64_t, int64_t, const void*, int64_t, int64_t, int64_t,
                         int64_t, int, int);
/* Indexed by element_code(x), the math type (float32, float64), element_code(out). */
#define ENTRY(IN, M, OUT) (rotary_fn)rotary_##IN##_##M##_##OUT
#define BY_OUT(IN, M) {ENTRY(IN, M, f32), ENTRY(IN, M, f64), ENTRY(IN, M, bf16), ENTRY(IN, M, f16)}
#define BY_MATH(IN) {BY_OUT(IN, f32), BY_OUT(IN, f64)}
static const rotary_fn entry_points[4][2][4] = {BY_MATH(f32), BY_MATH(f64), BY_MATH(bf16), BY_MATH(f16)};

static std::atomic<int64_t> launches{0};
extern "C" int64_t rotary_cpu_op_launches() { return launches.load(); }

static int element_code(at::ScalarType t) {
    switch (t) {
        case at::kFloat: return 0;
        case at::kDouble: return 1;
        case at::kBFloat16: return 2;
        case at::kHalf: return 3;
        default: TORCH_CHECK(false, "rotary_embedding_cpu: unsupported dtype ", t);
    }
}

static bool interpreter_requested() {
    const char* value = getenv("TRITON_INTERPRET");
    return value && strcmp(value, "1") == 0;
}

/* The Python kernel of the same op (see the module docstring). */
static c10::Stack call_python_kernel(const char* op_name, c10::Stack stack) {
    auto op = c10::Dispatcher::singleton().findSchemaOrThrow(op_name, "");
    op.callBoxedForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd, stack);
    return stack;
}

static at::Tensor head_dim_contiguous(const at::Tensor& x) { return x.stride(3) == 1 ? x : x.contiguous(); }

/* The table as the kernel reads it: rows of S x D/2 pairs in the math type, a pointer
   and a row stride (in real elements), no tensor views made (at decode shapes each
   view cost more than the kernel's own work). */
struct Table {
    at::Tensor owner;  /* keeps the data alive: the table itself, or its converted copy */
    const void* data;
    int64_t rows, row_stride;
    bool fp64;
};

/* A real table is pairs [Bt, S, D/2, 2]. Past autograd a graph may pass the complex
   table it holds (rotary/table_edges.py): contiguous, the same elements in order. */
static Table table_of(const at::Tensor& given, const at::Tensor& x) {
    TORCH_CHECK(given.device().is_cpu(), "rotary_embedding_cpu: the table must be on the CPU, got ", given.device());
    int64_t S = x.size(1), half = x.size(3) / 2;
    Table t;
    if (given.is_complex()) {
        TORCH_CHECK(S > 0 && half > 0 && given.numel() % (S * half) == 0,
                    "rotary_embedding_cpu: a complex table of ", given.sizes(), " does not hold whole rows of ",
                    S, " positions by ", half, " pairs");
        t.fp64 = given.scalar_type() == at::kComplexDouble;
        bool math_type = t.fp64 || given.scalar_type() == at::kComplexFloat;  /* else complex32: convert */
        t.owner = (math_type && given.is_contiguous()) ? given : given.to(t.fp64 ? at::kComplexDouble : at::kComplexFloat).contiguous();
        t.rows = given.numel() / (S * half);
        t.row_stride = S * half * 2;
    } else {
        TORCH_CHECK(given.dim() == 4 && given.size(3) == 2 && given.size(1) == S && given.size(2) == half,
                    "rotary_embedding_cpu: ", x.sizes(), " does not match the table ", given.sizes(),
                    " (real pairs [Bt, S, D/2, 2])");
        t.fp64 = given.scalar_type() == at::kDouble;
        at::ScalarType math = t.fp64 ? at::kDouble : at::kFloat;
        t.owner = (given.scalar_type() == math && given.is_contiguous())
                      ? given : given.to(math).contiguous();  /* small: one row per position */
        t.rows = given.size(0);
        t.row_stride = t.owner.stride(0);
    }
    t.data = t.owner.data_ptr();
    return t;
}

static void check_input(const char* name, const at::Tensor& x, const Table& table, int64_t S, int64_t D) {
    TORCH_CHECK(x.device().is_cpu() && x.dim() == 4, "rotary_embedding_cpu: ", name,
                " must be a 4-d CPU tensor [B, S, H, D], got ", x.sizes(), " on ", x.device());
    TORCH_CHECK(x.size(1) == S && x.size(3) == D && (table.rows == 1 || table.rows == x.size(0)),
                "rotary_embedding_cpu: ", name, " ", x.sizes(), " does not match the table (", table.rows,
                " rows of ", S, " positions, head dim ", D, ")");
}

/* The table as the kernel reads it, once q [B, S, Hq, D] (and k [B, S, Hk, D]) are checked against it. */
static Table checked_table(const at::Tensor& q, const at::Tensor* k, const at::Tensor& table_given) {
    TORCH_CHECK(q.dim() == 4 && q.size(3) % 2 == 0,
                "rotary_embedding_cpu: q must be a 4-d CPU tensor [B, S, H, D] with an even D, got ", q.sizes());
    Table table = table_of(table_given, q);
    check_input("q", q, table, q.size(1), q.size(3));
    if (k) {
        check_input("k", *k, table, q.size(1), q.size(3));
        TORCH_CHECK(k->scalar_type() == q.scalar_type() && k->size(0) == q.size(0),
                    "rotary_embedding_cpu: q and k must share a dtype and a batch size");
    }
    return table;
}

/* One kernel call: checked q (and k) into contiguous outputs of one dtype. */
static void rotate_into(const at::Tensor& q_in, const at::Tensor* k_in, const Table& table, bool conjugate,
                        at::Tensor& q_out, at::Tensor* k_out) {
    rotary_fn fn = entry_points[element_code(q_in.scalar_type())][table.fp64][element_code(q_out.scalar_type())];
    at::Tensor q = head_dim_contiguous(q_in), k = k_in ? head_dim_contiguous(*k_in) : at::Tensor();
    int64_t B = q.size(0), S = q.size(1), Hq = q.size(2), D = q.size(3), Hk = k_in ? k.size(2) : 0;
    launches++;
    int64_t pairs = B * S * (Hq + Hk) * D / 2;
    if (!pairs) return;
    int threads = pairs >= PARALLEL_GRAIN ? at::get_num_threads() : 1;
    fn(q.data_ptr(), q_out.data_ptr(), Hq, q.stride(0), q.stride(1), q.stride(2),
       Hk ? k.data_ptr() : nullptr, Hk ? k_out->data_ptr() : nullptr, Hk,
       Hk ? k.stride(0) : 0, Hk ? k.stride(1) : 0, Hk ? k.stride(2) : 0,
       table.data, table.rows != 1 ? table.row_stride : 0, B, S, D / 2,
       conjugate, threads);
}

/* q [B, S, Hq, D] and, when given, k [B, S, Hk, D], rotated by the table into new tensors. */
static std::tuple<at::Tensor, at::Tensor> rotate(const at::Tensor& q, const at::Tensor* k,
                                                 const at::Tensor& table_given,
                                                 std::optional<at::ScalarType> out_dtype, bool conjugate) {
    Table table = checked_table(q, k, table_given);
    auto options = q.options().dtype(out_dtype.value_or(q.scalar_type()));
    at::Tensor q_out = at::empty(q.sizes(), options), k_out;
    if (k) k_out = at::empty(k->sizes(), options);
    rotate_into(q, k, table, conjugate, q_out, k ? &k_out : nullptr);
    return {q_out, k_out};
}

static std::tuple<at::Tensor, at::Tensor> rotary_pair(const at::Tensor& q, const at::Tensor& k,
                                                      const at::Tensor& table,
                                                      std::optional<at::ScalarType> out_dtype, bool conjugate) {
    if (interpreter_requested()) {
        c10::Stack results = call_python_kernel("inductor_complex::rotary_embedding_cpu",
                                                {q, k, table, out_dtype, conjugate});
        return {results[0].toTensor(), results[1].toTensor()};
    }
    return rotate(q, &k, table, out_dtype, conjugate);
}

static at::Tensor rotary_single(const at::Tensor& x, const at::Tensor& table,
                                std::optional<at::ScalarType> out_dtype, bool conjugate) {
    if (interpreter_requested()) {
        return call_python_kernel("inductor_complex::rotary_embedding_single_cpu",
                                  {x, table, out_dtype, conjugate})[0].toTensor();
    }
    return std::get<0>(rotate(x, nullptr, table, out_dtype, conjugate));
}

static void check_output(const char* name, const at::Tensor& out, const at::Tensor& x, const at::Tensor& q_out) {
    TORCH_CHECK(out.device().is_cpu() && out.sizes() == x.sizes() && out.is_contiguous(),
                "rotary_into: ", name, " must be a contiguous CPU tensor of the shape ", x.sizes(),
                ", got ", out.sizes());
    TORCH_CHECK(out.scalar_type() == q_out.scalar_type(), "rotary_into: q_out and k_out must share a dtype");
}

/* q (and k, when given) rotated into q_out (and k_out), contiguous tensors of their
   shapes that the caller allocated: what compiled code calls directly, through the
   Python binding (rotary_cpu_direct), instead of the op. Exported for that binding's
   library, which links against this one. */
void inductor_complex_rotary_into(const at::Tensor& q, const at::Tensor* k, const at::Tensor& table_given,
                                  bool conjugate, at::Tensor& q_out, at::Tensor* k_out) {
    if (interpreter_requested()) {
        auto results = k ? rotary_pair(q, *k, table_given, q_out.scalar_type(), conjugate)
                         : std::make_tuple(rotary_single(q, table_given, q_out.scalar_type(), conjugate), at::Tensor());
        q_out.copy_(std::get<0>(results));
        if (k) k_out->copy_(std::get<1>(results));
        return;
    }
    Table table = checked_table(q, k, table_given);
    check_output("q_out", q_out, q, q_out);
    if (k) check_output("k_out", *k_out, *k, q_out);
    rotate_into(q, k, table, conjugate, q_out, k_out);
}

TORCH_LIBRARY_IMPL(inductor_complex, CPU, m) {
    m.impl("rotary_embedding_cpu", &rotary_pair);
    m.impl("rotary_embedding_single_cpu", &rotary_single);
}
"""


def source(kernel_source: str, parallel_grain: int) -> str:
    return kernel_source + f"\n#define PARALLEL_GRAIN {parallel_grain}\n" + GLUE_SOURCE


def compile_flags() -> tuple[list[str], list[str]]:
    """(compile, link) flags to build against the running torch: its headers, ABI, libraries."""
    from torch.utils import cpp_extension

    includes = [f"-I{path}" for path in cpp_extension.include_paths()]
    libraries = cpp_extension.library_paths()
    return [
        "-std=c++20", "-w",  # c++20 as torch builds its extensions (2.14 headers need it); -w: the
        # kernel's unrolled tails trip GCC's loop warnings
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *includes,
    ], [
        *(f"-L{path}" for path in libraries), "-lc10", "-ltorch_cpu",
        *(f"-Wl,-rpath,{path}" for path in libraries),
    ]
