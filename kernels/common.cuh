// common.cuh: device code shared by every kernels/*.cu file.
//
// The loader (minitorch_gpu/backends/cuda/loader.py) pastes this header in place of `#include "common.cuh"`, so a
// change here changes every file's compile-cache key. Contents:
//   - integer aliases and the grid-stride loop
//   - storage and arithmetic types: __half and __nv_bfloat16 are stored in 2 bytes and computed in float
//     (acc_t<T>, mt_acc, mt_cast<T>)
//   - float/double math overloads (mt_exp, ...): one spelling for NVRTC and for the CPU simulator's g++
//   - strided index math for up to MT_MAX_DIMS = 8 dims (broadcast operands have stride 0), with 32-bit
//     magic-number division when the indices fit
//   - Packed128<T>: 128-bit loads and stores for the contiguous fast paths
//   - asynchronous global -> shared copies (cp.async on sm_80+, plain copies elsewhere)
//   - warp and block reductions (sum, max), for blocks whose size is a multiple of 32
//   - float16 / bfloat16 / tf32 as bits and their conversions; tensor-core fragment operations (mma.sync,
//     ldmatrix) on sm_80+ and on the simulator
#ifndef MT_COMMON_CUH
#define MT_COMMON_CUH

// the toolkit's headers under NVRTC; the simulator's host versions (same rounding) under g++
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define MT_MAX_DIMS 8
#define MT_WARP 32

// ------------------------------------------------------------------------------------------ loops
// i runs over [0, n) with a stride of the whole grid, so any n works with any grid size
#define MT_GRID_STRIDE(i, n) MT_GRID_STRIDE_FROM(i, 0, n)
#define MT_GRID_STRIDE_FROM(i, start, n) \
    for (i64 i = (start) + (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

// ------------------------------------------------------------------------------------------ storage and arithmetic types
// A kernel templated on T reads and writes T and computes in acc_t<T>: float for the 16-bit types (PyTorch's
// "opmath": one rounding per stored result, reductions accumulated in float), T itself for float and double.
template <typename T> struct MtAcc { typedef T type; };
template <> struct MtAcc<__half> { typedef float type; };
template <> struct MtAcc<__nv_bfloat16> { typedef float type; };
template <typename T> using acc_t = typename MtAcc<T>::type;

// a stored value in its arithmetic type (exact)
__device__ __forceinline__ float mt_acc(float x) { return x; }
__device__ __forceinline__ double mt_acc(double x) { return x; }
__device__ __forceinline__ float mt_acc(__half x) { return __half2float(x); }
__device__ __forceinline__ float mt_acc(__nv_bfloat16 x) { return __bfloat162float(x); }
// an arithmetic result rounded to the storage type (to nearest even, as PyTorch's casts)
template <typename T> __device__ __forceinline__ T mt_cast(acc_t<T> v) { return v; }
template <> __device__ __forceinline__ __half mt_cast<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 mt_cast<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// ------------------------------------------------------------------------------------------ math
// NOTE: neither NVRTC nor g++ resolve `exp(float)` to the float function in every setting; these overloads
// pick expf/exp explicitly, so float32 never silently computes in double.
#define MT_MATH1(name, f32, f64) \
    __device__ __forceinline__ float mt_##name(float x) { return f32(x); } \
    __device__ __forceinline__ double mt_##name(double x) { return f64(x); }
#define MT_MATH2(name, f32, f64) \
    __device__ __forceinline__ float mt_##name(float x, float y) { return f32(x, y); } \
    __device__ __forceinline__ double mt_##name(double x, double y) { return f64(x, y); }

MT_MATH1(exp, expf, exp)
MT_MATH1(exp2, exp2f, exp2)
MT_MATH1(expm1, expm1f, expm1)
MT_MATH1(log, logf, log)
MT_MATH1(log2, log2f, log2)
MT_MATH1(log10, log10f, log10)
MT_MATH1(log1p, log1pf, log1p)
MT_MATH1(sqrt, sqrtf, sqrt)
MT_MATH1(sin, sinf, sin)
MT_MATH1(cos, cosf, cos)
MT_MATH1(tan, tanf, tan)
MT_MATH1(asin, asinf, asin)
MT_MATH1(acos, acosf, acos)
MT_MATH1(atan, atanf, atan)
MT_MATH1(sinh, sinhf, sinh)
MT_MATH1(cosh, coshf, cosh)
MT_MATH1(tanh, tanhf, tanh)
MT_MATH1(asinh, asinhf, asinh)
MT_MATH1(acosh, acoshf, acosh)
MT_MATH1(atanh, atanhf, atanh)
MT_MATH1(floor, floorf, floor)
MT_MATH1(ceil, ceilf, ceil)
MT_MATH1(trunc, truncf, trunc)
MT_MATH1(rint, rintf, rint)
MT_MATH1(abs, fabsf, fabs)
MT_MATH1(erf, erff, erf)
MT_MATH1(lgamma, lgammaf, lgamma)
MT_MATH2(pow, powf, pow)
MT_MATH2(atan2, atan2f, atan2)
MT_MATH2(copysign, copysignf, copysign)
MT_MATH2(hypot, hypotf, hypot)
MT_MATH2(fmod, fmodf, fmod)
MT_MATH2(fmax, fmaxf, fmax)
MT_MATH2(fmin, fminf, fmin)

template <typename T> __device__ __forceinline__ T mt_inf() {
    // IEEE overflow is exact; spelled without intrinsics or builtins that one of the two compilers lacks
    T big = sizeof(T) == 4 ? (T)1e30 : (T)1e300;
    return big * big;
}
template <typename T> __device__ __forceinline__ bool mt_isnan(T x) { return x != x; }
template <typename T> __device__ __forceinline__ bool mt_isinf(T x) { return mt_abs(x) == mt_inf<T>(); }
template <typename T> __device__ __forceinline__ bool mt_isfinite(T x) { return x - x == x - x; }
template <typename T> __device__ __forceinline__ bool mt_signbit(T x) { return mt_copysign((T)1, x) < (T)0; }
// NaN-propagating max/min (NumPy's maximum/minimum and PyTorch's max reductions)
template <typename T> __device__ __forceinline__ T mt_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <typename T> __device__ __forceinline__ T mt_min(T a, T b) { return (a != a || a < b) ? a : b; }

// ------------------------------------------------------------------------------------------ strided index math
// A launch over an output of `nd` dims passes `meta`, an int64 array
//   [shape(nd) | strides_0(nd) | ... | strides_{K-1}(nd) | magic(nd) | shift(nd)]
// with element strides of each of the K operands (the output first; 0 on broadcast dims; negative strides are
// fine) and, per dim, the constants of mt_fastdiv by its size. The launcher collapses dims that are contiguous
// for every operand first, so nd is usually 1 or 2.
//
// Why the magic numbers: a 64-bit division is a ~70-instruction software routine on NVIDIA GPUs, and the
// strided path needs one per element per dim; when every linear index fits in 31 bits, a multiply-high, an add
// and a shift give the same quotient (Granlund-Montgomery, the scheme of PyTorch's IntDivider).
__device__ __forceinline__ u32 mt_fastdiv(u32 n, u32 magic, u32 shift) {
    u32 t = (u32)(((u64)n * magic) >> 32);
    return (t + n) >> shift;  // n < 2^31 and t <= n: no overflow
}
#define MT_FASTDIV_MAX 0x7fffffffLL

// offsets of the element at `linear` (row-major over dims [0, ndims) of the meta's nd dims) for each operand;
// FAST: linear < 2^31. The outermost dim needs no division: what is left of the index is its coordinate.
template <int K, bool FAST>
__device__ __forceinline__ void mt_offsets_dims(i64 linear, int ndims, int nd, const i64* __restrict__ meta,
                                                i64 (&off)[K]) {
    #pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    // NOTE: unrolling this runtime-bounded loop buys nothing (nd is 1 to 3 in practice) and costs registers
    #pragma unroll 1
    for (int d = ndims - 1; d >= 0; --d) {
        i64 idx = linear;
        if (d > 0) {
            i64 q;
            if (FAST) q = mt_fastdiv((u32)linear, (u32)meta[(K + 1) * nd + d], (u32)meta[(K + 2) * nd + d]);
            else q = linear / meta[d];
            idx = linear - q * meta[d];
            linear = q;
        }
        #pragma unroll
        for (int k = 0; k < K; ++k) off[k] += idx * meta[(k + 1) * nd + d];
    }
}

// offsets of element `linear` of a launch over `n` elements
template <int K>
__device__ __forceinline__ void mt_offsets(i64 linear, i64 n, int nd, const i64* __restrict__ meta, i64 (&off)[K]) {
    if (n <= MT_FASTDIV_MAX) mt_offsets_dims<K, true>(linear, nd, nd, meta, off);
    else mt_offsets_dims<K, false>(linear, nd, nd, meta, off);
}

// ------------------------------------------------------------------------------------------ 128-bit packs
template <typename T>
struct alignas(16) Packed128 {
    static constexpr int size = 16 / sizeof(T);
    T v[size];
};
// the caller guarantees 16-byte alignment (the launcher checks every pointer before choosing this path)
#ifdef __CUDA_SIM__
// NOTE: a misaligned 128-bit access faults on a GPU (and poisons the context); on the host the same load may
// compile to an aligned SSE move and kill the whole process, or pass silently. The simulator checks every one
// and reports it at the caller's line, like its other faults.
inline void cs_check_aligned16(const void* p, const char* what, int line, const char* file) {
    if (reinterpret_cast<unsigned long long>(p) % 16 != 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "misaligned address: 128-bit %s at %p is not 16-byte aligned", what, p);
        cs_fault(msg, line, file);
    }
}
template <typename T> __device__ __forceinline__ Packed128<T> load128(const T* p, int line = __builtin_LINE(),
                                                                      const char* file = __builtin_FILE()) {
    cs_check_aligned16(p, "load", line, file);
    return *reinterpret_cast<const Packed128<T>*>(p);
}
template <typename T> __device__ __forceinline__ void store128(T* p, const Packed128<T>& x, int line = __builtin_LINE(),
                                                              const char* file = __builtin_FILE()) {
    cs_check_aligned16(p, "store", line, file);
    *reinterpret_cast<Packed128<T>*>(p) = x;
}
#else
template <typename T> __device__ __forceinline__ Packed128<T> load128(const T* p) {
    return *reinterpret_cast<const Packed128<T>*>(p);
}
template <typename T> __device__ __forceinline__ void store128(T* p, const Packed128<T>& x) {
    *reinterpret_cast<Packed128<T>*>(p) = x;
}
#endif

// ------------------------------------------------------------------------------------------ async copies
// Global -> shared copies that run behind the math on sm_80+ (cp.async: no registers hold the data in flight,
// so a double-buffered tile costs no registers). Elsewhere — the CPU simulator, which defines __CUDA_SIM__ and
// leaves __CUDA_ARCH__ undefined, and older GPUs — they are plain synchronous copies, which give the same
// results: a copy is only read after mt_cp_async_wait_all() and a __syncthreads(), on every path.
// NOTE: this is the one place with inline PTX; CUDA exposes cp.async to NVRTC only through PTX or
// <cuda_pipeline.h>, which the NVRTC wheel used in CI does not ship.
#if !defined(__CUDA_SIM__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MT_CP_ASYNC 1
#endif

// one element (4 or 8 bytes): any address aligned to its type
template <typename T> __device__ __forceinline__ void mt_cp_async_elem(T* smem, const T* gmem) {
#ifdef MT_CP_ASYNC
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "cp.async copies 4, 8 or 16 bytes");
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(gmem), "n"(sizeof(T)));
#else
    *smem = *gmem;
#endif
}
// 16 bytes; both addresses 16-byte aligned (the simulator checks the global one like load128)
template <typename T> __device__ __forceinline__ void mt_cp_async16(T* smem, const T* gmem) {
#ifdef MT_CP_ASYNC
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    // .cg: streamed tiles skip L1, which the shared tiles share on-chip storage with
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
#else
    store128(smem, load128(gmem));
#endif
}
// closes the group of copies issued since the last commit
__device__ __forceinline__ void mt_cp_async_commit() {
#ifdef MT_CP_ASYNC
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// waits for every copy this thread issued; other threads' copies need a __syncthreads() after it
__device__ __forceinline__ void mt_cp_async_wait_all() {
#ifdef MT_CP_ASYNC
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}
// waits until at most N of this thread's committed groups are still in flight (a pipeline of N + 2 stages keeps
// the newest N copying while it reads the oldest); other threads' copies need a __syncthreads() after it
template <int N> __device__ __forceinline__ void mt_cp_async_wait_group() {
#ifdef MT_CP_ASYNC
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ------------------------------------------------------------------------------ 16-bit floats and tensor cores
// float16 and bfloat16 travel as their bits (u16) through these helpers: the tensor cores take them packed two
// to a 32-bit register, and the only arithmetic a GEMM does on them outside the mma is the conversion of a
// bias and of the result, so the tensor-core kernels never need __half / __nv_bfloat16 values. Conversions
// round to nearest even as the PTX cvt instructions do; the simulator's are bit-exact software, so a result
// computed there has the GPU's bits wherever the order of the sums does not matter. Everything here exists
// where MT_TENSOR_CORES is defined (sm_80+ and the simulator).
// NOTE: inline PTX here, like cp.async above: mma.sync and ldmatrix reach NVRTC only through PTX or <mma.h>
// (whose fragments hide the layout the copies below are written for).
#if !defined(__CUDA_SIM__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define MT_SM80_PTX 1
#endif
#if defined(MT_SM80_PTX) || defined(__CUDA_SIM__)
#define MT_TENSOR_CORES 1
#endif

#if defined(__CUDA_SIM__)
// the simulator's conversions are include/cuda_fp16.h's exact routines (cuda_sim::fp, see cuda_sim.h)
__device__ __forceinline__ float mt_f16_to_float(u16 h) { return cuda_sim::fp::half_to_float(h); }
__device__ __forceinline__ u16 mt_float_to_f16(float x) { return cuda_sim::fp::from_float<5, 10>(x, cuda_sim::fp::RN); }
__device__ __forceinline__ float mt_bf16_to_float(u16 h) { return cuda_sim::fp::bf16_to_float(h); }
__device__ __forceinline__ u16 mt_float_to_bf16(float x) { return cuda_sim::fp::from_float<8, 7>(x, cuda_sim::fp::RN); }
#elif defined(MT_SM80_PTX)
__device__ __forceinline__ float mt_f16_to_float(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ u16 mt_float_to_f16(float x) {
    u16 r;
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float mt_bf16_to_float(u16 h) { return __uint_as_float((u32)h << 16); }
__device__ __forceinline__ u16 mt_float_to_bf16(float x) {
    u16 r;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(x));
    return r;
}
#endif

#if defined(__CUDA_SIM__)
// float32 -> tf32 (cvt.rna.tf32.f32: 10 mantissa bits, ties away from zero), the operand form of the tf32 mma
__device__ __forceinline__ u32 mt_tf32(float x) { return cuda_sim::float_to_tf32(x); }

// D += A (16 x 8 tf32, row) * B (8 x 8, col) in float; fragments in the PTX ISA's layout for m16n8k8
__device__ __forceinline__ void mt_mma_tf32_m16n8k8(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2],
                                                    int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cs_mma<CS_MMA_TF32>(d, a, b, line, file);
}
// D += A (16 x 16, row) * B (16 x 8, col), float16 or bfloat16 pairs per register, float accumulation
__device__ __forceinline__ void mt_mma_f16_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2],
                                                    int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cs_mma<CS_MMA_F16>(d, a, b, line, file);
}
__device__ __forceinline__ void mt_mma_bf16_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2],
                                                     int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cs_mma<CS_MMA_BF16>(d, a, b, line, file);
}
// four 8 x 8 matrices of 16-bit elements from shared memory: lane l gives row l % 8 of matrix l / 8 (16 bytes,
// 16-byte aligned); register j receives matrix j's (g, 2t..2t+1), or with _trans (2t..2t+1, g)
__device__ __forceinline__ void mt_ldmatrix_x4(u32 (&r)[4], const void* smem, int line = __builtin_LINE(),
                                               const char* file = __builtin_FILE()) {
    cs_ldmatrix<4, false>(r, smem, line, file);
}
__device__ __forceinline__ void mt_ldmatrix_x4_trans(u32 (&r)[4], const void* smem, int line = __builtin_LINE(),
                                                     const char* file = __builtin_FILE()) {
    cs_ldmatrix<4, true>(r, smem, line, file);
}
#elif defined(MT_SM80_PTX)
__device__ __forceinline__ u32 mt_tf32(float x) {
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ void mt_mma_tf32_m16n8k8(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mt_mma_f16_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mt_mma_bf16_m16n8k16(float (&d)[4], const u32 (&a)[4], const u32 (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mt_ldmatrix_x4(u32 (&r)[4], const void* smem) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
__device__ __forceinline__ void mt_ldmatrix_x4_trans(u32 (&r)[4], const void* smem) {
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
#endif

// ------------------------------------------------------------------------------------------ reductions
struct SumOp {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return mt_max(a, b); }
};

// every lane ends with the reduction of the warp's 32 values
template <typename T, typename Op> __device__ __forceinline__ T warp_reduce(T v, Op op) {
    #pragma unroll
    for (int o = MT_WARP / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <typename T> __device__ __forceinline__ T warp_sum(T v) { return warp_reduce(v, SumOp()); }
template <typename T> __device__ __forceinline__ T warp_max(T v) { return warp_reduce(v, MaxOp()); }

// every thread of the block ends with the reduction; blockDim.x must be a multiple of 32 (at most 1024).
// `scratch` is 32 elements of shared memory that the caller owns (so one kernel can run several
// reductions back to back without the second overwriting values the first is still reading).
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T identity, T* scratch) {
    int lane = threadIdx.x % MT_WARP;
    int warp = threadIdx.x / MT_WARP;
    int nwarps = blockDim.x / MT_WARP;
    v = warp_reduce(v, op);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : identity;
    v = warp_reduce(v, op);
    __syncthreads();  // scratch may be reused by the next reduction
    return v;
}

#endif  // MT_COMMON_CUH
