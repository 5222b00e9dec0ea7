// softmax.cu: softmax and log_softmax along the last (contiguous) dim, forward and backward.
//
// Kernels (T = float | double | __half | __nv_bfloat16, the 16-bit types computed in float); `vec` = 1 selects
// 128-bit groups (rows.cuh), `log` selects log_softmax:
//   softmax_forward_v1<T>    warp per row (rows that fit a warp's registers: 512 float, 256 double)
//   softmax_forward_v2<T>    block per row (longer rows; the part beyond the registers is read again)
//   softmax_backward_v1<T>   warp per row: dx = y (g - sum(g y)), or for log_softmax dx = g - exp(y) sum(g)
//   softmax_backward_v2<T>   block per row
//
// Forward: each thread takes the max of its registered groups, then exp(x - that max) once per element (kept in
// the registers for softmax) and their sum; groups beyond the registers join online, (max, sum) rescaled when
// the maximum grows. The threads' (max, sum) pairs merge across the team with one exp per thread, and the
// output is e * exp(local max - row max) / sum: one exp per element in all for a row that fits. NaN anywhere in
// a row makes the row NaN, an all -inf row gives NaN, as the two-pass formula does.
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "rows.cuh"

template <typename T> struct MaxSum {
    T m, s;
};

// (m, s) with the groups beyond the registers: exp once per element, a rescale when the maximum grows
template <typename T, int W> __device__ __forceinline__ void ms_push(MaxSum<acc_t<T>>& a, const Group<T, W>& x) {
    using A = acc_t<T>;
    A gm = x.v[0];
    #pragma unroll
    for (int i = 1; i < W; ++i) gm = mt_max(gm, x.v[i]);
    if (!(gm <= a.m)) {
        a.s = a.m == -mt_inf<A>() ? (A)0 : a.s * mt_exp(a.m - gm);
        a.m = gm;
    }
    if (a.m != -mt_inf<A>()) {
        #pragma unroll
        for (int i = 0; i < W; ++i) a.s += mt_exp(x.v[i] - a.m);
    }
}

// ------------------------------------------------------------------------------------------ forward
// FIT: the launcher guarantees that the row fits the registers (v1), so the reread loops are not compiled
template <typename T, int W, bool FIT, typename Team>
__device__ __forceinline__ void softmax_rows(const Team& team, const T* __restrict__ x, T* __restrict__ y, i64 rows,
                                             i64 cols, int log) {
    using A = acc_t<T>;
    constexpr int K = RowCfg<T, W, Team::CACHE_DIV>::K;
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(cols / W);
    for (i64 row = team.first(); row < rows; row += team.stride()) {
        const T* xr = x + row * cols;
        T* yr = y + row * cols;
        Group<T, W> c[K];
        A mc = -mt_inf<A>();
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) {
                c[k] = gload<T, W>(xr + (i64)g * W);
                #pragma unroll
                for (int i = 0; i < W; ++i) mc = mt_max(mc, c[k].v[i]);
            }
        }
        // a thread whose values are all -inf (or that has none) adds nothing: exp(-inf - -inf) would be NaN
        const bool none = mc == -mt_inf<A>();
        A sc = 0;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            if (r + P * k < G) {
                #pragma unroll
                for (int i = 0; i < W; ++i) {
                    A e = none ? (A)0 : mt_exp(c[k].v[i] - mc);
                    sc += e;
                    if (!log) c[k].v[i] = e;
                }
            }
        }
        MaxSum<A> acc{mc, sc};
        if constexpr (!FIT) {
            #pragma unroll (16 / W)
            for (int g = r + P * K; g < G; g += P) ms_push<T, W>(acc, gload<T, W>(xr + (i64)g * W));
        }
        A M = team.max(acc.m);
        A S = team.sum(acc.m == -mt_inf<A>() ? (A)0 : acc.s * mt_exp(acc.m - M));
        if (log) {
            // (x - max) - log(sum): adding the maximum to the log first would round away the small result's digits
            A ls = mt_log(S);
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                int g = r + P * k;
                if (g < G) {
                    Group<T, W> o;
                    #pragma unroll
                    for (int i = 0; i < W; ++i) o.v[i] = (c[k].v[i] - M) - ls;
                    gstore<T, W>(yr + (i64)g * W, o);
                }
            }
            if constexpr (!FIT) {
                #pragma unroll (16 / W)
                for (int g = r + P * K; g < G; g += P) {
                    Group<T, W> o = gload<T, W>(xr + (i64)g * W);
                    #pragma unroll
                    for (int i = 0; i < W; ++i) o.v[i] = (o.v[i] - M) - ls;
                    gstore<T, W>(yr + (i64)g * W, o);
                }
            }
        } else {
            // the registered exps are relative to this thread's max; 0 / 0 = NaN keeps an all -inf row NaN
            A f = (none ? (A)0 : mt_exp(mc - M)) / S;
            A inv = (A)1 / S;
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                int g = r + P * k;
                if (g < G) {
                    Group<T, W> o;
                    #pragma unroll
                    for (int i = 0; i < W; ++i) o.v[i] = c[k].v[i] * f;
                    gstore<T, W>(yr + (i64)g * W, o);
                }
            }
            if constexpr (!FIT) {
                #pragma unroll (16 / W)
                for (int g = r + P * K; g < G; g += P) {
                    Group<T, W> o = gload<T, W>(xr + (i64)g * W);
                    #pragma unroll
                    for (int i = 0; i < W; ++i) o.v[i] = mt_exp(o.v[i] - M) * inv;
                    gstore<T, W>(yr + (i64)g * W, o);
                }
            }
        }
    }
}

// short rows give each lane a group or two, so the loads in flight come from the resident warps: float (and the
// 16-bit types, computed in float) is held to 64 registers (4 blocks of 256 threads per SM)
template <typename T> constexpr int SM_V1_MIN_BLOCKS = sizeof(T) <= 4 ? 4 : 2;

template <typename T>
__global__ void __launch_bounds__(256, SM_V1_MIN_BLOCKS<T>) softmax_forward_v1(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 cols, int log,
                                   int vec) {
    constexpr int V = 16 / sizeof(T);
    if (vec)
        softmax_rows<T, V, true>(WarpTeam(), x, y, rows, cols, log);
    else
        softmax_rows<T, 1, true>(WarpTeam(), x, y, rows, cols, log);
}

template <typename T>
__global__ void softmax_forward_v2(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 cols, int log,
                                   int vec) {
    __shared__ acc_t<T> scratch[MT_WARP];
    BlockTeam<acc_t<T>> team{scratch};
    constexpr int V = 16 / sizeof(T);
    if (vec)
        softmax_rows<T, V, false>(team, x, y, rows, cols, log);
    else
        softmax_rows<T, 1, false>(team, x, y, rows, cols, log);
}

// ------------------------------------------------------------------------------------------ backward
template <typename T, int W>
__device__ __forceinline__ Group<T, W> softmax_dx(const Group<T, W>& y, const Group<T, W>& g, acc_t<T> s, int log) {
    Group<T, W> o;
    #pragma unroll
    for (int i = 0; i < W; ++i) o.v[i] = log ? g.v[i] - mt_exp(y.v[i]) * s : y.v[i] * (g.v[i] - s);
    return o;
}

template <typename T, int W, typename Team>
__device__ __forceinline__ void softmax_backward_rows(const Team& team, const T* __restrict__ y,
                                                      const T* __restrict__ g, T* __restrict__ dx, i64 rows,
                                                      i64 cols, int log) {
    // two arrays share the register budget of one
    constexpr int K = (RowCfg<T, W, Team::CACHE_DIV>::K + 1) / 2;
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(cols / W);
    for (i64 row = team.first(); row < rows; row += team.stride()) {
        const T* yr = y + row * cols;
        const T* gr = g + row * cols;
        T* dr = dx + row * cols;
        Group<T, W> cy[K], cg[K];
        acc_t<T> s = 0;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int q = r + P * k;
            if (q < G) {
                cy[k] = gload<T, W>(yr + (i64)q * W);
                cg[k] = gload<T, W>(gr + (i64)q * W);
                #pragma unroll
                for (int i = 0; i < W; ++i) s += log ? cg[k].v[i] : cg[k].v[i] * cy[k].v[i];
            }
        }
        for (int q = r + P * K; q < G; q += P) {
            Group<T, W> a = gload<T, W>(yr + (i64)q * W), b = gload<T, W>(gr + (i64)q * W);
            #pragma unroll
            for (int i = 0; i < W; ++i) s += log ? b.v[i] : b.v[i] * a.v[i];
        }
        s = team.sum(s);
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int q = r + P * k;
            if (q < G) gstore<T, W>(dr + (i64)q * W, softmax_dx<T, W>(cy[k], cg[k], s, log));
        }
        for (int q = r + P * K; q < G; q += P)
            gstore<T, W>(dr + (i64)q * W, softmax_dx<T, W>(gload<T, W>(yr + (i64)q * W), gload<T, W>(gr + (i64)q * W),
                                                           s, log));
    }
}

template <typename T>
__global__ void softmax_backward_v1(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, i64 rows,
                                    i64 cols, int log, int vec) {
    constexpr int V = 16 / sizeof(T);
    if (vec)
        softmax_backward_rows<T, V>(WarpTeam(), y, g, dx, rows, cols, log);
    else
        softmax_backward_rows<T, 1>(WarpTeam(), y, g, dx, rows, cols, log);
}

template <typename T>
__global__ void softmax_backward_v2(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx, i64 rows,
                                    i64 cols, int log, int vec) {
    __shared__ acc_t<T> scratch[MT_WARP];
    BlockTeam<acc_t<T>> team{scratch};
    constexpr int V = 16 / sizeof(T);
    if (vec)
        softmax_backward_rows<T, V>(team, y, g, dx, rows, cols, log);
    else
        softmax_backward_rows<T, 1>(team, y, g, dx, rows, cols, log);
}
