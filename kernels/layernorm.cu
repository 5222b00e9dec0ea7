// layernorm.cu: layer normalisation over the last dim (rows of N contiguous elements).
//
// Kernels (T = float | double | __half | __nv_bfloat16: the 16-bit types are computed in float, and their mean,
// rstd and dw/db partials are float arrays, as PyTorch saves them); `vec` = 1 selects 128-bit groups (the launcher checks every pointer's alignment
// and N % (16 / sizeof(T)) == 0), else scalar groups (rows.cuh):
//   layernorm_forward_v1<T>       warp per row, the row held in registers (8 groups per lane: N <= 1024 float,
//                                 512 double on the 128-bit path, 256 on the scalar one): mean, then
//                                 rstd = 1 / sqrt(var + eps) from the centred values (two passes over registers,
//                                 one read of memory), y = (x - mean) * rstd * w + b; saves mean and rstd per row
//   layernorm_forward_v2<T>       block per row, for wider rows (the launcher sizes the block so that the row
//                                 fits its registers up to 256 threads; beyond, the rest is read again from L2)
//   layernorm_backward_v1<T>      warp per row (half the forward's widths: four arrays share the registers):
//                                 dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat xhat)), dxhat = dy * w;
//                                 with want_params each lane also sums dy xhat and dy of its columns over every
//                                 row its warp visits, the block's warps add theirs in shared memory and the
//                                 block writes one partial row pair to `partial` (gridDim.x x 2 x N): dy and x
//                                 are read once for dx, dw and db together
//   layernorm_backward_v2<T>      block per row, the same; each thread owns its columns, so it writes its sums
//                                 to `partial` directly (with want_params only when the row fits the registers)
//   layernorm_backward_partial<T> dw/db partials of rows too wide for that: block (column tile, row chunk), a
//                                 thread per column summing its chunk's rows (coalesced; dy and x read again)
//   layernorm_backward_params<T>  dw[j] = sum_p partial[p, 0, j], db[j] = sum_p partial[p, 1, j]: a few hundred
//                                 partial rows; a block per 32 columns, its warps splitting the partials
//                                 (deterministic: a fixed order of additions, no atomics anywhere)
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "rows.cuh"

// ------------------------------------------------------------------------------------------ forward
template <typename T, int W>
__device__ __forceinline__ Group<T, W> ln_out(const Group<T, W>& xg, const T* __restrict__ w,
                                              const T* __restrict__ b, i64 j, acc_t<T> mean, acc_t<T> rstd, int has_weight,
                                              int has_bias) {
    Group<T, W> wg = gload_or_one<T, W>(w + j, has_weight);
    Group<T, W> o;
    #pragma unroll
    for (int i = 0; i < W; ++i) o.v[i] = (xg.v[i] - mean) * rstd * wg.v[i];
    if (has_bias) {
        Group<T, W> bg = gload<T, W>(b + j);
        #pragma unroll
        for (int i = 0; i < W; ++i) o.v[i] += bg.v[i];
    }
    return o;
}

// FIT: the launcher guarantees that the row fits the registers (v1), so the reread loops are not compiled
template <typename T, int W, bool FIT, typename Team>
__device__ __forceinline__ void ln_forward_rows(const Team& team, const T* __restrict__ x, const T* __restrict__ w,
                                                const T* __restrict__ b, T* __restrict__ y,
                                                acc_t<T>* __restrict__ mean_out, acc_t<T>* __restrict__ rstd_out,
                                                i64 rows, i64 N, acc_t<T> eps, int has_weight, int has_bias) {
    using A = acc_t<T>;
    constexpr int K = RowCfg<T, W, Team::CACHE_DIV>::K;
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(N / W);
    for (i64 row = team.first(); row < rows; row += team.stride()) {
        const T* xr = x + row * N;
        T* yr = y + row * N;
        Group<T, W> c[K];
        A s = 0;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) {
                c[k] = gload<T, W>(xr + g * W);
                #pragma unroll
                for (int i = 0; i < W; ++i) s += c[k].v[i];
            }
        }
        if constexpr (!FIT) {
            for (int g = r + P * K; g < G; g += P) {
                Group<T, W> v = gload<T, W>(xr + g * W);
                #pragma unroll
                for (int i = 0; i < W; ++i) s += v.v[i];
            }
        }
        A mean = team.sum(s) / (A)N;
        // the variance from centred values: E[x^2] - mean^2 would cancel for rows far from zero
        A q = 0;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            if (r + P * k < G) {
                #pragma unroll
                for (int i = 0; i < W; ++i) {
                    A d = c[k].v[i] - mean;
                    q += d * d;
                }
            }
        }
        if constexpr (!FIT) {
            for (int g = r + P * K; g < G; g += P) {
                Group<T, W> v = gload<T, W>(xr + g * W);
                #pragma unroll
                for (int i = 0; i < W; ++i) {
                    A d = v.v[i] - mean;
                    q += d * d;
                }
            }
        }
        A rstd = (A)1 / mt_sqrt(team.sum(q) / (A)N + eps);
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) gstore<T, W>(yr + g * W, ln_out<T, W>(c[k], w, b, g * W, mean, rstd, has_weight, has_bias));
        }
        if constexpr (!FIT) {
            for (int g = r + P * K; g < G; g += P)
                gstore<T, W>(yr + g * W, ln_out<T, W>(gload<T, W>(xr + g * W), w, b, g * W, mean, rstd, has_weight,
                                                      has_bias));
        }
        if (r == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
    }
}

// a row of 384 floats gives each lane 3 groups, so the loads in flight come from the resident warps: 4 blocks of
// 256 threads per SM (64 registers)
template <typename T>
__global__ void __launch_bounds__(256, 4) layernorm_forward_v1(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                     T* __restrict__ y, acc_t<T>* __restrict__ mean_out,
                                     acc_t<T>* __restrict__ rstd_out, i64 rows, i64 N, acc_t<T> eps, int has_weight,
                                     int has_bias, int vec) {
    constexpr int V = 16 / sizeof(T);
    if (vec)
        ln_forward_rows<T, V, true>(WarpTeam(), x, w, b, y, mean_out, rstd_out, rows, N, eps, has_weight, has_bias);
    else
        ln_forward_rows<T, 1, true>(WarpTeam(), x, w, b, y, mean_out, rstd_out, rows, N, eps, has_weight, has_bias);
}

template <typename T>
__global__ void layernorm_forward_v2(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                     T* __restrict__ y, acc_t<T>* __restrict__ mean_out,
                                     acc_t<T>* __restrict__ rstd_out, i64 rows, i64 N, acc_t<T> eps, int has_weight,
                                     int has_bias, int vec) {
    __shared__ acc_t<T> scratch[MT_WARP];
    constexpr int V = 16 / sizeof(T);
    BlockTeam<acc_t<T>> team{scratch};
    if (vec)
        ln_forward_rows<T, V, false>(team, x, w, b, y, mean_out, rstd_out, rows, N, eps, has_weight, has_bias);
    else
        ln_forward_rows<T, 1, false>(team, x, w, b, y, mean_out, rstd_out, rows, N, eps, has_weight, has_bias);
}

// ------------------------------------------------------------------------------------------ backward
// blocks of 256 threads per SM that backward_v1 is compiled for: 2 caps float (and the 16-bit types, computed
// in float) at 128 registers without spills (one block of 8 warps per SM left too few loads in flight); double
// spills below 2 x 128, so it keeps one block per SM, as it had without the bound
template <typename T> constexpr int LN_BWD_MIN_BLOCKS = sizeof(T) <= 4 ? 2 : 1;

template <typename T, int W>
__device__ __forceinline__ Group<T, W> ln_dx(const Group<T, W>& xhat, const Group<T, W>& dxhat, acc_t<T> rs,
                                             acc_t<T> s1, acc_t<T> s2) {
    Group<T, W> o;
    #pragma unroll
    for (int i = 0; i < W; ++i) o.v[i] = rs * (dxhat.v[i] - s1 - xhat.v[i] * s2);
    return o;
}

// One row's (xhat, dxhat) group from memory, and its contribution to the two row sums.
template <typename T, int W>
__device__ __forceinline__ void ln_grad_group(const T* __restrict__ xr, const T* __restrict__ gr,
                                              const T* __restrict__ w, i64 j, acc_t<T> mu, acc_t<T> rs, int has_weight,
                                              Group<T, W>& dy, Group<T, W>& xhat, Group<T, W>& dxhat, acc_t<T>& s1,
                                              acc_t<T>& s2) {
    Group<T, W> xg = gload<T, W>(xr + j);
    dy = gload<T, W>(gr + j);
    Group<T, W> wg = gload_or_one<T, W>(w + j, has_weight);
    #pragma unroll
    for (int i = 0; i < W; ++i) {
        xhat.v[i] = (xg.v[i] - mu) * rs;
        dxhat.v[i] = dy.v[i] * wg.v[i];
        s1 += dxhat.v[i];
        s2 += dxhat.v[i] * xhat.v[i];
    }
}

// the register budget of one cached array split over the four the backward keeps (xhat, dxhat, dw and db sums)
template <typename T, int W, typename Team> struct LnBwdCfg {
    static constexpr int K = RowCfg<T, W, 2 * Team::CACHE_DIV>::K;
};

// ACC: also sum dy xhat and dy per column into aw / ab (the caller guarantees the row fits the registers)
template <typename T, int W, bool ACC, typename Team>
__device__ __forceinline__ void ln_backward_rows(const Team& team, const T* __restrict__ dy, const T* __restrict__ x,
                                                 const T* __restrict__ w, const acc_t<T>* __restrict__ mean,
                                                 const acc_t<T>* __restrict__ rstd, T* __restrict__ dx, i64 rows,
                                                 i64 N, int has_weight, Group<T, W> (&aw)[LnBwdCfg<T, W, Team>::K],
                                                 Group<T, W> (&ab)[LnBwdCfg<T, W, Team>::K]) {
    using A = acc_t<T>;
    constexpr int K = LnBwdCfg<T, W, Team>::K;
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(N / W);
    for (i64 row = team.first(); row < rows; row += team.stride()) {
        const T* xr = x + row * N;
        const T* gr = dy + row * N;
        T* dr = dx + row * N;
        A mu = mean[row], rs = rstd[row];
        Group<T, W> xh[K], dh[K];
        A s1 = 0, s2 = 0;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) {
                Group<T, W> gy;
                ln_grad_group<T, W>(xr, gr, w, g * W, mu, rs, has_weight, gy, xh[k], dh[k], s1, s2);
                if constexpr (ACC) {
                    #pragma unroll
                    for (int i = 0; i < W; ++i) {
                        aw[k].v[i] += gy.v[i] * xh[k].v[i];
                        ab[k].v[i] += gy.v[i];
                    }
                }
            }
        }
        if constexpr (!ACC) {
            #pragma unroll 4
            for (int g = r + P * K; g < G; g += P) {
                Group<T, W> gy, a, d;
                ln_grad_group<T, W>(xr, gr, w, g * W, mu, rs, has_weight, gy, a, d, s1, s2);
            }
        }
        s1 = team.sum(s1) / (A)N;
        s2 = team.sum(s2) / (A)N;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) gstore<T, W>(dr + g * W, ln_dx<T, W>(xh[k], dh[k], rs, s1, s2));
        }
        if constexpr (!ACC) {
            #pragma unroll 4
            for (int g = r + P * K; g < G; g += P) {
                Group<T, W> gy, a, d;
                A u1 = 0, u2 = 0;
                ln_grad_group<T, W>(xr, gr, w, g * W, mu, rs, has_weight, gy, a, d, u1, u2);
                gstore<T, W>(dr + g * W, ln_dx<T, W>(a, d, rs, s1, s2));
            }
        }
    }
}

// dx of every row the team visits, and (want_params) the block's dw/db column sums as partial[blockIdx.x]
template <typename T, int W, typename Team>
__device__ __forceinline__ void ln_backward_team(const Team& team, const T* __restrict__ dy, const T* __restrict__ x,
                                                 const T* __restrict__ w, const acc_t<T>* __restrict__ mean,
                                                 const acc_t<T>* __restrict__ rstd, T* __restrict__ dx,
                                                 acc_t<T>* __restrict__ partial, i64 rows, i64 N, int has_weight,
                                                 int want_params, acc_t<T>* sh) {
    using A = acc_t<T>;
    constexpr int K = LnBwdCfg<T, W, Team>::K;
    Group<T, W> aw[K], ab[K];
    #pragma unroll
    for (int k = 0; k < K; ++k) {
        #pragma unroll
        for (int i = 0; i < W; ++i) aw[k].v[i] = ab[k].v[i] = 0;
    }
    if (!want_params) {
        ln_backward_rows<T, W, false>(team, dy, x, w, mean, rstd, dx, rows, N, has_weight, aw, ab);
        return;
    }
    ln_backward_rows<T, W, true>(team, dy, x, w, mean, rstd, dx, rows, N, has_weight, aw, ab);
    const int r = team.rank();
    const int P = team.size();
    const int G = (int)(N / W);
    A* out = partial + (i64)blockIdx.x * 2 * N;
    if constexpr (Team::WHOLE_BLOCK) {
        // every column belongs to one thread of the block (the partials stay in the arithmetic type)
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            int g = r + P * k;
            if (g < G) {
                gstore_acc<T, W>(out + g * W, aw[k]);
                gstore_acc<T, W>(out + N + g * W, ab[k]);
            }
        }
        return;
    }
    // the block's warps share columns: they add their sums one after another (a few barriers per block, once)
    const int warp = threadIdx.x / MT_WARP, nwarps = blockDim.x / MT_WARP;
    for (int p = 0; p < nwarps; ++p) {
        if (warp == p) {
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                int g = r + P * k;
                if (g < G) {
                    #pragma unroll
                    for (int i = 0; i < W; ++i) {
                        int j = g * W + i;
                        sh[j] = (p ? sh[j] : (A)0) + aw[k].v[i];
                        sh[N + j] = (p ? sh[N + j] : (A)0) + ab[k].v[i];
                    }
                }
            }
        }
        __syncthreads();
    }
    for (i64 j = threadIdx.x; j < 2 * N; j += blockDim.x) out[j] = sh[j];
}

template <typename T>
__global__ void __launch_bounds__(256, LN_BWD_MIN_BLOCKS<T>) layernorm_backward_v1(
        const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
        const acc_t<T>* __restrict__ mean, const acc_t<T>* __restrict__ rstd, T* __restrict__ dx,
        acc_t<T>* __restrict__ partial, i64 rows, i64 N, int has_weight, int want_params, int vec) {
    // column sums of the widest row v1 takes with want_params, dw then db
    __shared__ acc_t<T> sh[2 * MT_WARP * LnBwdCfg<T, 16 / sizeof(T), WarpTeam>::K * (16 / sizeof(T))];
    constexpr int V = 16 / sizeof(T);
    if (vec)
        ln_backward_team<T, V>(WarpTeam(), dy, x, w, mean, rstd, dx, partial, rows, N, has_weight, want_params, sh);
    else
        ln_backward_team<T, 1>(WarpTeam(), dy, x, w, mean, rstd, dx, partial, rows, N, has_weight, want_params, sh);
}

template <typename T>
__global__ void layernorm_backward_v2(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ w,
                                      const acc_t<T>* __restrict__ mean, const acc_t<T>* __restrict__ rstd,
                                      T* __restrict__ dx, acc_t<T>* __restrict__ partial, i64 rows, i64 N,
                                      int has_weight, int want_params, int vec) {
    __shared__ acc_t<T> scratch[MT_WARP];
    BlockTeam<acc_t<T>> team{scratch};
    constexpr int V = 16 / sizeof(T);
    if (vec)
        ln_backward_team<T, V>(team, dy, x, w, mean, rstd, dx, partial, rows, N, has_weight, want_params, scratch);
    else
        ln_backward_team<T, 1>(team, dy, x, w, mean, rstd, dx, partial, rows, N, has_weight, want_params, scratch);
}

template <typename T>
__global__ void layernorm_backward_partial(const T* __restrict__ dy, const T* __restrict__ x,
                                           const acc_t<T>* __restrict__ mean, const acc_t<T>* __restrict__ rstd,
                                           acc_t<T>* __restrict__ partial, i64 rows, i64 N, i64 chunk) {
    using A = acc_t<T>;
    i64 r0 = (i64)blockIdx.y * chunk;
    i64 r1 = r0 + chunk < rows ? r0 + chunk : rows;
    A* out = partial + (i64)blockIdx.y * 2 * N;
    for (i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (i64)gridDim.x * blockDim.x) {
        A aw = 0, ab = 0;
        for (i64 i = r0; i < r1; ++i) {
            A g = mt_acc(dy[i * N + j]);
            aw += g * (mt_acc(x[i * N + j]) - mean[i]) * rstd[i];
            ab += g;
        }
        out[j] = aw;
        out[N + j] = ab;
    }
}

// a block takes 32 columns; its warps split the partial rows and add their sums in shared memory (a thread per
// column looping over all partials alone would be a chain of a few hundred dependent L2 loads)
template <typename T>
__global__ void layernorm_backward_params(const acc_t<T>* __restrict__ partial, i64 nparts, i64 N,
                                          T* __restrict__ dw, T* __restrict__ db, int want_w, int want_b) {
    using A = acc_t<T>;
    __shared__ A sw[32][MT_WARP + 1];
    __shared__ A sb[32][MT_WARP + 1];
    const int lane = threadIdx.x % MT_WARP, warp = threadIdx.x / MT_WARP, nwarps = blockDim.x / MT_WARP;
    for (i64 j0 = (i64)blockIdx.x * MT_WARP; j0 < N; j0 += (i64)gridDim.x * MT_WARP) {
        i64 j = j0 + lane;
        A aw = 0, ab = 0;
        if (j < N) {
            #pragma unroll 4
            for (i64 p = warp; p < nparts; p += nwarps) {
                aw += partial[p * 2 * N + j];
                ab += partial[p * 2 * N + N + j];
            }
        }
        sw[warp][lane] = aw;
        sb[warp][lane] = ab;
        __syncthreads();
        if (warp == 0 && j < N) {
            for (int q = 1; q < nwarps; ++q) {
                aw += sw[q][lane];
                ab += sb[q][lane];
            }
            if (want_w) dw[j] = mt_cast<T>(aw);
            if (want_b) db[j] = mt_cast<T>(ab);
        }
        __syncthreads();
    }
}
