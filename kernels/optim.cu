// optim.cu: multi-tensor fused optimizer steps: one launch updates every tensor of a parameter group.
//
// Kernels (T = float | double):
//   adam_step<T>   Adam (decoupled = 0) or AdamW (decoupled = 1), with amsgrad and maximize
//   sgd_step<T>    SGD with momentum, dampening, nesterov, weight decay and maximize
//
// The tensors of a group arrive through device-side pointer tables (u64 addresses, one entry per tensor and
// role: param, grad, states). The launcher cuts every tensor into chunks of `chunk` elements and passes a
// chunk table (tensor index, start); block c of the grid walks chunk c (grid-stride over chunks), so one launch
// covers a group of any size and shape mix. Per-tensor scalars that depend on the step count (Adam's bias
// corrections) come in a double table; everything else is a kernel argument.
//
// The arithmetic follows backends/_optim.py's reference bodies operation for operation, in T, so the fused
// step matches the other implementations to rounding.
#include "common.cuh"

template <typename T> __device__ __forceinline__ T* tab(const u64* t, i64 i) { return reinterpret_cast<T*>(t[i]); }

template <typename T>
__global__ void adam_step(const u64* __restrict__ params, const u64* __restrict__ grads,
                          const u64* __restrict__ exp_avgs, const u64* __restrict__ exp_avg_sqs,
                          const u64* __restrict__ max_exp_avg_sqs, const i64* __restrict__ sizes,
                          const i64* __restrict__ chunks, const double* __restrict__ consts, i64 n_chunks, i64 chunk,
                          T beta1, T beta2, T one_minus_beta2, T g_scale, T weight_decay, T decay, int coupled,
                          int decoupled, int amsgrad, int maximize) {
    for (i64 c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        i64 ti = chunks[2 * c], start = chunks[2 * c + 1];
        i64 stop = start + chunk < sizes[ti] ? start + chunk : sizes[ti];
        T* p = tab<T>(params, ti);
        const T* g = tab<T>(grads, ti);
        T* m = tab<T>(exp_avgs, ti);
        T* v = tab<T>(exp_avg_sqs, ti);
        T* vmax = amsgrad ? tab<T>(max_exp_avg_sqs, ti) : nullptr;
        T eps_scaled = (T)consts[2 * ti], step_scale = (T)consts[2 * ti + 1];
        for (i64 i = start + threadIdx.x; i < stop; i += blockDim.x) {
            T pi = p[i], gi = g[i];
            if (decoupled) pi = pi * decay;
            if (coupled) gi = maximize ? pi * weight_decay - gi : pi * weight_decay + gi;
            T mi = m[i] * beta1 + gi * g_scale;
            T vi = v[i] * beta2 + (gi * gi) * one_minus_beta2;
            m[i] = mi;
            v[i] = vi;
            if (amsgrad) {
                vi = mt_max(vmax[i], vi);
                vmax[i] = vi;
            }
            T denom = mt_sqrt(vi) + eps_scaled;
            p[i] = pi + (mi / denom) * step_scale;
        }
    }
}

template <typename T>
__global__ void sgd_step(const u64* __restrict__ params, const u64* __restrict__ grads, const u64* __restrict__ bufs,
                         const i64* __restrict__ sizes, const i64* __restrict__ chunks,
                         const i64* __restrict__ first_steps, i64 n_chunks, i64 chunk, T lr, T weight_decay,
                         T momentum, T one_minus_dampening, int use_wd, int use_momentum, int dampening_nonzero,
                         int nesterov, int maximize) {
    for (i64 c = blockIdx.x; c < n_chunks; c += gridDim.x) {
        i64 ti = chunks[2 * c], start = chunks[2 * c + 1];
        i64 stop = start + chunk < sizes[ti] ? start + chunk : sizes[ti];
        T* p = tab<T>(params, ti);
        const T* g = tab<T>(grads, ti);
        T* buf = use_momentum ? tab<T>(bufs, ti) : nullptr;
        bool first = first_steps[ti] != 0;
        for (i64 i = start + threadIdx.x; i < stop; i += blockDim.x) {
            T pi = p[i], gi = g[i];
            if (use_wd) gi = maximize ? pi * weight_decay - gi : pi * weight_decay + gi;
            else if (maximize) gi = -gi;
            if (use_momentum) {
                T bi;
                if (first) bi = gi;
                else if (dampening_nonzero) bi = buf[i] * momentum + gi * one_minus_dampening;
                else bi = buf[i] * momentum + gi;
                buf[i] = bi;
                gi = nesterov ? bi * momentum + gi : bi;
            }
            p[i] = pi - gi * lr;
        }
    }
}
