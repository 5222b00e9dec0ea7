// optim_cpu.cpp: the fused optimizer steps for the CPU, one pass over memory per tensor.
//
// Entry points (C ABI, called through ctypes by backends/_optim_native.py, which compiles this file with the
// host C++ compiler on first use and caches the library):
//   mt_optim_cpu_step(kind, dtype, n_tensors, arrays, data_offset, sizes, chunk, next_chunk, consts, flags)
//     -> 0, or < 0 on bad input
//     kind         an OptimKind
//     dtype        0 float32, 1 float64
//     arrays       u64, role-major: arrays[role * n_tensors + tensor], roles param, grad, state 0..2 (0 for a
//                  role the step does not use); data addresses, or with data_offset >= 0 the addresses of the
//                  NumPy array objects, whose data pointer sits data_offset bytes in (Python checks the offset
//                  once: reading it here saves a microsecond per array per step)
//     sizes        elements per tensor
//     chunk        elements per piece of work: the group's elements, tensors laid end to end, are cut into
//                  pieces of `chunk`, and piece k is [k * chunk, (k + 1) * chunk)
//     next_chunk   a counter shared by every thread working on the step (starting at 0): each call takes
//                  pieces from it until none are left, so a thread that starts late (its core busy with
//                  another library's spinning workers) just takes fewer
//     consts       MT_OPTIM_GROUP_SCALARS group scalars, then per tensor (extra flag bits, t[0], t[1])
//     flags        the group's option bits (optim_math.cuh)
//   mt_optim_cpu_disjoint(n_tensors, arrays, data_offset, sizes, itemsize) -> 1 when no two roles of a tensor
//     share memory (the loops are compiled on that promise), else 0
//
//   mt_optim_cpu_step_parallel(workers, kind, ...) -> the step on up to `workers` threads of the worker pool
//     (pool_cpu.h's MT_PARALLEL: each runs the step with the same counter)
//
// The per-element math is optim_math.cuh's, shared with the GPU kernels. Threads are the caller's: each calls
// the step with the same counter; this code takes no locks and allocates nothing.
#include <cmath>
#include <cstdint>
#include <utility>

#include "optim_math.cuh"
#include "pool_cpu.h"

enum OptimKind { K_adam, K_sgd, K_rmsprop, K_adagrad, K_lion };

namespace {

using mt_optim::idx;
constexpr int kFlagVariants = 16;  // four option bits at most (Sgd's)

// One contiguous range with the option bits fixed at compile time: the branches fold and the loop vectorises.
// __restrict__ is the caller's promise (Python checks it): the roles are distinct arrays.
template <typename T, class Op, int F>
void run_range(idx n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ s0, T* __restrict__ s1,
               T* __restrict__ s2, const T* scalars, const T* tensor_scalars) {
    T s[MT_OPTIM_GROUP_SCALARS], t[2] = {tensor_scalars[0], tensor_scalars[1]};
    for (int k = 0; k < MT_OPTIM_GROUP_SCALARS; ++k) s[k] = scalars[k];
    // the first few elements on their own, so that the main loop starts on a cache-line boundary of p and its
    // full-width stores never straddle two lines (arrays from malloc are only 16-byte aligned)
    idx head = (idx)(((uintptr_t)0 - (uintptr_t)p) % 64 / sizeof(T));
    if (head > n) head = n;
    for (idx i = 0; i < head; ++i) Op::template apply<T>(i, p, g, s0, s1, s2, s, t, F);
    for (idx i = head; i < n; ++i) Op::template apply<T>(i, p, g, s0, s1, s2, s, t, F);
}

template <typename T, class Op> using RangeFn = void (*)(idx, T*, const T*, T*, T*, T*, const T*, const T*);

template <typename T, class Op, int... F>
constexpr RangeFn<T, Op> range_fn(int f, std::integer_sequence<int, F...>) {
    constexpr RangeFn<T, Op> table[] = {&run_range<T, Op, F>...};
    return table[f];
}

constexpr int kRoles = 5;

struct Group {
    idx n;
    const uint64_t* arrays;
    idx data_offset;
    const long long* sizes;

    template <typename T> T* at(int role, idx ti) const {
        uint64_t a = arrays[role * n + ti];
        if (!a) return nullptr;
        if (data_offset >= 0) a = *reinterpret_cast<const uint64_t*>(a + data_offset);
        return reinterpret_cast<T*>(a);
    }
};

template <typename T, class Op>
int run(const Group& grp, idx lo, idx hi, const double* consts, int flags) {
    T s[MT_OPTIM_GROUP_SCALARS];
    for (int k = 0; k < MT_OPTIM_GROUP_SCALARS; ++k) s[k] = (T)consts[k];
    const double* per_tensor = consts + MT_OPTIM_GROUP_SCALARS;
    idx offset = 0;
    for (idx ti = 0; ti < grp.n && offset < hi; offset += grp.sizes[ti], ++ti) {
        idx start = lo > offset ? lo - offset : 0;
        idx stop = hi - offset < grp.sizes[ti] ? hi - offset : grp.sizes[ti];
        if (start >= stop) continue;
        int f = flags | (int)per_tensor[3 * ti];
        if (f < 0 || f >= kFlagVariants) return -2;
        T t[2] = {(T)per_tensor[3 * ti + 1], (T)per_tensor[3 * ti + 2]};
        T* a[kRoles];
        for (int r = 0; r < kRoles; ++r) {
            a[r] = grp.at<T>(r, ti);
            if (a[r]) a[r] += start;
        }
        range_fn<T, Op>(f, std::make_integer_sequence<int, kFlagVariants>())(stop - start, a[0], a[1], a[2], a[3],
                                                                              a[4], s, t);
    }
    return 0;
}

template <typename T>
int run_kind(int kind, const Group& grp, idx lo, idx hi, const double* consts, int flags) {
    switch (kind) {
        case K_adam: return run<T, mt_optim::Adam>(grp, lo, hi, consts, flags);
        case K_sgd: return run<T, mt_optim::Sgd>(grp, lo, hi, consts, flags);
        case K_rmsprop: return run<T, mt_optim::Rmsprop>(grp, lo, hi, consts, flags);
        case K_adagrad: return run<T, mt_optim::Adagrad>(grp, lo, hi, consts, flags);
        case K_lion: return run<T, mt_optim::Lion>(grp, lo, hi, consts, flags);
    }
    return -1;
}

}  // namespace

extern "C" int mt_optim_cpu_step(int kind, int dtype, long long n_tensors, const uint64_t* arrays,
                                 long long data_offset, const long long* sizes, long long chunk,
                                 long long* next_chunk, const double* consts, int flags) {
    if (chunk <= 0 || (dtype != 0 && dtype != 1)) return -1;
    Group grp{n_tensors, arrays, data_offset, sizes};
    idx total = 0;
    for (idx ti = 0; ti < n_tensors; ++ti) total += sizes[ti];
    for (;;) {
        idx lo = __atomic_fetch_add(next_chunk, 1, __ATOMIC_RELAXED) * chunk;
        if (lo >= total) return 0;
        idx hi = lo + chunk < total ? lo + chunk : total;
        int rc = dtype == 0 ? run_kind<float>(kind, grp, lo, hi, consts, flags)
                            : run_kind<double>(kind, grp, lo, hi, consts, flags);
        if (rc) return rc;
    }
}

extern "C" int mt_optim_cpu_disjoint(long long n_tensors, const uint64_t* arrays, long long data_offset,
                                     const long long* sizes, int itemsize) {
    Group grp{n_tensors, arrays, data_offset, sizes};
    for (idx ti = 0; ti < n_tensors; ++ti) {
        uint64_t bytes = (uint64_t)sizes[ti] * (uint64_t)itemsize;
        for (int r = 0; r < kRoles; ++r) {
            uint64_t a = (uint64_t)grp.at<char>(r, ti);
            for (int q = r + 1; a && bytes && q < kRoles; ++q) {
                uint64_t b = (uint64_t)grp.at<char>(q, ti);
                if (b && a < b + bytes && b < a + bytes) return 0;
            }
        }
    }
    return 1;
}

// the number of group scalars the caller must pass, so the Python side can check it agrees
extern "C" int mt_optim_cpu_group_scalars() { return MT_OPTIM_GROUP_SCALARS; }

// the step's twin on the worker pool (pool_cpu.h)
MT_PARALLEL(mt_optim_cpu_step)
