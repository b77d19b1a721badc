"""The CPU kernel of ``inductor_complex::complex_matmul_cpu_kernel``, in C++.

Why: compiled code calls the complex-BLAS product on pairs (see
:mod:`inductor_complex.eager_kernels`) once per matrix product, forward and
backward. Through Python each call cost 33-63 us against eager ``mm``'s 3-7 us
(8x8, one thread, two runs): the op's Python autograd kernel, then its Python kernel.
Past autograd the graph calls a twin of the op that has no autograd kernel,
and this glue, built into the same library as the rotary kernel
(:mod:`.rotary_cpu_op`), is that twin's CPU kernel: the dispatcher goes
straight to eager's complex BLAS. The twin's Python kernel serves where the
library could not be built, or before it loads.
"""

from __future__ import annotations

# Appended to the rotary library's source; the same checks and steps as
# eager_kernels._complex_matmul, whose comments say why.
GLUE_SOURCE = r"""
#include <ATen/ExpandUtils.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/view_as_complex.h>
#include <vector>

/* Real pairs [..., M, K, 2] (or a complex operand as it is) as the complex [..., M, K],
   or its adjoint (a lazy view). */
static at::Tensor as_complex(const at::Tensor& x, bool adjoint) {
    at::Tensor value = x;
    if (!x.is_complex()) {
        bool whole = x.stride(-1) == 1 && x.storage_offset() % 2 == 0;
        for (int64_t d = 0; d + 1 < x.dim(); ++d) whole = whole && x.stride(d) % 2 == 0;
        value = at::view_as_complex(whole ? x : x.contiguous());
    }
    return adjoint ? value.mH() : value;
}

static void check_operand(const char* name, const at::Tensor& x) {
    bool pairs = (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble) && x.dim() >= 3 && x.size(-1) == 2;
    bool complex = (x.scalar_type() == at::kComplexFloat || x.scalar_type() == at::kComplexDouble) && x.dim() >= 2;
    TORCH_CHECK(x.device().is_cpu() && (pairs || complex), "complex_matmul_cpu: ", name,
                " must be a CPU complex matrix [..., M, K] or its real pairs [..., M, K, 2], got ", x.scalar_type(),
                " ", x.sizes(), " on ", x.device());
}

static at::Tensor complex_matmul(const at::Tensor& a, const at::Tensor& b, bool adjoint_a, bool adjoint_b,
                                 bool complex_out) {
    check_operand("a", a);
    check_operand("b", b);
    at::AutoDispatchBelowADInplaceOrView below_autograd;  /* past autograd: nothing to record */
    at::Tensor left = as_complex(a, adjoint_a), right = as_complex(b, adjoint_b);
    TORCH_CHECK(left.scalar_type() == right.scalar_type() && left.size(-1) == right.size(-2),
                "complex_matmul_cpu: ", left.scalar_type(), left.sizes(), " @ ", right.scalar_type(), right.sizes());
    auto left_batch = left.sizes().slice(0, left.dim() - 2), right_batch = right.sizes().slice(0, right.dim() - 2);
    std::vector<int64_t> shape = left_batch.equals(right_batch) ? left_batch.vec() : at::infer_size(left_batch, right_batch);
    shape.insert(shape.end(), {left.size(-2), right.size(-1)});
    at::Tensor result, out;
    if (complex_out) {
        result = out = at::empty(shape, left.options());
    } else {
        shape.push_back(2);
        result = at::empty(shape, left.options().dtype(c10::toRealValueType(left.scalar_type())));
        out = at::view_as_complex(result);
    }
    if (left.dim() == 2 && right.dim() == 2) {
        at::mm_out(out, left, right);
    } else if (right.dim() == 2 && !adjoint_a && left.size(-1) > 0 && right.size(-1) > 0) {
        /* a batch times one matrix: the batch's rows, one mm (an empty K or N has no -1 to infer) */
        at::Tensor rows = out.view({-1, right.size(-1)});
        at::mm_out(rows, left.reshape({-1, left.size(-1)}), right);
    } else if (left.dim() == 3 && right.dim() == 3 && left.size(0) == right.size(0)) {
        at::bmm_out(out, left, right);
    } else {
        at::matmul_out(out, left, right);
    }
    return result;
}

TORCH_LIBRARY_IMPL(inductor_complex, CPU, m) {
    m.impl("complex_matmul_cpu_kernel", &complex_matmul);
}
"""
