// cuda_sim.h: the CUDA device dialect as plain C++20, so g++ compiles unmodified kernels/*.cu for the CPU
// simulator (minitorch_gpu/backends/cuda/sim).
//
// Sections
//   1. qualifiers and launch attributes        (__global__, __device__, __shared__, __launch_bounds__ ...)
//   2. vector types                            (dim3, uint3, float2, float4, int4 ... and make_*)
//   3. the per-thread context and built-ins    (threadIdx, blockIdx, blockDim, gridDim, warpSize)
//   4. block barriers and warp collectives     (__syncthreads*, __shfl*_sync, __ballot_sync, ...)
//   5. atomics and fences                      (atomicAdd ... atomicCAS via the compiler's __atomic builtins)
//   6. math and bit intrinsics                 (rsqrtf, __expf, __fdividef, min/max, __popc, __clz ...)
//   7. launch glue used by the generated module (argument unpacking, parameter descriptors)
//   8. tensor-core fragment operations         (mma.sync and ldmatrix, executed warp-wide; used by common.cuh)
//
// Model: every CUDA thread of a block is a fiber on one OS thread; a block runs to completion before its OS
// thread starts another, so `__shared__` variables can be `thread_local`. A fiber's context sits at a fixed
// place in its stack region, which is aligned to CUDA_SIM_STACK_SIZE, so the built-ins are computed from the
// stack pointer and never have to be swapped on a context switch.
//
// Half types: include/cuda_fp16.h and include/cuda_bf16.h (first on the include path) give __half, __half2,
// __nv_bfloat16 and __nv_bfloat162 as host types with the device's rounding.
// Not modelled: inline PTX, wmma, cp.async, timing. `__CUDA_ARCH__` is left undefined on purpose, so
// architecture-specific branches take their portable fallback.
// Emulated instead of inline PTX: the mma.sync and ldmatrix forms behind common.cuh's tensor-core helpers
// (section 8), warp-wide, with the hardware's fragment layouts.
#pragma once

#define __CUDA_SIM__ 1

// ------------------------------------------------------------------------------------------------------------
// 1. qualifiers and launch attributes
#ifdef CUDA_SIM_DISCOVER
// Preprocess-only pass used by the builder to find kernels (including macro-generated ones): the marker survives
// preprocessing, everything else stays out of the way.
#define __global__ __cs_global__
#define __launch_bounds__(...)
#define __noinline__
#define __forceinline__
#define __device__
#define __host__
#define __shared__
#define __constant__
#define __managed__
#define __grid_constant__
#define __align__(n)
#else

#include <cstdint>
#include <cstddef>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cfloat>
#include <cmath>
#include <math.h>
#include <time.h>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// NOTE: __noinline__ is not a macro here: libstdc++ spells `__attribute__((__noinline__))`, which the macro would
// break. The builder rewrites the token in the kernel source instead.
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// NOTE: block-scope thread_local is implicitly static; one block per OS thread at a time makes it block-shared.
// The 16-byte alignment lets kernels reinterpret shared float tiles as float4 as they may on a GPU.
#define __shared__ thread_local __attribute__((aligned(16)))
#define __constant__
#define __managed__
#define __grid_constant__

#ifndef CUDA_SIM_STACK_SIZE
#define CUDA_SIM_STACK_SIZE (256u * 1024u)  // per-fiber region (context, guard page, stack); a power of 2
#endif
#define CUDA_SIM_COLORS 256u  // cache colours: consecutive regions offset their context and stack by 64 bytes

// ------------------------------------------------------------------------------------------------------------
// 2. vector types
struct uint3 { unsigned int x, y, z; };
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

#define CS_VEC1(T, N) \
    struct N##1 { T x; }; \
    inline N##1 make_##N##1(T x) { return N##1{x}; }
#define CS_VEC2(T, N, A) \
    struct __attribute__((aligned(A))) N##2 { T x, y; }; \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define CS_VEC3(T, N) \
    struct N##3 { T x, y, z; }; \
    inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define CS_VEC4(T, N, A) \
    struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define CS_VECS(T, N, A2, A4) CS_VEC1(T, N) CS_VEC2(T, N, A2) CS_VEC3(T, N) CS_VEC4(T, N, A4)

CS_VECS(signed char, char, 2, 4)
CS_VECS(unsigned char, uchar, 2, 4)
CS_VECS(short, short, 4, 8)
CS_VECS(unsigned short, ushort, 4, 8)
CS_VECS(int, int, 8, 16)
CS_VEC1(unsigned int, uint) CS_VEC2(unsigned int, uint, 8) CS_VEC4(unsigned int, uint, 16)
CS_VECS(long, long, 16, 16)
CS_VECS(unsigned long, ulong, 16, 16)
CS_VECS(long long, longlong, 16, 16)
CS_VECS(unsigned long long, ulonglong, 16, 16)
CS_VECS(float, float, 8, 16)
CS_VECS(double, double, 16, 16)
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// ------------------------------------------------------------------------------------------------------------
// 3. the per-thread context and built-ins
namespace cuda_sim {

// The public head of a fiber's context; the runtime's private state follows it in the same page.
struct ThreadCtx {
    uint3 thread_idx;
    uint3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
    char* dyn_smem;
};

// NOTE: regions are aligned to their size, so contexts at the region base would all fall into one cache set and
// evict each other on every switch; region k keeps its context (and stack top) 64 * (k % CUDA_SIM_COLORS) bytes in.
__attribute__((always_inline)) inline const ThreadCtx* self() {
    auto base = reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) & ~uintptr_t(CUDA_SIM_STACK_SIZE - 1);
    return reinterpret_cast<const ThreadCtx*>(base + (base / CUDA_SIM_STACK_SIZE % CUDA_SIM_COLORS) * 64);
}

inline char* dynamic_smem() { return self()->dyn_smem; }

// `extern __shared__ T name[];` at namespace scope: converts to T* and indexes like the array it stands for.
template <class T>
struct DynamicShared {
    operator T*() const { return reinterpret_cast<T*>(dynamic_smem()); }
    T& operator[](size_t i) const { return reinterpret_cast<T*>(dynamic_smem())[i]; }
};

}  // namespace cuda_sim

#define threadIdx (::cuda_sim::self()->thread_idx)
#define blockIdx (::cuda_sim::self()->block_idx)
#define blockDim (::cuda_sim::self()->block_dim)
#define gridDim (::cuda_sim::self()->grid_dim)
#define warpSize 32

// ------------------------------------------------------------------------------------------------------------
// 4. block barriers and warp collectives (implemented by the runtime library, runtime.cpp)
enum cs_warp_kind {
    CS_SHFL_IDX, CS_SHFL_UP, CS_SHFL_DOWN, CS_SHFL_XOR, CS_BALLOT, CS_ANY, CS_ALL, CS_SYNCWARP,
    CS_MATCH_ANY, CS_MATCH_ALL, CS_REDUCE_ADD, CS_REDUCE_MIN, CS_REDUCE_MAX, CS_REDUCE_AND, CS_REDUCE_OR,
    CS_REDUCE_XOR, CS_WARP_CALL
};
enum cs_barrier_kind { CS_BAR_SYNC, CS_BAR_COUNT, CS_BAR_AND, CS_BAR_OR };

extern "C" {
int cs_barrier(int kind, int pred, int line, const char* file);
unsigned long long cs_warp(int kind, unsigned mask, unsigned long long value, int arg, int width, int line,
                           const char* file);
unsigned cs_activemask(void);
[[noreturn]] void cs_fault(const char* message, int line, const char* file);
}

// The compiler must not keep shared-memory values in registers across a barrier: other fibers write them.
#define CS_COMPILER_FENCE() asm volatile("" ::: "memory")

inline void __syncthreads(int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    CS_COMPILER_FENCE();
    cs_barrier(CS_BAR_SYNC, 0, line, file);
    CS_COMPILER_FENCE();
}
inline int __syncthreads_count(int pred, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    CS_COMPILER_FENCE();
    int r = cs_barrier(CS_BAR_COUNT, pred != 0, line, file);
    CS_COMPILER_FENCE();
    return r;
}
inline int __syncthreads_and(int pred, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    CS_COMPILER_FENCE();
    int r = cs_barrier(CS_BAR_AND, pred != 0, line, file);
    CS_COMPILER_FENCE();
    return r;
}
inline int __syncthreads_or(int pred, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    CS_COMPILER_FENCE();
    int r = cs_barrier(CS_BAR_OR, pred != 0, line, file);
    CS_COMPILER_FENCE();
    return r;
}

namespace cuda_sim {
template <class T>
inline unsigned long long to_bits(T v) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp collectives move values of at most 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
}
template <class T>
inline T from_bits(unsigned long long b) {
    T v;
    std::memcpy(&v, &b, sizeof(T));
    return v;
}
template <class T>
inline T warp_op(int kind, unsigned mask, T v, int arg, int width, int line, const char* file) {
    CS_COMPILER_FENCE();
    T r = from_bits<T>(cs_warp(kind, mask, to_bits(v), arg, width, line, file));
    CS_COMPILER_FENCE();
    return r;
}
}  // namespace cuda_sim

template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32, int line = __builtin_LINE(),
                     const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op(CS_SHFL_IDX, mask, var, src_lane, width, line, file);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, int line = __builtin_LINE(),
                        const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op(CS_SHFL_UP, mask, var, int(delta), width, line, file);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, int line = __builtin_LINE(),
                          const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op(CS_SHFL_DOWN, mask, var, int(delta), width, line, file);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, int line = __builtin_LINE(),
                         const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op(CS_SHFL_XOR, mask, var, lane_mask, width, line, file);
}
inline unsigned __ballot_sync(unsigned mask, int pred, int line = __builtin_LINE(),
                              const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op<unsigned>(CS_BALLOT, mask, pred != 0, 0, 32, line, file);
}
inline int __any_sync(unsigned mask, int pred, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op<int>(CS_ANY, mask, pred != 0, 0, 32, line, file);
}
inline int __all_sync(unsigned mask, int pred, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    return cuda_sim::warp_op<int>(CS_ALL, mask, pred != 0, 0, 32, line, file);
}
inline unsigned __activemask() { return cs_activemask(); }
inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cuda_sim::warp_op<int>(CS_SYNCWARP, mask, 0, 0, 32, line, file);
}
template <class T>
inline unsigned __match_any_sync(unsigned mask, T value, int line = __builtin_LINE(),
                                 const char* file = __builtin_FILE()) {
    return unsigned(cs_warp(CS_MATCH_ANY, mask, cuda_sim::to_bits(value), 0, 32, line, file));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* pred, int line = __builtin_LINE(),
                                 const char* file = __builtin_FILE()) {
    unsigned long long r = cs_warp(CS_MATCH_ALL, mask, cuda_sim::to_bits(value), 0, 32, line, file);
    *pred = int(r >> 32);
    return unsigned(r);
}
#define CS_WARP_REDUCE(NAME, KIND)                                                                          \
    inline unsigned NAME(unsigned mask, unsigned v, int line = __builtin_LINE(),                             \
                         const char* file = __builtin_FILE()) {                                               \
        return unsigned(cs_warp(KIND, mask, v, 0, 32, line, file));                                           \
    }                                                                                                         \
    inline int NAME(unsigned mask, int v, int line = __builtin_LINE(), const char* file = __builtin_FILE()) { \
        return int(unsigned(cs_warp(KIND, mask, unsigned(v), 1, 32, line, file)));                            \
    }
CS_WARP_REDUCE(__reduce_add_sync, CS_REDUCE_ADD)
CS_WARP_REDUCE(__reduce_min_sync, CS_REDUCE_MIN)
CS_WARP_REDUCE(__reduce_max_sync, CS_REDUCE_MAX)
CS_WARP_REDUCE(__reduce_and_sync, CS_REDUCE_AND)
CS_WARP_REDUCE(__reduce_or_sync, CS_REDUCE_OR)
CS_WARP_REDUCE(__reduce_xor_sync, CS_REDUCE_XOR)

#include "include/assert.h"  // assert() reports a fault; the builder also puts include/ first on the path
inline void __trap(int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cs_fault("__trap() called", line, file);
}
inline void __brkpt(int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
    cs_fault("__brkpt() called", line, file);
}

// ------------------------------------------------------------------------------------------------------------
// 5. atomics and fences. The __atomic builtins (what std::atomic_ref is made of) keep the header light. Relaxed
// ordering, like CUDA's atomics; __threadfence gives the ordering.
namespace cuda_sim {
template <class T>
using arg_t = std::type_identity_t<T>;  // deduce T from the pointer only, so atomicAdd(float*, 1.0) works
template <class T, class F>
inline T atomic_update(T* p, F f) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T next = f(old);
    while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) next = f(old);
    return old;
}
}  // namespace cuda_sim

template <class T>
inline T atomicAdd(T* p, cuda_sim::arg_t<T> v) {
    if constexpr (std::is_integral_v<T>) return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    else return cuda_sim::atomic_update(p, [v](T old) { return old + v; });
}
template <class T>
inline T atomicSub(T* p, cuda_sim::arg_t<T> v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }
template <class T>
inline T atomicExch(T* p, cuda_sim::arg_t<T> v) {
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
    return old;
}
template <class T>
inline T atomicMin(T* p, cuda_sim::arg_t<T> v) {
    return cuda_sim::atomic_update(p, [v](T old) { return v < old ? v : old; });
}
template <class T>
inline T atomicMax(T* p, cuda_sim::arg_t<T> v) {
    return cuda_sim::atomic_update(p, [v](T old) { return v > old ? v : old; });
}
template <class T>
inline T atomicAnd(T* p, cuda_sim::arg_t<T> v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }
template <class T>
inline T atomicOr(T* p, cuda_sim::arg_t<T> v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
template <class T>
inline T atomicXor(T* p, cuda_sim::arg_t<T> v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }
template <class T>
inline T atomicCAS(T* p, cuda_sim::arg_t<T> compare, cuda_sim::arg_t<T> v) {
    __atomic_compare_exchange(p, &compare, &v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return compare;  // holds the old value whether or not the exchange happened
}
inline unsigned atomicInc(unsigned* p, unsigned v) {
    return cuda_sim::atomic_update(p, [v](unsigned old) { return old >= v ? 0u : old + 1; });
}
inline unsigned atomicDec(unsigned* p, unsigned v) {
    return cuda_sim::atomic_update(p, [v](unsigned old) { return (old == 0 || old > v) ? v : old - 1; });
}
#define CS_ATOMIC_SCOPES(NAME) \
    template <class... A>      \
    inline auto NAME##_block(A... a) { return NAME(a...); } \
    template <class... A>      \
    inline auto NAME##_system(A... a) { return NAME(a...); }
CS_ATOMIC_SCOPES(atomicAdd) CS_ATOMIC_SCOPES(atomicSub) CS_ATOMIC_SCOPES(atomicExch) CS_ATOMIC_SCOPES(atomicMin)
CS_ATOMIC_SCOPES(atomicMax) CS_ATOMIC_SCOPES(atomicAnd) CS_ATOMIC_SCOPES(atomicOr) CS_ATOMIC_SCOPES(atomicXor)
CS_ATOMIC_SCOPES(atomicCAS) CS_ATOMIC_SCOPES(atomicInc) CS_ATOMIC_SCOPES(atomicDec)

inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// Cache-hinted loads and stores are plain memory accesses on the CPU.
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

inline long long clock64() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
inline void __nanosleep(unsigned) {}

// ------------------------------------------------------------------------------------------------------------
// 6. math and bit intrinsics. <math.h> already provides expf, logf, erff, tanhf, log1pf, fmaxf, exp10f,
// sincosf ... in the global namespace; these are the CUDA-only names.
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }  // NaN -> 0, as on the GPU
inline float sinpif(float x) { return sinf(float(M_PI) * x); }
inline float cospif(float x) { return cosf(float(M_PI) * x); }
inline double sinpi(double x) { return sin(M_PI * x); }
inline double cospi(double x) { return cos(M_PI * x); }
inline void sincospif(float x, float* s, float* c) { sincosf(float(M_PI) * x, s, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * float(M_SQRT1_2)); }
inline double normcdf(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }

namespace cuda_sim {
// Inverse error function: Giles' single-precision approximation refined by two Newton steps in double, so the
// float result is correctly rounded in practice and the double one accurate to a few ulp.
inline double erfinv_impl(double x) {
    if (x <= -1.0) return x == -1.0 ? -HUGE_VAL : NAN;
    if (x >= 1.0) return x == 1.0 ? HUGE_VAL : NAN;
    double w = -log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    }
    double y = p * x;
    for (int i = 0; i < 2; ++i) y -= (erf(y) - x) / (M_2_SQRTPI * exp(-y * y));
    return y;
}
}  // namespace cuda_sim
inline float erfinvf(float x) { return float(cuda_sim::erfinv_impl(x)); }
inline double erfinv(double x) { return cuda_sim::erfinv_impl(x); }
inline float erfcinvf(float x) { return float(cuda_sim::erfinv_impl(1.0 - double(x))); }
inline double erfcinv(double x) { return cuda_sim::erfinv_impl(1.0 - x); }
inline float normcdfinvf(float x) { return float(-M_SQRT2 * cuda_sim::erfinv_impl(1.0 - 2.0 * double(x))); }
inline double normcdfinv(double x) { return -M_SQRT2 * cuda_sim::erfinv_impl(1.0 - 2.0 * x); }

// min/max: CUDA overloads them for every arithmetic pair with the usual conversions; float pairs follow fminf.
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
    using C = std::common_type_t<A, B>;
    if constexpr (std::is_floating_point_v<C>) return std::fmin(C(a), C(b));
    else return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
    using C = std::common_type_t<A, B>;
    if constexpr (std::is_floating_point_v<C>) return std::fmax(C(a), C(b));
    else return C(a) < C(b) ? C(b) : C(a);
}
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

inline float __int_as_float(int v) { return cuda_sim::from_bits<float>(unsigned(v)); }
inline int __float_as_int(float v) { return int(unsigned(cuda_sim::to_bits(v))); }
inline float __uint_as_float(unsigned v) { return cuda_sim::from_bits<float>(v); }
inline unsigned __float_as_uint(float v) { return unsigned(cuda_sim::to_bits(v)); }
inline double __longlong_as_double(long long v) { return cuda_sim::from_bits<double>((unsigned long long)v); }
inline long long __double_as_longlong(double v) { return (long long)cuda_sim::to_bits(v); }
inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __float2int_rd(float x) { return int(floorf(x)); }
inline int __float2int_ru(float x) { return int(ceilf(x)); }
inline unsigned __float2uint_rn(float x) { return unsigned(nearbyintf(x)); }
inline unsigned __float2uint_rz(float x) { return unsigned(x); }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline int __double2int_rn(double x) { return int(nearbyint(x)); }
inline int __double2int_rz(double x) { return int(x); }
inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
inline float __double2float_rn(double x) { return float(x); }
inline float __int2float_rn(int x) { return float(x); }
inline float __uint2float_rn(unsigned x) { return float(x); }
inline float __ll2float_rn(long long x) { return float(x); }
inline float __ull2float_rn(unsigned long long x) { return float(x); }
inline double __int2double_rn(int x) { return double(x); }
inline double __ll2double_rn(long long x) { return double(x); }

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    return __builtin_bswap32(x);
}
inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev(unsigned(x)) << 32) | __brev(unsigned(x >> 32));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long v = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= unsigned((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return unsigned((v << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return unsigned(v >> (s & 31));
}
inline int __mulhi(int a, int b) { return int(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline int __hadd(int a, int b) { return int(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return int(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return unsigned(((unsigned long long)a + b + 1) >> 1); }

// ------------------------------------------------------------------------------------------------------------
// 7. launch glue used by the module the builder generates
namespace cuda_sim {

// The parameter kind of a class type that stands for a device scalar type (cuda_fp16.h and cuda_bf16.h in
// include/ specialise it for __half and __nv_bfloat16), so launches check their arrays like float arrays.
template <class T>
struct sim_kind {
    static constexpr const char* value = nullptr;
};

struct LaunchCfg {
    unsigned grid[3];
    unsigned block[3];
    unsigned long long shared_mem;
    const char* kernel;
};

extern "C" int cs_run(const LaunchCfg* cfg, void (*thunk)(void*), void* pack, char* err, int errlen, int* errline);

// Parameter descriptors, written into a fixed buffer (std::string would cost every module a heavy include).
struct SigBuf {
    char data[8192];
    size_t n = 0;
    void put(const char* s, size_t len) {
        if (n + len >= sizeof data) len = sizeof data - 1 - n;
        std::memcpy(data + n, s, len);
        n += len;
        data[n] = 0;
    }
    void put(const char* s) { put(s, std::strlen(s)); }
    void num(unsigned long long v) {
        char t[24];
        put(t, size_t(snprintf(t, sizeof t, "%llu", v)));
    }
};

template <class T>
void put_type_name(SigBuf& b) {
    const char* s = __PRETTY_FUNCTION__;  // "void cuda_sim::put_type_name(SigBuf&) [with T = const float*]"
    const char* p = std::strstr(s, "T = ");
    if (!p) return b.put("?");
    p += 4;
    const char* e = std::strpbrk(p, ";]");
    b.put(p, e ? size_t(e - p) : std::strlen(p));
}

// Kinds: p>KIND (pointer to KIND; v for void), b1 (bool), iN / uN / fN (N bytes), f2 (__half), bf2
// (__nv_bfloat16), s (other trivially copyable).
template <class T>
void put_kind(SigBuf& b) {
    if constexpr (sim_kind<T>::value != nullptr) {
        b.put(sim_kind<T>::value);
    } else if constexpr (std::is_pointer_v<T>) {
        using U = std::remove_cv_t<std::remove_pointer_t<T>>;
        b.put("p>");
        if constexpr (std::is_void_v<U>) b.put("v");
        else put_kind<U>(b);
    } else if constexpr (std::is_same_v<T, bool>) {
        b.put("b1");
    } else if constexpr (std::is_enum_v<T>) {
        put_kind<std::underlying_type_t<T>>(b);
    } else if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
        b.put(std::is_floating_point_v<T> ? "f" : std::is_signed_v<T> ? "i" : "u");
        b.num(sizeof(T));
    } else {
        b.put("s");
    }
}

template <class... P>
struct Kernel {
    using Fn = void (*)(P...);
    struct Pack {
        Fn fn;
        std::tuple<P...> args;
    };
    static constexpr size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
    // Arguments arrive packed like a C struct of the parameters (each at its natural alignment).
    struct Offsets {
        size_t at[sizeof...(P) + 1];
    };
    static constexpr Offsets offsets() {
        Offsets off{};
        size_t sizes[] = {sizeof(P)..., 0}, aligns[] = {alignof(P)..., 1};
        size_t o = 0;
        for (size_t i = 0; i < sizeof...(P); ++i) {
            o = align_up(o, aligns[i]);
            off.at[i] = o;
            o += sizes[i];
        }
        off.at[sizeof...(P)] = o;
        return off;
    }
    template <class T>
    static T load(const char* p) {
        T v;
        std::memcpy(static_cast<void*>(&v), p, sizeof(T));
        return v;
    }
    template <size_t... I>
    static std::tuple<P...> unpack(const char* buf, std::index_sequence<I...>) {
        constexpr auto off = offsets();
        return std::tuple<P...>(load<P>(buf + off.at[I])...);
    }
    static void thunk(void* p) {
        auto* pk = static_cast<Pack*>(p);
        std::apply(pk->fn, pk->args);  // each fiber gets its own by-value copies of the parameters
    }
    static int launch(Fn fn, const LaunchCfg* cfg, const char* args, char* err, int errlen, int* errline) {
        Pack pack{fn, unpack(args, std::index_sequence_for<P...>{})};
        return cs_run(cfg, &thunk, &pack, err, errlen, errline);
    }
    // One line per parameter: kind|size|align|offset|C type
    static void signature(SigBuf& b) {
        static_assert((std::is_trivially_copyable_v<P> && ...), "kernel parameters must be trivially copyable");
        constexpr auto off = offsets();
        size_t i = 0;
        ((b.put(i ? "\n" : ""), put_kind<P>(b), b.put("|"), b.num(sizeof(P)), b.put("|"), b.num(alignof(P)),
          b.put("|"), b.num(off.at[i]), b.put("|"), put_type_name<P>(b), ++i), ...);
    }
};

template <class... P>
Kernel<P...> kernel_of(void (*)(P...));

struct Entry {
    const char* name;
    int (*launch)(const LaunchCfg*, const char*, char*, int, int*);
    void (*signature)(SigBuf&);
};

}  // namespace cuda_sim

// ------------------------------------------------------------------------------------------------------------
// 8. tensor-core fragment operations. mma.sync and ldmatrix are warp-wide: each lane holds a piece of every
// matrix, so one lane's result depends on the other 31 lanes' registers. Each lane arrives at a warp collective
// (CS_WARP_CALL) with a payload on its stack; once all 32 have arrived the scheduler runs the payload's function
// once, with the 32 payloads in lane order, and it writes every lane's result registers before any lane goes
// on. The fragment layouts are the PTX ISA's ("Matrix Fragments for mma.m16n8k16 / m16n8k8"): lane l is
// (group g = l / 4, thread t = l % 4). 16-bit values convert through include/'s exact routines (cuda_sim::fp).
#include "include/cuda_bf16.h"

namespace cuda_sim {

struct WarpCall {
    void (*fn)(void* const* lanes);
};

inline void warp_call(WarpCall* payload, int line, const char* file) {
    CS_COMPILER_FENCE();
    cs_warp(CS_WARP_CALL, 0xffffffffu, reinterpret_cast<unsigned long long>(payload), 0, 32, line, file);
    CS_COMPILER_FENCE();
}

// cvt.rna.tf32.f32: keep 10 mantissa bits, ties away from zero (finite values may round up to infinity)
inline unsigned float_to_tf32(float f) {
    unsigned x = unsigned(to_bits(f));
    if ((x & 0x7f800000u) == 0x7f800000u) return (x & 0x7fffffu) ? 0x7fffffffu : x;
    return (x + 0x1000u) & 0xffffe000u;
}

// D (4 floats per lane) = A (16 x K) * B (K x 8) + D, products exact in float (11- or 8-bit significands) and
// summed in float in k order. ELEM(word, half) reads an input element out of a lane's 32-bit registers.
struct MmaLane {
    WarpCall call;
    const unsigned* a;  // 4 registers
    const unsigned* b;  // 2 registers
    float* d;           // 4 accumulators, read and written
};

template <int K, class Elem>
inline void mma_m16n8(void* const* lanes, Elem elem) {
    float A[16][K], B[K][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
        const MmaLane& p = *static_cast<const MmaLane*>(lanes[l]);
        int g = l / 4, t = l % 4;
        // m16n8k16: a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); b0 (2t.., g), b1 (2t+8.., g)
        if (K == 16) {
            for (int h = 0; h < 2; ++h) {
                A[g][2 * t + h] = elem(p.a[0], h);
                A[g + 8][2 * t + h] = elem(p.a[1], h);
                A[g][2 * t + 8 + h] = elem(p.a[2], h);
                A[g + 8][2 * t + 8 + h] = elem(p.a[3], h);
                B[2 * t + h][g] = elem(p.b[0], h);
                B[2 * t + 8 + h][g] = elem(p.b[1], h);
            }
        } else {  // tf32 m16n8k8: a0: (g, t), a1: (g+8, t), a2: (g, t+4), a3: (g+8, t+4); b0: (t, g), b1: (t+4, g)
            A[g][t] = elem(p.a[0], 0);
            A[g + 8][t] = elem(p.a[1], 0);
            A[g][t + 4] = elem(p.a[2], 0);
            A[g + 8][t + 4] = elem(p.a[3], 0);
            B[t][g] = elem(p.b[0], 0);
            B[t + 4][g] = elem(p.b[1], 0);
        }
        // c0, c1: (g, 2t..2t+1); c2, c3: (g+8, 2t..2t+1)
        C[g][2 * t] = p.d[0];
        C[g][2 * t + 1] = p.d[1];
        C[g + 8][2 * t] = p.d[2];
        C[g + 8][2 * t + 1] = p.d[3];
    }
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 8; ++j) {
            float acc = C[i][j];
            for (int k = 0; k < K; ++k) acc += A[i][k] * B[k][j];
            C[i][j] = acc;
        }
    for (int l = 0; l < 32; ++l) {
        const MmaLane& p = *static_cast<const MmaLane*>(lanes[l]);
        int g = l / 4, t = l % 4;
        p.d[0] = C[g][2 * t];
        p.d[1] = C[g][2 * t + 1];
        p.d[2] = C[g + 8][2 * t];
        p.d[3] = C[g + 8][2 * t + 1];
    }
}

inline void mma_f16_exec(void* const* lanes) {
    mma_m16n8<16>(lanes, [](unsigned w, int h) { return fp::half_to_float((unsigned short)(w >> (16 * h))); });
}
inline void mma_bf16_exec(void* const* lanes) {
    mma_m16n8<16>(lanes, [](unsigned w, int h) { return fp::bf16_to_float((unsigned short)(w >> (16 * h))); });
}
// the tensor cores read the 19 high bits of a tf32 operand (sign, exponent, 10 mantissa bits) and ignore the rest
inline void mma_tf32_exec(void* const* lanes) {
    mma_m16n8<8>(lanes, [](unsigned w, int) { return from_bits<float>(w & 0xffffe000u); });
}

// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: lane l gives the address of row l % 8 of matrix l / 8 (16
// bytes, 16-byte aligned); register j of lane (g, t) receives matrix j's elements (g, 2t) and (g, 2t + 1), or with
// .trans (2t, g) and (2t + 1, g), the lower column or row in the low half.
struct LdmatrixLane {
    WarpCall call;
    const unsigned short* row;
    unsigned* regs;
};

template <int N, bool TRANS>
inline void ldmatrix_exec(void* const* lanes) {
    for (int l = 0; l < 32; ++l) {
        const LdmatrixLane& p = *static_cast<const LdmatrixLane*>(lanes[l]);
        int g = l / 4, t = l % 4;
        for (int j = 0; j < N; ++j) {
            unsigned short lo, hi;
            if (TRANS) {
                lo = static_cast<const LdmatrixLane*>(lanes[8 * j + 2 * t])->row[g];
                hi = static_cast<const LdmatrixLane*>(lanes[8 * j + 2 * t + 1])->row[g];
            } else {
                const unsigned short* r = static_cast<const LdmatrixLane*>(lanes[8 * j + g])->row;
                lo = r[2 * t];
                hi = r[2 * t + 1];
            }
            p.regs[j] = unsigned(lo) | (unsigned(hi) << 16);
        }
    }
}

}  // namespace cuda_sim

template <int N, bool TRANS>
inline void cs_ldmatrix(unsigned* regs, const void* row, int line, const char* file) {
    static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
    // only lanes 0 .. 8N - 1 give addresses; the others' are ignored, as on the GPU
    unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
    if (lane < 8u * N && reinterpret_cast<uintptr_t>(row) % 16 != 0) {
        char msg[112];
        snprintf(msg, sizeof msg, "misaligned address: ldmatrix row at %p is not 16-byte aligned", row);
        cs_fault(msg, line, file);
    }
    cuda_sim::LdmatrixLane p{{&cuda_sim::ldmatrix_exec<N, TRANS>}, static_cast<const unsigned short*>(row), regs};
    cuda_sim::warp_call(&p.call, line, file);
}

enum cs_mma_type { CS_MMA_F16, CS_MMA_BF16, CS_MMA_TF32 };

template <int TYPE>
inline void cs_mma(float* d, const unsigned* a, const unsigned* b, int line, const char* file) {
    void (*fn)(void* const*) = TYPE == CS_MMA_F16    ? &cuda_sim::mma_f16_exec
                               : TYPE == CS_MMA_BF16 ? &cuda_sim::mma_bf16_exec
                                                     : &cuda_sim::mma_tf32_exec;
    cuda_sim::MmaLane p{{fn}, a, b, d};
    cuda_sim::warp_call(&p.call, line, file);
}

#endif  // CUDA_SIM_DISCOVER
