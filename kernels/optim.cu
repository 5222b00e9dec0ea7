// optim.cu: multi-tensor fused optimizer steps: one launch updates every tensor of a parameter group.
//
// Kernels (T = float | double | __half | __nv_bfloat16), one per optimizer, all with the same parameters. A 16-bit
// group (parameters, gradients and states all in T, as PyTorch's fused optimizers keep the state in the
// parameter's dtype) computes in float with float scalars and rounds each stored value once: the CPU body's
// float32 working copies, operation for operation.
//   adam_step<T>      Adam or AdamW, with amsgrad and maximize
//   sgd_step<T>       SGD with momentum, dampening, nesterov, weight decay and maximize
//   rmsprop_step<T>   RMSprop, centered and with momentum
//   adagrad_step<T>   Adagrad with lr decay
//   lion_step<T>      Lion
//
// Version 2 (this one): the group arrives as one cached device table (multi_tensor.cuh: roles param, grad,
// state 0..2), walked chunk by chunk with MT_ILP elements in flight per thread and 128-bit loads on aligned
// tensors. Nothing is uploaded per step in the common case: the group scalars c0..c7 and the per-tensor values
// (extra flag bits, t[0], t[1]) are kernel arguments when every tensor shares them; only when they differ
// (tensors at different step counts, SGD buffers created at different steps) does `per_tensor` point at an
// uploaded array of (flag bits, t[0], t[1]) per tensor. `roles` is the bit mask of the state roles the step
// uses (bit 2 + k for state k): only those are loaded and stored.
// (Version 1 re-uploaded seven tables every step and used scalar loads, one element in flight per thread.)
//
// The per-element update is optim_math.cuh's, shared with the CPU build (optim_cpu.cpp): it runs on the
// registers of the thread's batch (element k of each role).
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "multi_tensor.cuh"
#include "optim_math.cuh"

template <typename A, class Op> struct OptimBatch {
    const A* s;
    const A* t;
    int f;
    template <int N> __device__ __forceinline__ void operator()(A (&r)[MT_ROLES][N], int k) const {
        Op::template apply<A>(k, r[0], r[1], r[2], r[3], r[4], s, t, f);
    }
};

template <typename T, class Op>
__device__ __forceinline__ void multi_tensor_step(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks,
                                                  i64 chunk, int roles, int flags,
                                                  const double* __restrict__ per_tensor, int tensor_flags,
                                                  double t0, double t1, const double (&c)[MT_OPTIM_GROUP_SCALARS]) {
    typedef acc_t<T> A;
    A s[MT_OPTIM_GROUP_SCALARS];
    #pragma unroll
    for (int k = 0; k < MT_OPTIM_GROUP_SCALARS; ++k) s[k] = (A)c[k];
    A t[2] = {(A)t0, (A)t1};
    OptimBatch<A, Op> op{s, t, flags | tensor_flags};
    const int load = roles | 3, store = roles | 1;  // the gradient is read, never written
    for (i64 ci = blockIdx.x; ci < n_chunks; ci += gridDim.x) {
        MtChunk<T> m = mt_chunk<T>(table, n_tensors, ci, chunk);
        if (per_tensor != nullptr) {
            op.f = flags | (int)per_tensor[3 * m.ti];
            t[0] = (A)per_tensor[3 * m.ti + 1];
            t[1] = (A)per_tensor[3 * m.ti + 2];
        }
        mt_span<T, MT_ROLES>(m, load, store, op);
    }
}

#define MT_OPTIM_PARAMS                                                                                         \
    const i64 *__restrict__ table, i64 n_tensors, i64 n_chunks, i64 chunk, int roles, int flags,                 \
        const double *__restrict__ per_tensor, int tensor_flags, double t0, double t1, double c0, double c1,     \
        double c2, double c3, double c4, double c5, double c6, double c7
#define MT_OPTIM_ARGS \
    table, n_tensors, n_chunks, chunk, roles, flags, per_tensor, tensor_flags, t0, t1, {c0, c1, c2, c3, c4, c5, c6, c7}

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
