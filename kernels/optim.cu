// optim.cu: multi-tensor fused optimizer steps: one launch updates every tensor of a parameter group.
//
// Kernels (T = float | double), one per optimizer, all with the same parameters:
//   adam_step<T>      Adam or AdamW, with amsgrad and maximize
//   sgd_step<T>       SGD with momentum, dampening, nesterov, weight decay and maximize
//   rmsprop_step<T>   RMSprop, centered and with momentum
//   adagrad_step<T>   Adagrad with lr decay
//   lion_step<T>      Lion
//
// The tensors of a group arrive through device-side pointer tables (u64 addresses, one table per role: param,
// grad, up to three states; a role a step does not use gets any valid table). The launcher cuts every tensor
// into chunks of `chunk` elements and passes a chunk table (tensor index, start); block c of the grid walks
// chunk c (grid-stride over chunks), so one launch covers a group of any size and shape mix. `consts` holds
// the group's MT_OPTIM_GROUP_SCALARS scalars, then per tensor (extra option bits, t[0], t[1]); `flags` the
// group's option bits.
//
// The per-element update is optim_math.cuh's, shared with the CPU build (optim_cpu.cpp).
#include "common.cuh"
#include "optim_math.cuh"

template <typename T> __device__ __forceinline__ T* tab(const u64* t, i64 i) { return reinterpret_cast<T*>(t[i]); }

template <typename T, class Op>
__device__ __forceinline__ void multi_tensor_step(const u64* __restrict__ params, const u64* __restrict__ grads,
                                                  const u64* __restrict__ state0, const u64* __restrict__ state1,
                                                  const u64* __restrict__ state2, const i64* __restrict__ sizes,
                                                  const i64* __restrict__ chunks, const double* __restrict__ consts,
                                                  i64 n_chunks, i64 chunk, int flags) {
    T s[MT_OPTIM_GROUP_SCALARS];
    #pragma unroll
    for (int k = 0; k < MT_OPTIM_GROUP_SCALARS; ++k) s[k] = (T)consts[k];
    const double* per_tensor = consts + MT_OPTIM_GROUP_SCALARS;
    for (i64 c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        i64 ti = chunks[2 * c], start = chunks[2 * c + 1];
        i64 stop = start + chunk < sizes[ti] ? start + chunk : sizes[ti];
        T* p = tab<T>(params, ti);
        const T* g = tab<T>(grads, ti);
        T* a = tab<T>(state0, ti);
        T* b = tab<T>(state1, ti);
        T* d = tab<T>(state2, ti);
        int f = flags | (int)per_tensor[3 * ti];
        T t[2] = {(T)per_tensor[3 * ti + 1], (T)per_tensor[3 * ti + 2]};
        for (i64 i = start + threadIdx.x; i < stop; i += blockDim.x) Op::template apply<T>(i, p, g, a, b, d, s, t, f);
    }
}

#define MT_OPTIM_PARAMS                                                                                         \
    const u64 *__restrict__ params, const u64 *__restrict__ grads, const u64 *__restrict__ state0,               \
        const u64 *__restrict__ state1, const u64 *__restrict__ state2, const i64 *__restrict__ sizes,           \
        const i64 *__restrict__ chunks, const double *__restrict__ consts, i64 n_chunks, i64 chunk, int flags
#define MT_OPTIM_ARGS params, grads, state0, state1, state2, sizes, chunks, consts, n_chunks, chunk, flags

template <typename T> __global__ void adam_step(MT_OPTIM_PARAMS) {
    multi_tensor_step<T, mt_optim::Adam>(MT_OPTIM_ARGS);
}
template <typename T> __global__ void sgd_step(MT_OPTIM_PARAMS) {
    multi_tensor_step<T, mt_optim::Sgd>(MT_OPTIM_ARGS);
}
template <typename T> __global__ void rmsprop_step(MT_OPTIM_PARAMS) {
    multi_tensor_step<T, mt_optim::Rmsprop>(MT_OPTIM_ARGS);
}
template <typename T> __global__ void adagrad_step(MT_OPTIM_PARAMS) {
    multi_tensor_step<T, mt_optim::Adagrad>(MT_OPTIM_ARGS);
}
template <typename T> __global__ void lion_step(MT_OPTIM_PARAMS) {
    multi_tensor_step<T, mt_optim::Lion>(MT_OPTIM_ARGS);
}
