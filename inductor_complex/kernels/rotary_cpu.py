"""The fused rotary embedding on CPU: a small C kernel compiled on first use.

Why: Inductor's CPU code cannot vectorize the pair math. Its loops put the
pair of 2 innermost (below the vector width), and every flat form that would
vectorize needs loads of ``x[j ± 1]``, which Inductor only emits as masked
loads (``F.pad``) that measured slower than the scalar loop. This kernel reads
each input once, like the Triton kernel on CUDA, and multiplies four pairs per
AVX2 step with in-register shuffles, as eager's complex kernel does (elsewhere
the compiler vectorizes the scalar loop as it can). Inductor calls it as an
opaque op (``rotary_embedding_cpu``), as it calls the Triton op on CUDA.

It is built with the C++ compiler Inductor itself uses (Inductor cannot
compile for CPU without one) into Inductor's cache folder, keyed by the
source, the flags and the machine. Numerics are the idiom's: the input
rounded to float32 (``x.float()``), then promoted to float64 for a float64
table; the product is c10's vectorized ``(ac - bd, ad + bc)`` with no fused
multiply-add (``-ffp-contract=off`` and, on x86, ``-mno-fma``: GCC otherwise
turns the interleaved product into ``vfmaddsub`` even with contraction off);
results are rounded to the output dtype as eager casts them (bfloat16 and
float16 by way of float32, as c10's conversions from double go). That is eager
bit for bit wherever eager's vectorized loop runs, which is every pair when a
head's pair count is a multiple of eager's chunk of two vectors (8 pairs with
AVX2, as measured here; head dims 64 and 128 are multiples of either width's);
eager's remainder loop is compiled with fused multiply-adds on some builds, so
for the pairs it takes the last bit can differ.

It is built with the running torch's headers when it can be, and then
registers itself as the CPU kernel of the ops compiled code calls
(:mod:`.rotary_cpu_op`: no Python between the dispatcher and the kernel);
else as a plain library that :func:`rotate` calls through ctypes.
``available()`` builds it once per process and says whether that worked;
``unavailable_reason()`` says why not; ``op_kernel_registered()`` says which
of the two was built.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import subprocess
import tempfile
from typing import Optional

import torch

# Element types by torch dtype: (C name, C type, load as float, store from float).
_C_TYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
}
INPUT_DTYPES = tuple(_C_TYPES)  # x and the output
MATH_TYPES = {torch.float32: "f32", torch.float64: "f64"}  # the table, converted to the math dtype

# Work below this many pairs runs on one thread (ATen's grain size, in pairs).
_PARALLEL_GRAIN = 16384

_SOURCE = r"""
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

typedef float f32;
typedef double f64;
typedef uint16_t bf16;
typedef _Float16 f16;

static inline float load(f32 v) { return v; }
static inline float load(f64 v) { return (float)v; }  /* the idiom's x.float() */
static inline float load(bf16 v) { uint32_t u = (uint32_t)v << 16; float f; memcpy(&f, &u, 4); return f; }
static inline float load(f16 v) { return (float)v; }

/* From the math type (overloads, so float math stays float): float64 results reach
   bfloat16/float16 through float32, as c10's casts from double go. */
static inline void put(f32* o, float v) { *o = v; }
static inline void put(f32* o, double v) { *o = (f32)v; }
static inline void put(f64* o, float v) { *o = (f64)v; }
static inline void put(f64* o, double v) { *o = v; }
static inline void put(bf16* o, float f) {
    if (isnan(f)) { *o = (bf16)0xFFFF; return; }  /* eager's vectorized cast (c10's scalar one gives 0x7FC0) */
    uint32_t u; memcpy(&u, &f, 4);
    *o = (bf16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  /* round to nearest even */
}
static inline void put(bf16* o, double v) { put(o, (float)v); }
static inline void put(f16* o, float v) { *o = (f16)v; }
static inline void put(f16* o, double v) { *o = (f16)(float)v; }

/* One row of P pairs: o = x * t (or x * conj(t)), t the row's table [P, 2] in the math type.
   Scalar: each pair as c10's complex product, (ac - bd, ad + bc). */
template <typename IN, typename M, typename OUT>
static inline void rotate_pairs(const IN* __restrict__ xr, OUT* __restrict__ o, const M* __restrict__ t,
                                int64_t begin, int64_t P, int conjugate) {
    for (int64_t k = begin; k < P; k++) {
        M a = (M)load(xr[2 * k]), bb = (M)load(xr[2 * k + 1]);
        M c = t[2 * k], d = conjugate ? -t[2 * k + 1] : t[2 * k + 1];
        put(o + 2 * k, a * c - bb * d);
        put(o + 2 * k + 1, a * d + bb * c);
    }
}

#if defined(__AVX2__)
/* Eight elements (four pairs) as float32 and back, by element type. The vector product
   rounds as the scalar one does (no FMA: the intrinsics are not contracted). */
static inline __m256 load8(const f32* p) { return _mm256_loadu_ps(p); }
static inline __m256 load8(const bf16* p) {  /* exact: bfloat16 is float32's top half */
    __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
static inline void store8(f32* p, __m256 v) { _mm256_storeu_ps(p, v); }
static inline void store8(bf16* p, __m256 v) {  /* put()'s bfloat16 rounding, eight at once */
    __m256i u = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0xFFFF), nan);
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08);
    _mm_storeu_si128((__m128i*)p, _mm256_castsi256_si128(packed));
}
#if defined(__F16C__)
static inline __m256 load8(const f16* p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p)); }
static inline void store8(f16* p, __m256 v) {
    _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
#endif

/* Four pairs of a table row as the product needs them: (c, c) and (d, d) per pair, d
   negated (sign -0.0) for the conjugate. */
static inline void spread4(const f32* __restrict__ t, __m256 sign, __m256& c, __m256& d) {
    __m256 table = _mm256_loadu_ps(t);
    c = _mm256_moveldup_ps(table);
    d = _mm256_xor_ps(_mm256_movehdup_ps(table), sign);
}

/* Four pairs, the way c10's Vectorized<complex<float>> multiplies: x * (c, c) addsub
   swap(x) * (d, d), that is (ac - bd, bc + ad) per pair. */
template <typename IN, typename OUT>
static inline void rotate4(const IN* __restrict__ x, OUT* __restrict__ o, __m256 c, __m256 d) {
    __m256 v = load8(x);
    __m256 swapped = _mm256_permute_ps(v, 0xB1);  /* (b, a) per pair */
    store8(o, _mm256_addsub_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(swapped, d)));
}

/* H heads [H, 2P] of one position (head stride x_sh; out contiguous) rotated by the
   position's table row t [P, 2], a head at a time (heads innermost, with the table's
   vectors made once for all heads, measured 1.2x slower: its stores jump between rows).
   With P known at compile time the row's table vectors are made once per position and
   held, in registers as far as they go; else per four pairs from the row, in L1. */
template <int64_t FIXED_P, typename IN, typename OUT>
static inline __attribute__((always_inline)) void rotate_heads(const IN* __restrict__ x, OUT* __restrict__ o, int64_t H, int64_t x_sh,
                                const f32* __restrict__ t, int64_t P, __m256 sign, int conjugate) {
    if constexpr (FIXED_P > 0 && FIXED_P % 4 == 0) {
        __m256 c[FIXED_P / 4], d[FIXED_P / 4];
        for (int64_t j = 0; j < FIXED_P / 4; j++) spread4(t + 8 * j, sign, c[j], d[j]);
        for (int64_t h = 0; h < H; h++)
            for (int64_t j = 0; j < FIXED_P / 4; j++) rotate4(x + h * x_sh + 8 * j, o + h * 2 * P + 8 * j, c[j], d[j]);
    } else {
        for (int64_t h = 0; h < H; h++) {
            int64_t k = 0;
            for (; k + 4 <= P; k += 4) {
                __m256 c, d;
                spread4(t + 2 * k, sign, c, d);
                rotate4(x + h * x_sh + 2 * k, o + h * 2 * P + 2 * k, c, d);
            }
            rotate_pairs<IN, f32, OUT>(x + h * x_sh, o + h * 2 * P, t, k, P, conjugate);
        }
    }
}

/* One position: the heads of q [Hq, 2P] and k [Hk, 2P] rotated by its table row. */
template <int64_t FIXED_P, typename IN, typename OUT>
static inline auto rotate_position(const IN* __restrict__ q, OUT* __restrict__ q_out, int64_t Hq, int64_t q_sh,
                                   const IN* __restrict__ kx, OUT* __restrict__ k_out, int64_t Hk, int64_t k_sh,
                                   const f32* __restrict__ t, int64_t any_P, int conjugate, int)
    -> decltype(load8(q), store8(q_out, __m256()), void()) {
    const int64_t P = FIXED_P ? FIXED_P : any_P;
    const __m256 sign = conjugate ? _mm256_set1_ps(-0.0f) : _mm256_setzero_ps();
    rotate_heads<FIXED_P>(q, q_out, Hq, q_sh, t, P, sign, conjugate);
    rotate_heads<FIXED_P>(kx, k_out, Hk, k_sh, t, P, sign, conjugate);
}

#endif

/* Every other combination (float64 math or elements, no AVX2): the scalar loop, a head at
   a time. The int/long argument ranks the overloads: the vector one where it exists. */
template <int64_t FIXED_P, typename IN, typename M, typename OUT>
static inline void rotate_position(const IN* __restrict__ q, OUT* __restrict__ q_out, int64_t Hq, int64_t q_sh,
                                   const IN* __restrict__ kx, OUT* __restrict__ k_out, int64_t Hk, int64_t k_sh,
                                   const M* __restrict__ t, int64_t P, int conjugate, long) {
    for (int64_t h = 0; h < Hq; h++) rotate_pairs<IN, M, OUT>(q + h * q_sh, q_out + h * 2 * P, t, 0, P, conjugate);
    for (int64_t h = 0; h < Hk; h++) rotate_pairs<IN, M, OUT>(kx + h * k_sh, k_out + h * 2 * P, t, 0, P, conjugate);
}

/* q [B, S, Hq, 2P] and k [B, S, Hk, 2P] (Hk may be 0; head dim contiguous, other strides
   any) rotated by one table [Bt, S, P, 2], contiguous in the math type (batch stride 0 when
   shared), into contiguous outputs, in one call. FIXED_P, when not 0, is P known at compile
   time, so the loop over a head's pairs unrolls whole. */
template <int64_t FIXED_P, typename IN, typename M, typename OUT>
static void rotate_all(const IN* __restrict__ q, OUT* __restrict__ q_out,
                      int64_t Hq, int64_t q_sb, int64_t q_ss, int64_t q_sh,
                      const IN* __restrict__ kx, OUT* __restrict__ k_out,
                      int64_t Hk, int64_t k_sb, int64_t k_ss, int64_t k_sh,
                      const M* __restrict__ table, int64_t t_sb, int64_t B, int64_t S, int64_t any_P,
                      int conjugate, int threads) {
    const int64_t P = FIXED_P ? FIXED_P : any_P;
    auto position = [&](int64_t b, int64_t s) {
        int64_t r = b * S + s;
        rotate_position<FIXED_P>(q + b * q_sb + s * q_ss, q_out + r * Hq * 2 * P, Hq, q_sh,
                                 kx + b * k_sb + s * k_ss, k_out + r * Hk * 2 * P, Hk, k_sh,
                                 table + b * t_sb + s * 2 * P, P, conjugate, 0);
    };
    /* One thread skips OpenMP: a parallel region with if (false) still starts a team of
       one, measured 0.5 us a call, a sixth of a decode step's kernel call. */
    if (threads > 1) {
        #pragma omp parallel for collapse(2) num_threads(threads)
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < S; s++) position(b, s);
    } else {
        for (int64_t b = 0; b < B; b++)
            for (int64_t s = 0; s < S; s++) position(b, s);
    }
}

/* The entry points, by element and math type; the usual head dims (32, 64, 128) get their
   own unrolled copies. */
#define ROTARY(IN, M, OUT)                                                                   \
void rotary_##IN##_##M##_##OUT(const IN* q, OUT* q_out, int64_t Hq, int64_t q_sb,            \
        int64_t q_ss, int64_t q_sh, const IN* kx, OUT* k_out, int64_t Hk, int64_t k_sb,      \
        int64_t k_ss, int64_t k_sh, const M* table, int64_t t_sb, int64_t B, int64_t S,      \
        int64_t P, int conjugate, int threads)                                               \
{                                                                                            \
    switch (P) {                                                                             \
        case 16: return rotate_all<16>(q, q_out, Hq, q_sb, q_ss, q_sh, kx, k_out, Hk, k_sb,  \
                                       k_ss, k_sh, table, t_sb, B, S, P, conjugate, threads); \
        case 32: return rotate_all<32>(q, q_out, Hq, q_sb, q_ss, q_sh, kx, k_out, Hk, k_sb,  \
                                       k_ss, k_sh, table, t_sb, B, S, P, conjugate, threads); \
        case 64: return rotate_all<64>(q, q_out, Hq, q_sb, q_ss, q_sh, kx, k_out, Hk, k_sb,  \
                                       k_ss, k_sh, table, t_sb, B, S, P, conjugate, threads); \
        default: return rotate_all<0>(q, q_out, Hq, q_sb, q_ss, q_sh, kx, k_out, Hk, k_sb,   \
                                      k_ss, k_sh, table, t_sb, B, S, P, conjugate, threads); \
    }                                                                                        \
}

#define FOR_OUT(IN, M) ROTARY(IN, M, f32) ROTARY(IN, M, f64) ROTARY(IN, M, bf16) ROTARY(IN, M, f16)
#define FOR_MATH(IN) FOR_OUT(IN, f32) FOR_OUT(IN, f64)
extern "C" {
FOR_MATH(f32) FOR_MATH(f64) FOR_MATH(bf16) FOR_MATH(f16)
}
"""

_COMMON_FLAGS = ["-O3", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-x", "c++"]
# Tried in order: the first set the compiler accepts is used.
# -mno-avx512f: AVX-512 brings fused multiply-adds of its own, which GCC 12's vectorizer
# forms from the scalar loop's (ac - bd, ad + bc) despite -ffp-contract=off (vfmaddsub,
# seen on an AVX-512 machine: an ulp from eager's product); the kernel's vectors are AVX2.
_FLAG_SETS = (
    ["-march=native", "-mno-fma", "-mno-avx512f", "-fopenmp"],  # x86
    ["-march=native", "-fopenmp"],  # other machines (no x86 -mno-fma)
    ["-fopenmp"],
    [],
)

launch_count = 0  # incremented per call, so tests can prove the C kernel ran


def _compiler() -> str:
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        return get_cpp_compiler()
    except Exception:  # older or changed Inductor: the usual default
        return os.environ.get("CXX", "g++")


def _cache_dir() -> str:
    # Inductor's own default cache folder, or the one the user set for it.
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "torchinductor_" + _user())
    path = os.path.join(root, "inductor_complex")
    os.makedirs(path, exist_ok=True)
    return path


def _user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:
        return "user"


def _machine_key() -> str:
    # -march=native code must not be shared between different CPUs.
    return "|".join((platform.machine(), platform.node(), torch.backends.cpu.get_cpu_capability()))


def _candidates(name: str, source: str, front: list, back: list) -> list[tuple[list, list, str]]:
    """(extra flags, all flags, cached library path) per flag set, in the order tried."""
    compiler, found = _compiler(), []
    for extra in _FLAG_SETS:
        flags = _COMMON_FLAGS + extra + front
        key = hashlib.sha256("\n".join((source, compiler, *flags, *back, _machine_key())).encode()).hexdigest()[:24]
        found.append((extra, flags, os.path.join(_cache_dir(), f"{name}_{key}.so")))
    return found


def _compile(name: str, source: str, front: list, back: list, remember_failures: bool = False) -> str:
    """Path of ``source`` built as a shared library (cached); raises with the
    compiler's complaint for each flag set tried. ``remember_failures``: a build
    that failed once is not retried (for optional builds, which cost seconds)."""
    compiler = _compiler()
    errors = []
    for extra, flags, library in _candidates(name, source, front, back):
        if os.path.exists(library):
            return library
        if remember_failures and os.path.exists(library + ".failed"):
            with open(library + ".failed") as f:
                errors.append(f.read())
            continue
        fd, source_path = tempfile.mkstemp(suffix=".cpp", dir=_cache_dir())
        with os.fdopen(fd, "w") as f:
            f.write(source)
        partial = library + f".{os.getpid()}.tmp"
        try:
            result = subprocess.run([compiler, *flags, source_path, "-o", partial, *back],
                                    capture_output=True, text=True, timeout=300)
            failure = _first_error(result.stderr) if result.returncode else None
        except (OSError, subprocess.SubprocessError) as error:  # no such compiler, a hang
            failure = f"{type(error).__name__}: {error}"
        finally:
            os.unlink(source_path)
        if failure is None:
            os.replace(partial, library)  # atomic: another process may build the same file
            return library
        errors.append(f"{' '.join(extra) or 'no extra flags'}: {failure}")
        if remember_failures:
            with open(library + ".failed", "w") as f:
                f.write(errors[-1])
    raise RuntimeError(f"could not compile the CPU rotary kernel with {compiler}: " + "; ".join(errors))


def _first_error(stderr: str) -> str:
    # A header's error comes after lines of "In file included from": show the error.
    errors = [line.strip() for line in stderr.splitlines() if "error" in line]
    return (errors[0] if errors else stderr.strip())[:300]


def _op_library_recipe() -> tuple[str, str, list, list]:
    """(name, source, compile flags, link flags) of the torch-linked library: the kernel
    with its dispatcher registration (:mod:`.rotary_cpu_op`) and the complex matrix
    product's CPU kernel (:mod:`.complex_matmul_op`); one build (tens of seconds) serves both."""
    from . import complex_matmul_op, rotary_cpu_op

    front, back = rotary_cpu_op.compile_flags()
    source = rotary_cpu_op.source(_SOURCE, _PARALLEL_GRAIN) + complex_matmul_op.GLUE_SOURCE
    # The schemas the kernels register against, in the source and so in its cache key:
    # loading a kernel built for another schema aborts the process.
    return "cpu_ops", source + "".join(f"\n// {schema}" for schema in _registered_schemas()), front, back


def _registered_schemas() -> list[str]:
    from .. import eager_kernels  # noqa: F401  (defines the product's twin)
    from . import rotary  # noqa: F401  (defines the rotary CPU ops)

    ops = torch.ops.inductor_complex
    return [str(getattr(ops, name).default._schema)
            for name in ("rotary_embedding_cpu", "rotary_embedding_single_cpu", "complex_matmul_cpu_kernel")]


def op_library_path() -> str:
    """Path of the torch-linked library (:func:`_op_library_recipe`), built if need be."""
    return _compile(*_op_library_recipe(), remember_failures=True)


def compile_library(name: str, source: str, front: list, back: list, remember_failures: bool = False) -> str:
    """``source`` built as a shared library with this module's compiler, flags and cache."""
    return _compile(name, source, front, back, remember_failures)


def library_built(recipe) -> bool:
    """Whether an earlier :func:`compile_library` of ``recipe()`` (name, source, compile
    flags, link flags) left a build in the cache; never builds."""
    try:
        return any(os.path.exists(path) for _, _, path in _candidates(*recipe()))
    except Exception:  # no torch headers to hash, say: nothing was built either
        return False


def _build_op_library() -> str:
    """The torch-linked library (:func:`_op_library_recipe`), built if need be, loaded."""
    library = op_library_path()
    torch.ops.load_library(library)
    return library


def _build() -> tuple[ctypes.CDLL, Optional[str]]:
    """The kernel library and, where only the plain C kernel could be built, why the
    dispatcher-registered one could not."""
    try:
        return _bind(ctypes.CDLL(_build_op_library())), None
    except Exception as error:  # no torch headers, another compiler: the Python kernels serve
        op_failure = f"{type(error).__name__}: {error}"
    return _bind(ctypes.CDLL(_compile("rotary_cpu", _SOURCE, [], []))), op_failure


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    for x_name in _C_TYPES.values():
        for m_name in MATH_TYPES.values():
            for out_name in _C_TYPES.values():
                fn = getattr(lib, f"rotary_{x_name}_{m_name}_{out_name}")
                fn.argtypes = [ptr, ptr, i64, i64, i64, i64, ptr, ptr, i64, i64, i64, i64,
                               ptr, i64, i64, i64, i64, ctypes.c_int, ctypes.c_int]
                fn.restype = None
    if hasattr(lib, "rotary_cpu_op_launches"):
        lib.rotary_cpu_op_launches.restype = ctypes.c_int64
    return lib


@functools.lru_cache(maxsize=1)
def _library() -> tuple[Optional[ctypes.CDLL], Optional[str]]:
    try:
        library, op_failure = _build()
    except Exception as error:  # no compiler, a read-only cache: the caller falls back
        return None, f"{type(error).__name__}: {error}"
    global _op_failure
    _op_failure = op_failure
    return library, None


_op_failure: Optional[str] = "not built yet"


def op_kernel_registered() -> bool:
    """Whether the dispatcher calls the kernel from C++ (else the ops' Python kernels do)."""
    return available() and _op_failure is None


def op_kernel_unregistered_reason() -> Optional[str]:
    return None if op_kernel_registered() else _op_failure or unavailable_reason()


def load_if_built() -> bool:
    """Load the torch-linked library if it is loaded or an earlier process built it,
    without building; whether the C++ kernels are registered now. For the ops'
    Python kernels: a compile-cache hit replays graphs that call the ops without
    running the passes that would have loaded the library."""
    if _library.cache_info().currsize == 0 and not library_built(_op_library_recipe):
        return False
    return op_kernel_registered()


_handed_over = False


def hand_over_to_cpp() -> bool:
    """For the ops' Python kernels on CPU: True once per process, when the C++
    kernels have just been registered by :func:`load_if_built`, so that the
    caller calls the op again and from then on the dispatcher skips Python.
    False after that (a Python kernel still reached must do the work itself)."""
    global _handed_over
    if _handed_over:
        return False
    _handed_over = True
    return load_if_built()


def launches() -> int:
    """Calls of the kernel so far, from Python or from the C++ registration."""
    lib = _library()[0]
    from_cpp = lib.rotary_cpu_op_launches() if lib is not None and _op_failure is None else 0
    return launch_count + from_cpp


@torch.compiler.assume_constant_result  # Dynamo reads apply_rotary_emb's choice, not the build
def available() -> bool:
    """Whether the kernel is built (building it on the first call)."""
    return _library()[0] is not None


def unavailable_reason() -> Optional[str]:
    return _library()[1]


@functools.lru_cache(maxsize=None)
def _function(x_dtype: torch.dtype, math: torch.dtype, out_dtype: torch.dtype):
    lib, why = _library()
    if lib is None:
        raise RuntimeError(f"the CPU rotary kernel is unavailable: {why}")
    return getattr(lib, f"rotary_{_C_TYPES[x_dtype]}_{MATH_TYPES[math]}_{_C_TYPES[out_dtype]}")


def _empty_contiguous_via_torch(shape, dtype):
    return torch.empty(shape, dtype=dtype)


def _empty_contiguous_via_inductor(shape: tuple, dtype):
    _, seq, heads, head_dim = shape  # a tuple: the allocator takes no torch.Size
    return _EMPTY_STRIDED_CPU(shape, (seq * heads * head_dim, heads * head_dim, head_dim, 1), dtype)


# The allocator Inductor's own generated code calls: about 1 us a call against 2-3 us
# for torch.empty's argument parsing, which decode steps pay twice per call. Private, so
# torch.empty where a torch release lacks it.
_EMPTY_STRIDED_CPU = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "_empty_strided_cpu", None)
_empty_contiguous = _empty_contiguous_via_inductor if _EMPTY_STRIDED_CPU else _empty_contiguous_via_torch


def rotate(q: torch.Tensor, k: Optional[torch.Tensor], table: torch.Tensor,
           out_dtype: Optional[torch.dtype], conjugate: bool):
    """``q`` (and ``k``) rotated by ``table``: new contiguous tensors of ``out_dtype``
    (default: the input's), as ``rotary_embedding`` computes them, in one call.

    ``q`` ``[B, S, Hq, D]`` and ``k`` ``[B, S, Hk, D]`` of one dtype, with any strides
    but a contiguous head dim; ``table`` ``[Bt, S, D/2, 2]``, ``Bt`` 1 or B. Returns
    ``(q_out, k_out)``, ``k_out`` None without ``k``. The caller checks the shapes
    (the ops do, when they are traced); this path is kept short for decode steps.
    """
    global launch_count
    out_dtype = out_dtype or q.dtype
    math = torch.float64 if table.dtype == torch.float64 else torch.float32
    fn = _function(q.dtype, math, out_dtype)
    if table.dtype != math or not table.is_contiguous():
        table = table.to(math).contiguous()  # small: one row per position
    batch, seq, q_heads, head_dim = q.shape
    q_out = _empty_contiguous((batch, seq, q_heads, head_dim), dtype=out_dtype)
    k_heads, k_out, k_strides = 0, None, (0, 0, 0)
    if k is not None:
        k_heads = k.shape[2]
        k_out = _empty_contiguous((batch, seq, k_heads, head_dim), dtype=out_dtype)
        k_strides = k.stride()[:3]
    if q.stride(3) != 1 or (k is not None and k.stride(3) != 1):
        raise ValueError("rotate: q and k need a contiguous head dim")
    launch_count += 1
    pairs = batch * seq * (q_heads + k_heads) * head_dim // 2
    if pairs:
        threads = torch.get_num_threads() if pairs >= _PARALLEL_GRAIN else 1
        fn(q.data_ptr(), q_out.data_ptr(), q_heads, *q.stride()[:3],
           k.data_ptr() if k_heads else None, k_out.data_ptr() if k_heads else None, k_heads, *k_strides,
           table.data_ptr(), table.stride(0) if table.shape[0] != 1 else 0, batch, seq, head_dim // 2,
           int(conjugate), threads)
    return q_out, k_out
