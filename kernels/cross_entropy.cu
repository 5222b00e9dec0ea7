// cross_entropy.cu: fused log_softmax + negative log-likelihood over rows of class logits.
//
// Kernels (T = float | double), one block per row:
//   cross_entropy_forward<T>   loss[i] = (1 - eps) * nll_i + eps * smooth_i, with
//                                nll_i    = -w[t_i] * logp[i, t_i]
//                                smooth_i = -(1 / C) * sum_j w[j] * logp[i, j]
//                              plus wsum[i] = w[t_i] (0 for ignored rows: the mean's denominator) and
//                              lse[i] = log(sum_j exp(logits[i, j] - max_i)), the log-sum-exp relative to the
//                              row maximum, for the backward. Every log-probability is formed as
//                              (x - max) - lse: adding the maximum back first would round away the digits of
//                              a small loss (or of all of them, for logits of magnitude 1e4 in float32).
//                              Rows whose target is ignore_index give 0 everywhere.
//   cross_entropy_backward<T>  dlogits[i, j] = go_i * ((1 - eps) w[t_i] (p_ij - [j == t_i])
//                                                     + (eps / C) (p_ij sum_k w[k] - w[j]))
//                              written directly, with p = exp((logit - max) - lse) (the row maximum found
//                              again: one more read of a row that is usually still in cache) and
//                              go_i = gout[i * gstride] * scale (gstride 0 broadcasts a scalar gradient, scale
//                              is 1 / total weight for 'mean').
// Without class weights (has_weight = 0) every w is 1 and `weight` is never read. Targets outside [0, C) that
// are not ignore_index set `bad[0]` so the host can raise PyTorch's error after the launch.
#include "common.cuh"

template <typename T>
__global__ void cross_entropy_forward(const T* __restrict__ logits, const i64* __restrict__ target,
                                      const T* __restrict__ weight, T* __restrict__ loss, T* __restrict__ wsum,
                                      T* __restrict__ lse, int* __restrict__ bad, i64 rows, i64 C,
                                      i64 ignore_index, T smoothing, int has_weight) {
    __shared__ T scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = logits + row * C;
        i64 t = target[row];
        bool ignored = t == ignore_index;
        if (!ignored && (t < 0 || t >= C)) {
            if (threadIdx.x == 0) atomicExch(bad, 1);
            ignored = true;
        }
        // max, then sum of exp: two reads of a row that is usually in L1/L2 by the second
        T m = -mt_inf<T>();
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) m = mt_max(m, xr[j]);
        m = block_reduce(m, MaxOp(), -mt_inf<T>(), scratch);
        // wx sums w (x - max), so that sum_j w_j logp_j = wx - l sum_j w_j does not cancel either
        T s = 0, wx = 0, wsum_all = 0;
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) {
            T d = xr[j] - m;
            s += mt_exp(d);
            T w = has_weight ? weight[j] : (T)1;
            wx += w * d;
            wsum_all += w;
        }
        s = block_reduce(s, SumOp(), (T)0, scratch);
        T l = mt_log(s);
        if (smoothing != (T)0) {
            wx = block_reduce(wx, SumOp(), (T)0, scratch);
            wsum_all = block_reduce(wsum_all, SumOp(), (T)0, scratch);
        }
        if (threadIdx.x == 0) {
            lse[row] = l;
            if (ignored) {
                loss[row] = 0;
                wsum[row] = 0;
            } else {
                T wt = has_weight ? weight[t] : (T)1;
                T nll = wt * ((m - xr[t]) + l);
                T out = ((T)1 - smoothing) * nll;
                if (smoothing != (T)0) out += smoothing * (-(wx - l * wsum_all) / (T)C);
                loss[row] = out;
                wsum[row] = wt;
            }
        }
    }
}

template <typename T>
__global__ void cross_entropy_backward(const T* __restrict__ logits, const i64* __restrict__ target,
                                       const T* __restrict__ weight, const T* __restrict__ lse,
                                       const T* __restrict__ gout, i64 gstride, T scale, T* __restrict__ dlogits,
                                       i64 rows, i64 C, i64 ignore_index, T smoothing, int has_weight) {
    __shared__ T scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = logits + row * C;
        T* dr = dlogits + row * C;
        i64 t = target[row];
        if (t == ignore_index || t < 0 || t >= C) {
            for (i64 j = threadIdx.x; j < C; j += blockDim.x) dr[j] = 0;
            continue;
        }
        T wsum_all = (T)C;
        if (has_weight && smoothing != (T)0) {
            T acc = 0;
            for (i64 j = threadIdx.x; j < C; j += blockDim.x) acc += weight[j];
            wsum_all = block_reduce(acc, SumOp(), (T)0, scratch);
        }
        T m = -mt_inf<T>();
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) m = mt_max(m, xr[j]);
        m = block_reduce(m, MaxOp(), -mt_inf<T>(), scratch);
        T go = gout[row * gstride] * scale;
        T wt = has_weight ? weight[t] : (T)1;
        T l = lse[row];
        T a = ((T)1 - smoothing) * wt;
        T b = smoothing / (T)C;
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) {
            T p = mt_exp((xr[j] - m) - l);
            T w = has_weight ? weight[j] : (T)1;
            T d = a * (p - (j == t ? (T)1 : (T)0));
            if (smoothing != (T)0) d += b * (p * wsum_all - w);
            dr[j] = go * d;
        }
    }
}
