// cross_entropy.cu: fused log_softmax + negative log-likelihood over rows of class logits.
//
// Kernels (T = float | double | __half | __nv_bfloat16; the 16-bit types are computed in float, their lse and
// wsum are float arrays, loss and dlogits are rounded once to T); `vec` = 1 selects 128-bit groups (rows.cuh):
//   cross_entropy_forward_v1<T>  warp per row (small vocabularies), cross_entropy_forward_v2<T> block per row:
//                              loss[i] = (1 - eps) * nll_i + eps * smooth_i, with
//                                nll_i    = -w[t_i] * logp[i, t_i]
//                                smooth_i = -(1 / C) * sum_j w[j] * logp[i, j]
//                              plus wsum[i] = w[t_i] (0 for ignored rows: the mean's denominator) and
//                              lse[i] = log(sum_j exp(logits[i, j] - max_i)), the log-sum-exp relative to the
//                              row maximum. Every log-probability is formed as (x - max) - lse: adding the
//                              maximum back first would round away the digits of a small loss (or of all of
//                              them, for logits of magnitude 1e4 in float32).
//                              With write_grad = 1 the same pass also writes dlogits of sum_i loss_i (a unit
//                              upstream gradient), as llm.c's fused classifier does: the logits are read once
//                              for the max, the sum and the gradient (row parts that do not fit the registers
//                              once more), and the backward only scales the rows (cross_entropy_scale).
//                              (max, sum of exp, sum of w (x - max)) are kept online, rescaled when the
//                              maximum grows, so one read serves all three.
//   cross_entropy_scale<T>     dlogits[i, :] *= gout[i * gstride] * scale (gstride 0: one gradient for all rows,
//                              scale = 1 / total weight for 'mean'), in place
//   cross_entropy_backward<T>  block per row, from the saved lse (for a second backward through a retained
//                              graph, after the fused gradient was handed out):
//                              dlogits[i, j] = go_i * ((1 - eps) w[t_i] (p_ij - [j == t_i])
//                                                     + (eps / C) (p_ij sum_k w[k] - w[j]))
// Without class weights (has_weight = 0) every w is 1 and `weight` is never read. Rows whose target is
// ignore_index give 0 everywhere. A target outside [0, C) gives a NaN loss (and NaN gradient row) instead of a
// device-side error flag the host would have to read back (a synchronisation per call): the functional layer
// checks the range before launching.
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "rows.cuh"

// ------------------------------------------------------------------------------------------ fused forward
// One thread's online state over its part of a row: the running max m, sum of exp(x - m), sum of w (x - m) and
// sum of w (the last two only with label smoothing).
template <typename T> struct CeAcc {
    T m, s, wx, ws;
};

template <typename T, int W>
__device__ __forceinline__ void ce_push(CeAcc<acc_t<T>>& a, const Group<T, W>& x, const Group<T, W>& w, bool smooth) {
    using A = acc_t<T>;
    A gm = x.v[0];
    #pragma unroll
    for (int i = 1; i < W; ++i) gm = mt_max(gm, x.v[i]);
    if (!(gm <= a.m)) {  // a larger maximum (or a NaN, which then poisons the row as it should)
        A shift = a.m == -mt_inf<A>() ? (A)0 : a.m - gm;
        a.s = a.m == -mt_inf<A>() ? (A)0 : a.s * mt_exp(shift);
        a.wx += shift * a.ws;
        a.m = gm;
    }
    #pragma unroll
    for (int i = 0; i < W; ++i) {
        A d = x.v[i] - a.m;
        a.s += mt_exp(d);
        if (smooth) {
            a.wx += w.v[i] * d;
            a.ws += w.v[i];
        }
    }
}

template <typename T, int W>
__device__ __forceinline__ Group<T, W> ce_grad(const Group<T, W>& x, const Group<T, W>& w, int j0, i64 t,
                                               acc_t<T> m, acc_t<T> l, acc_t<T> a, acc_t<T> b, acc_t<T> wall,
                                               bool dead) {
    using A = acc_t<T>;
    Group<T, W> d;
    #pragma unroll
    for (int i = 0; i < W; ++i) {
        A p = mt_exp((x.v[i] - m) - l);
        A v = a * (p - (j0 + i == t ? (A)1 : (A)0)) + b * (p * wall - w.v[i]);
        d.v[i] = dead ? (A)0 : v;
    }
    return d;
}

// FIT: the launcher guarantees that the row fits the registers (v1), so the reread loops are not compiled
template <typename T, int W, bool FIT, typename Team>
__device__ __forceinline__ void ce_rows(const Team& team, const T* __restrict__ logits, const i64* __restrict__ target,
                                        const T* __restrict__ weight, T* __restrict__ loss,
                                        acc_t<T>* __restrict__ wsum, acc_t<T>* __restrict__ lse,
                                        T* __restrict__ dlogits, i64 rows, i64 C, i64 ignore_index,
                                        acc_t<T> smoothing, int has_weight, int write_grad) {
    using A = acc_t<T>;
    constexpr int K = RowCfg<T, W, Team::CACHE_DIV>::K;
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(C / W);
    const bool smooth = smoothing != (A)0;
    const A nan = mt_inf<A>() - mt_inf<A>();
    for (i64 row = team.first(); row < rows; row += team.stride()) {
        const T* xr = logits + row * C;
        i64 t = target[row];
        bool ignored = t == ignore_index;
        bool bad = !ignored && (t < 0 || t >= C);
        Group<T, W> c[K];
        CeAcc<A> acc{-mt_inf<A>(), (A)0, (A)0, (A)0};
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) {
                c[k] = gload<T, W>(xr + (i64)g * W);
                ce_push<T, W>(acc, c[k], gload_or_one<T, W>(weight + g * W, has_weight && smooth), smooth);
            }
        }
        if constexpr (!FIT) {
            #pragma unroll (16 / W)
            for (int g = r + P * K; g < G; g += P)
                ce_push<T, W>(acc, gload<T, W>(xr + (i64)g * W), gload_or_one<T, W>(weight + g * W,
                                                                                  has_weight && smooth), smooth);
        }
        A m = team.max(acc.m);
        // bring every thread's sums to the row maximum; a thread that saw nothing (or only -inf) adds nothing
        bool empty = acc.m == -mt_inf<A>();
        A sh = empty ? (A)0 : acc.m - m;
        A s = team.sum(empty ? (A)0 : acc.s * mt_exp(sh));
        A l = mt_log(s);
        A wx = 0, wall = (A)C;
        if (smooth) {
            wx = team.sum(acc.wx + sh * acc.ws);
            wall = team.sum(acc.ws);
        }
        if (r == 0) {
            lse[row] = l;
            if (ignored || bad) {
                loss[row] = mt_cast<T>(bad ? nan : (A)0);
                wsum[row] = 0;
            } else {
                A wt = has_weight ? mt_acc(weight[t]) : (A)1;
                A out = ((A)1 - smoothing) * (wt * ((m - mt_acc(xr[t])) + l));
                if (smooth) out += smoothing * (-(wx - l * wall) / (A)C);
                loss[row] = mt_cast<T>(out);
                wsum[row] = wt;
            }
        }
        if (!write_grad) continue;
        T* dr = dlogits + row * C;
        A wt = (ignored || bad || !has_weight) ? (A)1 : mt_acc(weight[t]);
        A a = bad ? nan : ((A)1 - smoothing) * wt;
        A b = smoothing / (A)C;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G)
                gstore<T, W>(dr + (i64)g * W, ce_grad<T, W>(c[k], gload_or_one<T, W>(weight + g * W, has_weight && smooth),
                                                            g * W, t, m, l, a, b, wall, ignored));
        }
        if constexpr (!FIT) {
            #pragma unroll (16 / W)
            for (int g = r + P * K; g < G; g += P)
                gstore<T, W>(dr + (i64)g * W, ce_grad<T, W>(gload<T, W>(xr + (i64)g * W),
                                                            gload_or_one<T, W>(weight + g * W, has_weight && smooth),
                                                            g * W, t, m, l, a, b, wall, ignored));
        }
    }
}

// small vocabularies give each lane only a group or two of a row, so the loads in flight come from the warps
// resident per SM: float (and the 16-bit types, computed in float) is held to 64 registers (4 blocks of 256
// threads per SM)
template <typename T> constexpr int CE_V1_MIN_BLOCKS = sizeof(T) <= 4 ? 4 : 2;

template <typename T>
__global__ void __launch_bounds__(256, CE_V1_MIN_BLOCKS<T>) cross_entropy_forward_v1(const T* __restrict__ logits, const i64* __restrict__ target,
                                         const T* __restrict__ weight, T* __restrict__ loss,
                                         acc_t<T>* __restrict__ wsum, acc_t<T>* __restrict__ lse,
                                         T* __restrict__ dlogits, i64 rows, i64 C, i64 ignore_index,
                                         acc_t<T> smoothing, int has_weight, int write_grad, int vec) {
    constexpr int V = 16 / sizeof(T);
    if (vec)
        ce_rows<T, V, true>(WarpTeam(), logits, target, weight, loss, wsum, lse, dlogits, rows, C, ignore_index, smoothing,
                      has_weight, write_grad);
    else
        ce_rows<T, 1, true>(WarpTeam(), logits, target, weight, loss, wsum, lse, dlogits, rows, C, ignore_index, smoothing,
                      has_weight, write_grad);
}

// 512 threads (the launcher's choice for long rows): 4096 floats of a row in registers, and few enough rows in
// flight per SM that the second read of the rest (for the gradient) still finds them in L2
template <typename T>
__global__ void __launch_bounds__(512, 1) cross_entropy_forward_v2(const T* __restrict__ logits, const i64* __restrict__ target,
                                         const T* __restrict__ weight, T* __restrict__ loss,
                                         acc_t<T>* __restrict__ wsum, acc_t<T>* __restrict__ lse,
                                         T* __restrict__ dlogits, i64 rows, i64 C, i64 ignore_index,
                                         acc_t<T> smoothing, int has_weight, int write_grad, int vec) {
    __shared__ acc_t<T> scratch[MT_WARP];
    BlockTeam<acc_t<T>> team{scratch};
    constexpr int V = 16 / sizeof(T);
    if (vec)
        ce_rows<T, V, false>(team, logits, target, weight, loss, wsum, lse, dlogits, rows, C, ignore_index, smoothing,
                      has_weight, write_grad);
    else
        ce_rows<T, 1, false>(team, logits, target, weight, loss, wsum, lse, dlogits, rows, C, ignore_index, smoothing,
                      has_weight, write_grad);
}

// NOTE: for the 16-bit types the fused gradient was rounded once already, so this second rounding can move a
// value by one more unit in the last place than PyTorch's single one (its gradient is computed from the output)
template <typename T>
__global__ void cross_entropy_scale(T* __restrict__ d, const T* __restrict__ gout, i64 gstride, acc_t<T> scale,
                                    i64 rows, i64 C, int vec) {
    using A = acc_t<T>;
    constexpr int V = 16 / sizeof(T);
    if (vec) {
        // C % V == 0 here, so a group never straddles two rows
        MT_GRID_STRIDE(q, rows * C / V) {
            i64 i = q * V;
            A f = mt_acc(gout[(i / C) * gstride]) * scale;
            Packed128<T> p = load128(d + i);
            #pragma unroll
            for (int k = 0; k < V; ++k) p.v[k] = mt_cast<T>(mt_acc(p.v[k]) * f);
            store128(d + i, p);
        }
    } else {
        MT_GRID_STRIDE(i, rows * C) d[i] = mt_cast<T>(mt_acc(d[i]) * (mt_acc(gout[(i / C) * gstride]) * scale));
    }
}

// ------------------------------------------------------------------------------------------ backward from lse
template <typename T>
__global__ void cross_entropy_backward(const T* __restrict__ logits, const i64* __restrict__ target,
                                       const T* __restrict__ weight, const acc_t<T>* __restrict__ lse,
                                       const T* __restrict__ gout, i64 gstride, acc_t<T> scale,
                                       T* __restrict__ dlogits, i64 rows, i64 C, i64 ignore_index,
                                       acc_t<T> smoothing, int has_weight) {
    using A = acc_t<T>;
    __shared__ A scratch[MT_WARP];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = logits + row * C;
        T* dr = dlogits + row * C;
        i64 t = target[row];
        if (t == ignore_index || t < 0 || t >= C) {
            for (i64 j = threadIdx.x; j < C; j += blockDim.x) dr[j] = mt_cast<T>(0);
            continue;
        }
        A wsum_all = (A)C;
        if (has_weight && smoothing != (A)0) {
            A acc = 0;
            for (i64 j = threadIdx.x; j < C; j += blockDim.x) acc += mt_acc(weight[j]);
            wsum_all = block_reduce(acc, SumOp(), (A)0, scratch);
        }
        A m = -mt_inf<A>();
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) m = mt_max(m, mt_acc(xr[j]));
        m = block_reduce(m, MaxOp(), -mt_inf<A>(), scratch);
        A go = mt_acc(gout[row * gstride]) * scale;
        A wt = has_weight ? mt_acc(weight[t]) : (A)1;
        A l = lse[row];
        A a = ((A)1 - smoothing) * wt;
        A b = smoothing / (A)C;
        for (i64 j = threadIdx.x; j < C; j += blockDim.x) {
            A p = mt_exp((mt_acc(xr[j]) - m) - l);
            A w = has_weight ? mt_acc(weight[j]) : (A)1;
            A d = a * (p - (j == t ? (A)1 : (A)0));
            if (smoothing != (A)0) d += b * (p * wsum_all - w);
            dr[j] = mt_cast<T>(go * d);
        }
    }
}
