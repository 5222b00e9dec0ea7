// softmax.cu: softmax and log_softmax along the last (contiguous) dim, forward and backward.
//
// Kernels (T = float | double):
//   softmax_forward_v1<T>    warp per row (rows of up to a few thousand elements): online max/sum in one read,
//                            a second read writes the result; blockDim.x / 32 rows per block
//   softmax_forward_v2<T>    block per row (long rows): the same online reduction across the block
//   softmax_backward_v1<T>   warp per row: dx = y (g - sum(g y)), or for log_softmax dx = g - exp(y) sum(g)
//   softmax_backward_v2<T>   block per row
// `log` selects log_softmax (forward: x - max - log(sum exp(x - max))).
//
// The online reduction keeps (m, s): the running maximum and the sum of exp(x - m) rescaled whenever m grows,
// so the row is read once for both; partial (m, s) pairs merge across lanes with the same rule. NaN anywhere
// in a row makes the row NaN, an all -inf row gives NaN, as the two-pass formula does.
#include "common.cuh"

template <typename T> struct MaxSum {
    T m, s;
};

template <typename T> __device__ __forceinline__ MaxSum<T> ms_merge(MaxSum<T> a, MaxSum<T> b) {
    T m = mt_max(a.m, b.m);
    // a side with no finite element (m = -inf) contributes nothing; exp(-inf - -inf) would be NaN
    T sa = a.m == -mt_inf<T>() ? (T)0 : a.s * mt_exp(a.m - m);
    T sb = b.m == -mt_inf<T>() ? (T)0 : b.s * mt_exp(b.m - m);
    return MaxSum<T>{m, sa + sb};
}

template <typename T> __device__ __forceinline__ MaxSum<T> ms_push(MaxSum<T> a, T x) {
    return ms_merge(a, MaxSum<T>{x, (T)1});
}

template <typename T> __device__ __forceinline__ MaxSum<T> ms_warp(MaxSum<T> v) {
    #pragma unroll
    for (int o = MT_WARP / 2; o > 0; o >>= 1) {
        MaxSum<T> other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = ms_merge(v, other);
    }
    return v;
}

template <typename T> __device__ __forceinline__ T softmax_out(T x, MaxSum<T> r, int log) {
    return log ? x - r.m - mt_log(r.s) : mt_exp(x - r.m) / r.s;
}

// ------------------------------------------------------------------------------------------ forward
template <typename T>
__global__ void softmax_forward_v1(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 cols, int log) {
    int lane = threadIdx.x % MT_WARP;
    i64 warps_per_grid = (i64)gridDim.x * (blockDim.x / MT_WARP);
    for (i64 row = (i64)blockIdx.x * (blockDim.x / MT_WARP) + threadIdx.x / MT_WARP; row < rows;
         row += warps_per_grid) {
        const T* xr = x + row * cols;
        MaxSum<T> acc{-mt_inf<T>(), (T)0};
        for (i64 j = lane; j < cols; j += MT_WARP) acc = ms_push(acc, xr[j]);
        acc = ms_warp(acc);
        T* yr = y + row * cols;
        for (i64 j = lane; j < cols; j += MT_WARP) yr[j] = softmax_out(xr[j], acc, log);
    }
}

template <typename T>
__global__ void softmax_forward_v2(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 cols, int log) {
    __shared__ T sm_m[MT_WARP];
    __shared__ T sm_s[MT_WARP];
    int lane = threadIdx.x % MT_WARP, warp = threadIdx.x / MT_WARP, nwarps = blockDim.x / MT_WARP;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * cols;
        MaxSum<T> acc{-mt_inf<T>(), (T)0};
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) acc = ms_push(acc, xr[j]);
        acc = ms_warp(acc);
        if (lane == 0) {
            sm_m[warp] = acc.m;
            sm_s[warp] = acc.s;
        }
        __syncthreads();
        MaxSum<T> part{-mt_inf<T>(), (T)0};
        if (lane < nwarps) part = MaxSum<T>{sm_m[lane], sm_s[lane]};
        acc = ms_warp(part);
        __syncthreads();  // the shared slots are rewritten for the next row
        T* yr = y + row * cols;
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = softmax_out(xr[j], acc, log);
    }
}

// ------------------------------------------------------------------------------------------ backward
template <typename T>
__global__ void softmax_backward_v1(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, i64 rows,
                                    i64 cols, int log) {
    int lane = threadIdx.x % MT_WARP;
    i64 warps_per_grid = (i64)gridDim.x * (blockDim.x / MT_WARP);
    for (i64 row = (i64)blockIdx.x * (blockDim.x / MT_WARP) + threadIdx.x / MT_WARP; row < rows;
         row += warps_per_grid) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T s = 0;
        for (i64 j = lane; j < cols; j += MT_WARP) s += log ? gr[j] : gr[j] * yr[j];
        s = warp_sum(s);
        T* dr = dx + row * cols;
        for (i64 j = lane; j < cols; j += MT_WARP) dr[j] = log ? gr[j] - mt_exp(yr[j]) * s : yr[j] * (gr[j] - s);
    }
}

template <typename T>
__global__ void softmax_backward_v2(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, i64 rows,
                                    i64 cols, int log) {
    __shared__ T scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T s = 0;
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) s += log ? gr[j] : gr[j] * yr[j];
        s = block_reduce(s, SumOp(), (T)0, scratch);
        T* dr = dx + row * cols;
        for (i64 j = threadIdx.x; j < cols; j += blockDim.x) dr[j] = log ? gr[j] - mt_exp(yr[j]) * s : yr[j] * (gr[j] - s);
    }
}
