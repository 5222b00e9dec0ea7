// layernorm.cu: layer normalisation over the last dim (rows of N contiguous elements).
//
// Kernels (T = float | double):
//   layernorm_forward<T>          block per row: mean and rstd = 1 / sqrt(var + eps) (biased variance, two
//                                 passes over the row for accuracy), y = (x - mean) * rstd * w + b; saves
//                                 mean and rstd per row. has_weight / has_bias = 0: no affine parameter.
//   layernorm_backward<T>         block per row: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat xhat)),
//                                 dxhat = dy * w
//   layernorm_backward_params<T>  thread per column, loop over rows (coalesced, deterministic):
//                                 dw[j] = sum_i dy[i, j] xhat[i, j], db[j] = sum_i dy[i, j]
#include "common.cuh"

template <typename T>
__global__ void layernorm_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                  T* __restrict__ y, T* __restrict__ mean_out, T* __restrict__ rstd_out, i64 rows,
                                  i64 N, T eps, int has_weight, int has_bias) {
    __shared__ T scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * N;
        T s = 0;
        for (i64 j = threadIdx.x; j < N; j += blockDim.x) s += xr[j];
        T mean = block_reduce(s, SumOp(), (T)0, scratch) / (T)N;
        T v = 0;
        for (i64 j = threadIdx.x; j < N; j += blockDim.x) {
            T d = xr[j] - mean;
            v += d * d;
        }
        T var = block_reduce(v, SumOp(), (T)0, scratch) / (T)N;
        T rstd = (T)1 / mt_sqrt(var + eps);
        T* yr = y + row * N;
        for (i64 j = threadIdx.x; j < N; j += blockDim.x) {
            T o = (xr[j] - mean) * rstd;
            if (has_weight) o = o * w[j];
            if (has_bias) o = o + b[j];
            yr[j] = o;
        }
        if (threadIdx.x == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
}

template <typename T>
__global__ void layernorm_backward(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                                   const T* __restrict__ mean, const T* __restrict__ rstd, T* __restrict__ dx,
                                   i64 rows, i64 N, int has_weight) {
    __shared__ T scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * N;
        const T* gr = dy + row * N;
        T mu = mean[row], rs = rstd[row];
        T s1 = 0, s2 = 0;
        for (i64 j = threadIdx.x; j < N; j += blockDim.x) {
            T dxhat = has_weight ? gr[j] * w[j] : gr[j];
            s1 += dxhat;
            s2 += dxhat * (xr[j] - mu) * rs;
        }
        s1 = block_reduce(s1, SumOp(), (T)0, scratch) / (T)N;
        s2 = block_reduce(s2, SumOp(), (T)0, scratch) / (T)N;
        T* dr = dx + row * N;
        for (i64 j = threadIdx.x; j < N; j += blockDim.x) {
            T dxhat = has_weight ? gr[j] * w[j] : gr[j];
            T xhat = (xr[j] - mu) * rs;
            dr[j] = rs * (dxhat - s1 - xhat * s2);
        }
    }
}

template <typename T>
__global__ void layernorm_backward_params(const T* __restrict__ dy, const T* __restrict__ x,
                                          const T* __restrict__ mean, const T* __restrict__ rstd, T* __restrict__ dw,
                                          T* __restrict__ db, i64 rows, i64 N, int want_w, int want_b) {
    MT_GRID_STRIDE(j, N) {
        T aw = 0, ab = 0;
        for (i64 i = 0; i < rows; ++i) {
            T g = dy[i * N + j];
            aw += g * (x[i * N + j] - mean[i]) * rstd[i];
            ab += g;
        }
        if (want_w) dw[j] = aw;
        if (want_b) db[j] = ab;
    }
}
