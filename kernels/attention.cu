// attention.cu: fused scaled-dot-product attention (FlashAttention-2 style), forward and backward.
//
// Kernels (T = float | double | __half | __nv_bfloat16; _dN = head dims up to N, padded with zeros to N in shared
// memory). The 16-bit types are read into float tiles and computed exactly as float32 (FMA on the CUDA cores,
// not tensor cores): float scores, softmax statistics, LSE and delta (float32 arrays), float accumulators; O, dQ,
// dK and dV are rounded once when stored.
//   attention_forward_d{32,64,128}<T>       one query tile per work item: the K and V tiles stream through
//                                          shared memory, online softmax in registers; writes O and the per-row
//                                          log2-sum-exp2 (base 2: the kernels exponentiate with exp2)
//   attention_backward_prep<T>             delta_i = rowsum(dO * O), one warp per row
//
// D is the head dim of q and k, DV that of v (and of the output); both are padded to the kernel's width.
//   attention_backward_dkv_d{32,64,128}<T> one key tile per work item: loops over the query tiles, recomputes
//                                          P from Q, K and the saved LSE, accumulates dK and dV in registers
//   attention_backward_dq_d{32,64,128}<T>  one query tile per work item: loops over the key tiles, accumulates dQ
//
// Nothing of size L x S is ever stored: memory is O(B H (L + S) D). dQ has its own pass instead of atomics, so
// every gradient is deterministic (and the dK/dV pass needs no atomics either); the cost is recomputing S and
// dP once more (7 tile products per tile pair in the backward instead of FlashAttention-2's 5).
//
// Tiles: TILE x TILE score tiles (64 for float and the 16-bit types, 32 for double), 256 threads as 8 warps x 32 lanes. Thread
// (ty = warp, tx = lane) owns the score rows ty + 8i and the columns tx + 32j: a row lives in one warp, so row
// max / sum are warp shuffles, and the operand whose row is the same for the whole warp is read as a broadcast
// 128-bit load. The operand with one row per lane is kept with a row stride of DP + 16 bytes, so the 8 lanes of
// each 128-bit phase hit distinct banks.
//
// Masks (flags, bits of AttnFlag): causal (key > query masked, top-left aligned), an additive float mask, a
// boolean mask (false = masked); masks are read through four element strides (b, h, query, key), 0 on broadcast
// dims; a float mask is in T. Rows whose keys are all masked give O = 0 and LSE = -inf (PyTorch's safe softmax). Dropout regenerates
// its mask from the Philox stream wherever it is needed: element (bh, q, k) keeps word (bh L + q) S + k of the
// stream at (seed, counter), below keep_below = ceil((1 - p) 2^32), which is exactly the mask that
// rand_bernoulli(1 - p) of shape (B, H, L, S) draws from the same generator state. Under CUDA-graph capture `rng`
// points at the generator's {seed, offset} in device memory (philox.cuh's philox_resolve); otherwise it is null.
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "philox.cuh"

#define ATTN_THREADS 256
#define ATTN_TILE_FLOAT 64
#define ATTN_TILE_DOUBLE 32

enum AttnFlag { AF_causal, AF_float_mask, AF_bool_mask, AF_dropout };

// meta: int64 element strides [q: b h t | k: b h t | v: b h t | mask: b h q k]
#define ATTN_META 13

extern __shared__ double attn_smem[];

// the tile of a storage type: that of its arithmetic type (the shared tiles hold acc_t<T>)
template <typename T> struct AttnTile { static constexpr int N = ATTN_TILE_FLOAT; };
template <> struct AttnTile<double> { static constexpr int N = ATTN_TILE_DOUBLE; };

template <typename A> __device__ __forceinline__ A attn_log2e() { return (A)1.4426950408889634; }

// ------------------------------------------------------------------------------------------ masks and dropout
// The score of (row, col) in log2 units after scale and mask, in the arithmetic type; -inf when masked or outside
// the L x S rectangle.
template <typename T> struct AttnScore {
    typedef acc_t<T> A;
    const T* fmask;
    const u8* bmask;
    const i64* meta;
    int L, S;
    A scale;
    int flags;

    __device__ __forceinline__ A operator()(A dot, int row, int col) const {
        if (row >= L || col >= S || ((flags & (1 << AF_causal)) && col > row)) return -mt_inf<A>();
        A t = dot * scale;
        if (flags & ((1 << AF_float_mask) | (1 << AF_bool_mask))) {
            // the strides are re-read (from cache) rather than held in registers through the whole kernel
            const i64 off = row * meta[11] + col * meta[12];
            if (flags & (1 << AF_float_mask)) t += mt_acc(fmask[off]);
            if ((flags & (1 << AF_bool_mask)) && !bmask[off]) return -mt_inf<A>();
        }
        return t * attn_log2e<A>();
    }
};

struct AttnDropout {
    u64 seed, ctr_lo, ctr_hi, keep_below;
    i64 row0;  // (bh L) S: the stream index of this head's first score
    int S;
    bool on;

    // word (row0 + row S + col) of the stream decides; the four words of a Philox block are picked by
    // comparisons rather than an indexed array, which would live in local memory
    __device__ __forceinline__ bool keep(int row, int col) const {
        u64 i = (u64)(row0 + (i64)row * S + col);
        u64 lo = ctr_lo + (i >> 2);
        u64 hi = ctr_hi + (lo < ctr_lo ? 1 : 0);
        Words4 r = philox(lo, hi, seed);
        u32 k = (u32)(i & 3);
        u32 w = k == 0 ? r.w[0] : k == 1 ? r.w[1] : k == 2 ? r.w[2] : r.w[3];
        return (u64)w < keep_below;
    }
};

// bit i CJ + j: whether the score of thread tile entry (i, j) survives dropout, its query being r0 + 8i and its key
// c0 + 32j (KEY_ROWS: the key r0 + 8i, the query c0 + 32j). Computed before the tile products, while few registers
// are live: inlined next to S and dP, the Philox rounds made the compiler spill.
template <int RI, int CJ, bool KEY_ROWS>
__device__ __forceinline__ u32 attn_keep_bits(const AttnDropout& drop, int r0, int c0, int L, int S) {
    u32 bits = 0xffffffffu;
    if (!drop.on) return bits;
    #pragma unroll 1
    for (int i = 0; i < RI; ++i)
        #pragma unroll 1
        for (int j = 0; j < CJ; ++j) {
            const int row = KEY_ROWS ? c0 + 32 * j : r0 + 8 * i, col = KEY_ROWS ? r0 + 8 * i : c0 + 32 * j;
            if (row < L && col < S && !drop.keep(row, col)) bits &= ~(1u << (i * CJ + j));
        }
    return bits;
}

// ------------------------------------------------------------------------------------------ tile helpers
// dst[r * STRIDE + c] = src[(i64)(r0 + r) * rs + c] for r < TILE, c < DP, zero outside rows < n and columns < D;
// the tile holds the arithmetic type of the source
template <typename T, int TILE, int DP, int STRIDE>
__device__ __forceinline__ void attn_load(acc_t<T>* dst, const T* __restrict__ src, i64 rs, int r0, int n, int D) {
    for (int e = threadIdx.x; e < TILE * DP; e += ATTN_THREADS) {
        int r = e / DP, c = e % DP;
        dst[r * STRIDE + c] = (r0 + r < n && c < D) ? mt_acc(src[(i64)(r0 + r) * rs + c]) : (acc_t<T>)0;
    }
}

// a thread tile of accumulators set to zero
template <typename T, int RI, int DJ>
__device__ __forceinline__ void attn_zero(T (&acc)[RI][DJ]) {
    #pragma unroll
    for (int i = 0; i < RI; ++i)
        #pragma unroll
        for (int jj = 0; jj < DJ; ++jj) acc[i][jj] = (T)0;
}

// the K and V tiles of the keys k0 .. k0 + TILE, in one phase: twice the loads in flight
template <typename T, int TILE, int DP, int STRIDE>
__device__ __forceinline__ void attn_load_kv(acc_t<T>* Ks, acc_t<T>* Vs, const T* __restrict__ kp,
                                             const T* __restrict__ vp, const i64* __restrict__ meta, int k0, int S,
                                             int D, int DV) {
    attn_load<T, TILE, DP, STRIDE>(Ks, kp, meta[5], k0, S, D);
    attn_load<T, TILE, DP, STRIDE>(Vs, vp, meta[8], k0, S, DV);
}

// what both backward passes read of the queries q0 .. q0 + TILE of head bh: the Q and dO tiles, and the saved
// LSE and delta rows (0 past L)
template <typename T, int TILE, int DP, int STRIDE>
__device__ __forceinline__ void attn_load_query_grad(acc_t<T>* Qs, acc_t<T>* dOs, acc_t<T>* lse_s, acc_t<T>* del_s,
                                                     const T* __restrict__ qp, i64 qrs, const T* __restrict__ dout,
                                                     const acc_t<T>* __restrict__ lse,
                                                     const acc_t<T>* __restrict__ delta, i64 bh, int q0, int L, int D,
                                                     int DV) {
    attn_load<T, TILE, DP, STRIDE>(Qs, qp, qrs, q0, L, D);
    attn_load<T, TILE, DP, STRIDE>(dOs, dout + bh * L * DV, DV, q0, L, DV);
    for (int r = threadIdx.x; r < TILE; r += ATTN_THREADS) {
        const bool in = q0 + r < L;
        lse_s[r] = in ? lse[bh * L + q0 + r] : (acc_t<T>)0;
        del_s[r] = in ? delta[bh * L + q0 + r] : (acc_t<T>)0;
    }
}

// acc[i][j] = sum_d A[(ty + 8i) AS + d] * B[(tx + 32j) BS + d]: A's rows are one per warp (broadcast loads),
// B's one per lane
template <typename T, int RI, int CJ, int DP, int AS, int BS>
__device__ __forceinline__ void attn_dot(T (&acc)[RI][CJ], const T* A, const T* B, int ty, int tx) {
    constexpr int V = Packed128<T>::size;
    #pragma unroll
    for (int i = 0; i < RI; ++i)
        #pragma unroll
        for (int j = 0; j < CJ; ++j) acc[i][j] = (T)0;
    #pragma unroll 1
    for (int d = 0; d < DP; d += V) {
        Packed128<T> b[CJ];
        #pragma unroll
        for (int j = 0; j < CJ; ++j) b[j] = load128(B + (tx + 32 * j) * BS + d);
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            Packed128<T> a = load128(A + (ty + 8 * i) * AS + d);
            #pragma unroll
            for (int j = 0; j < CJ; ++j)
                #pragma unroll
                for (int u = 0; u < V; ++u) acc[i][j] += a.v[u] * b[j].v[u];
        }
    }
}

// acc[i][jj] += sum_k P[(ty + 8i) TILE + k] * B[k BS + tx + 32jj] over the TILE rows of B
template <typename T, int RI, int DJ, int TILE, int BS>
__device__ __forceinline__ void attn_accum(T (&acc)[RI][DJ], const T* P, const T* B, int ty, int tx) {
    constexpr int V = Packed128<T>::size;
    #pragma unroll 1
    for (int k = 0; k < TILE; k += V) {
        T b[V][DJ];
        #pragma unroll
        for (int u = 0; u < V; ++u)
            #pragma unroll
            for (int jj = 0; jj < DJ; ++jj) b[u][jj] = B[(k + u) * BS + tx + 32 * jj];
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            Packed128<T> p = load128(P + (ty + 8 * i) * TILE + k);
            #pragma unroll
            for (int u = 0; u < V; ++u)
                #pragma unroll
                for (int jj = 0; jj < DJ; ++jj) acc[i][jj] += p.v[u] * b[u][jj];
        }
    }
}

template <typename T>
__device__ __forceinline__ AttnScore<T> attn_score(const T* fmask, const u8* bmask, const i64* meta, i64 b, i64 h,
                                                   int L, int S, acc_t<T> scale, int flags) {
    i64 moff = b * meta[9] + h * meta[10];
    return AttnScore<T>{fmask + moff, bmask + moff, meta, L, S, scale, flags};
}

#define ATTN_PARAMS_IN                                                                                        \
    const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, const T* __restrict__ fmask,      \
        const u8* __restrict__ bmask, const i64* __restrict__ meta
#define ATTN_PARAMS_SHAPE                                                                                     \
    i64 BH, int H, int L, int S, int D, int DV, acc_t<T> scale, int flags, u64 seed, u64 ctr_lo, u64 ctr_hi,          \
        const u64 *__restrict__ rng, u64 keep_below, acc_t<T> drop_scale
#define ATTN_ARGS_IN q, k, v, fmask, bmask, meta
#define ATTN_ARGS_SHAPE BH, H, L, S, D, DV, scale, flags, seed, ctr_lo, ctr_hi, rng, keep_below, drop_scale

// ------------------------------------------------------------------------------------------ forward
template <typename T, int DJ>
__device__ __forceinline__ void attn_forward(ATTN_PARAMS_IN, T* __restrict__ out, acc_t<T>* __restrict__ lse,
                                             ATTN_PARAMS_SHAPE) {
    typedef acc_t<T> A;
    constexpr int TILE = AttnTile<T>::N, RI = TILE / 8, CJ = TILE / 32, DP = 32 * DJ;
    constexpr int KP = DP + Packed128<A>::size;
    double* smem_base = attn_smem;  // (an implicit conversion: the simulator models the array as an object)
    A* Qs = reinterpret_cast<A*>(smem_base);
    A* Ks = Qs + TILE * DP;
    A* Vs = Ks + TILE * KP;
    // row r of P is written and read by warp r % 8 only: a warp barrier orders it
    A* Ps = Vs + TILE * KP;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    const A NEG = -mt_inf<A>();
    philox_resolve(seed, ctr_lo, ctr_hi, rng);
        const int nqt = (L + TILE - 1) / TILE;
    for (i64 w = blockIdx.x; w < BH * nqt; w += gridDim.x) {
        // the last query tiles (the longest under a causal mask) start first
        const int qt = nqt - 1 - (int)(w / BH);
        const i64 bh = w % BH, b = bh / H, h = bh % H;
        const int q0 = qt * TILE;
        const T* kp = k + b * meta[3] + h * meta[4];
        const T* vp = v + b * meta[6] + h * meta[7];
        const AttnScore<T> score = attn_score(fmask, bmask, meta, b, h, L, S, scale, flags);
        const AttnDropout drop{seed, ctr_lo, ctr_hi, keep_below, bh * L * S, S, (flags & (1 << AF_dropout)) != 0};
        __syncthreads();  // the previous work item is done with shared memory
        attn_load<T, TILE, DP, DP>(Qs, q + b * meta[0] + h * meta[1], meta[2], q0, L, D);
        A m[RI], l[RI], acc[RI][DJ];
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            m[i] = NEG;
            l[i] = (A)0;
            #pragma unroll
            for (int jj = 0; jj < DJ; ++jj) acc[i][jj] = (A)0;
        }
        // under a causal mask the tile's last row sees keys up to itself: later key tiles are skipped
        int kend = S;
        if (flags & (1 << AF_causal)) kend = kend < q0 + TILE ? kend : q0 + TILE;
        const int nkt = (kend + TILE - 1) / TILE;
        for (int kt = 0; kt < nkt; ++kt) {
            const int k0 = kt * TILE;
            __syncthreads();  // the K and V tiles of the previous step are consumed
            // both tiles in one phase: two block barriers per tile instead of four
            attn_load_kv<T, TILE, DP, KP>(Ks, Vs, kp, vp, meta, k0, S, D, DV);
            const u32 kept = attn_keep_bits<RI, CJ, false>(drop, q0 + ty, k0 + tx, L, S);
            __syncthreads();
            A s[RI][CJ];
            attn_dot<A, RI, CJ, DP, DP, KP>(s, Qs, Ks, ty, tx);
            #pragma unroll
            for (int i = 0; i < RI; ++i) {
                const int row = q0 + ty + 8 * i;
                A mx = NEG;
                #pragma unroll
                for (int j = 0; j < CJ; ++j) {
                    s[i][j] = score(s[i][j], row, k0 + tx + 32 * j);
                    mx = mt_max(mx, s[i][j]);
                }
                mx = warp_max(mx);
                const A mnew = mt_max(m[i], mx);
                // a row with nothing unmasked yet keeps l = 0 and shifts by 0 (exp2(-inf - -inf) would be NaN)
                const A base = mnew == NEG ? (A)0 : mnew;
                const A alpha = mt_exp2(m[i] - base);
                A rs = (A)0;
                #pragma unroll
                for (int j = 0; j < CJ; ++j) {
                    A p = mt_exp2(s[i][j] - base);
                    rs += p;
                    if (drop.on) p = (kept >> (i * CJ + j)) & 1u ? p * drop_scale : (A)0;
                    Ps[(ty + 8 * i) * TILE + tx + 32 * j] = p;
                }
                l[i] = l[i] * alpha + warp_sum(rs);
                m[i] = mnew;
                #pragma unroll
                for (int jj = 0; jj < DJ; ++jj) acc[i][jj] *= alpha;
            }
            __syncwarp();
            attn_accum<A, RI, DJ, TILE, KP>(acc, Ps, Vs, ty, tx);
        }
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            const int row = q0 + ty + 8 * i;
            if (row >= L) continue;
            const A inv = l[i] > (A)0 ? (A)1 / l[i] : (A)0;
            T* orow = out + (bh * L + row) * DV;
            #pragma unroll
            for (int jj = 0; jj < DJ; ++jj)
                if (tx + 32 * jj < DV) orow[tx + 32 * jj] = mt_cast<T>(acc[i][jj] * inv);
            if (tx == 0) lse[bh * L + row] = l[i] > (A)0 ? m[i] + mt_log2(l[i]) : NEG;
        }
    }
}

// ------------------------------------------------------------------------------------------ backward
template <typename T>
__global__ void attention_backward_prep(const T* __restrict__ dout, const T* __restrict__ out,
                                        acc_t<T>* __restrict__ delta, i64 rows, int D) {
    const int lane = threadIdx.x % 32;
    const i64 warps = (i64)gridDim.x * (blockDim.x / 32);
    for (i64 r = (i64)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; r < rows; r += warps) {
        acc_t<T> acc = 0;
        for (int c = lane; c < D; c += 32) acc += mt_acc(dout[r * D + c]) * mt_acc(out[r * D + c]);
        acc = warp_sum(acc);
        if (lane == 0) delta[r] = acc;
    }
}

// P (dropped, as the forward used it) and dS of one score from its logit t (log2 units), the saved LSE (log2),
// dP = dO . V and delta = rowsum(dO * O)
template <typename T>
__device__ __forceinline__ void attn_grad(T t, T lse, T dp, T delta, bool dropout, bool kept, T drop_scale, T& pd,
                                          T& ds) {
    // masked scores (t = -inf; every score of a fully masked row, whose LSE is -inf too) take no part
    const T p = t == -mt_inf<T>() ? (T)0 : mt_exp2(t - lse);
    const T keep = dropout ? (kept ? drop_scale : (T)0) : (T)1;
    pd = p * keep;
    ds = p * (dp * keep - delta);
}

template <typename T, int DJ>
__device__ __forceinline__ void attn_backward_dkv(ATTN_PARAMS_IN, const T* __restrict__ dout,
                                                  const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
                                                  T* __restrict__ dk, T* __restrict__ dv, ATTN_PARAMS_SHAPE) {
    typedef acc_t<T> A;
    constexpr int TILE = AttnTile<T>::N, RI = TILE / 8, CJ = TILE / 32, DP = 32 * DJ;
    constexpr int KP = DP + Packed128<A>::size;
    // K and V rows are one per warp here (the transposed score tile S^T = K Q^T), Q and dO rows one per lane
    double* smem_base = attn_smem;  // (an implicit conversion: the simulator models the array as an object)
    A* Ks = reinterpret_cast<A*>(smem_base);
    A* Vs = Ks + TILE * DP;
    A* Qs = Vs + TILE * DP;
    A* dOs = Qs + TILE * KP;
    A* PT = dOs + TILE * KP;
    A* dST = PT + TILE * TILE;
    A* lse_s = dST + TILE * TILE;
    A* del_s = lse_s + TILE;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    philox_resolve(seed, ctr_lo, ctr_hi, rng);
        const int nkt = (S + TILE - 1) / TILE, nqt = (L + TILE - 1) / TILE;
    const bool causal = (flags & (1 << AF_causal)) != 0;
    for (i64 w = blockIdx.x; w < BH * nkt; w += gridDim.x) {
        // the first key tiles (seen by the most queries under a causal mask) start first
        const int kt = (int)(w / BH);
        const i64 bh = w % BH, b = bh / H, h = bh % H;
        const int k0 = kt * TILE;
        const T* qp = q + b * meta[0] + h * meta[1];
        const AttnScore<T> score = attn_score(fmask, bmask, meta, b, h, L, S, scale, flags);
        const AttnDropout drop{seed, ctr_lo, ctr_hi, keep_below, bh * L * S, S, (flags & (1 << AF_dropout)) != 0};
        __syncthreads();
        // (two direct loads: building both pointers first, as attn_load_kv's arguments, costs the d128 16-bit
        // kernels 4 registers)
        attn_load<T, TILE, DP, DP>(Ks, k + b * meta[3] + h * meta[4], meta[5], k0, S, D);
        attn_load<T, TILE, DP, DP>(Vs, v + b * meta[6] + h * meta[7], meta[8], k0, S, DV);
        A gk[RI][DJ], gv[RI][DJ];
        attn_zero(gk);
        attn_zero(gv);
        // under a causal mask only queries at or after the tile's first key see it
        for (int qt = causal ? k0 / TILE : 0; qt < nqt; ++qt) {
            const int q0 = qt * TILE;
            __syncthreads();
            attn_load_query_grad<T, TILE, DP, KP>(Qs, dOs, lse_s, del_s, qp, meta[2], dout, lse, delta, bh, q0, L, D,
                                                  DV);
            const u32 kept = attn_keep_bits<RI, CJ, true>(drop, k0 + ty, q0 + tx, L, S);
            __syncthreads();
            A s[RI][CJ], dp[RI][CJ];
            attn_dot<A, RI, CJ, DP, DP, KP>(s, Ks, Qs, ty, tx);
            attn_dot<A, RI, CJ, DP, DP, KP>(dp, Vs, dOs, ty, tx);
            #pragma unroll
            for (int i = 0; i < RI; ++i) {
                const int key = k0 + ty + 8 * i;
                #pragma unroll
                for (int j = 0; j < CJ; ++j) {
                    const int c = tx + 32 * j;
                    const int row = q0 + c;
                    A pd, ds;
                    attn_grad(score(s[i][j], row, key), lse_s[c], dp[i][j], del_s[c], drop.on,
                              (kept >> (i * CJ + j)) & 1u, drop_scale, pd, ds);
                    PT[(ty + 8 * i) * TILE + c] = pd;
                    dST[(ty + 8 * i) * TILE + c] = ds;
                }
            }
            __syncthreads();
            attn_accum<A, RI, DJ, TILE, KP>(gv, PT, dOs, ty, tx);
            attn_accum<A, RI, DJ, TILE, KP>(gk, dST, Qs, ty, tx);
        }
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            const int key = k0 + ty + 8 * i;
            if (key >= S) continue;
            #pragma unroll
            for (int jj = 0; jj < DJ; ++jj) {
                const int c = tx + 32 * jj;
                if (c < D) dk[(bh * S + key) * D + c] = mt_cast<T>(gk[i][jj] * scale);
                if (c < DV) dv[(bh * S + key) * DV + c] = mt_cast<T>(gv[i][jj]);
            }
        }
    }
}

template <typename T, int DJ>
__device__ __forceinline__ void attn_backward_dq(ATTN_PARAMS_IN, const T* __restrict__ dout,
                                                 const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
                                                 T* __restrict__ dq, ATTN_PARAMS_SHAPE) {
    typedef acc_t<T> A;
    constexpr int TILE = AttnTile<T>::N, RI = TILE / 8, CJ = TILE / 32, DP = 32 * DJ;
    constexpr int KP = DP + Packed128<A>::size;
    double* smem_base = attn_smem;  // (an implicit conversion: the simulator models the array as an object)
    A* Qs = reinterpret_cast<A*>(smem_base);
    A* dOs = Qs + TILE * DP;
    A* Ks = dOs + TILE * DP;
    A* Vs = Ks + TILE * KP;
    A* dSs = Vs + TILE * KP;
    // per-row LSE and delta in shared memory (read as broadcasts) rather than 2 RI registers: the dQ pass holds
    // S, dP and dQ, and those registers are what keeps it at two blocks per SM
    A* lse_s = dSs + TILE * TILE;
    A* del_s = lse_s + TILE;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
    philox_resolve(seed, ctr_lo, ctr_hi, rng);
        const int nqt = (L + TILE - 1) / TILE;
    for (i64 w = blockIdx.x; w < BH * nqt; w += gridDim.x) {
        const int qt = nqt - 1 - (int)(w / BH);
        const i64 bh = w % BH, b = bh / H, h = bh % H;
        const int q0 = qt * TILE;
        const T* kp = k + b * meta[3] + h * meta[4];
        const T* vp = v + b * meta[6] + h * meta[7];
        const AttnScore<T> score = attn_score(fmask, bmask, meta, b, h, L, S, scale, flags);
        const AttnDropout drop{seed, ctr_lo, ctr_hi, keep_below, bh * L * S, S, (flags & (1 << AF_dropout)) != 0};
        __syncthreads();
        attn_load_query_grad<T, TILE, DP, DP>(Qs, dOs, lse_s, del_s, q + b * meta[0] + h * meta[1], meta[2], dout, lse,
                                              delta, bh, q0, L, D, DV);
        A gq[RI][DJ];
        attn_zero(gq);
        int kend = S;
        if (flags & (1 << AF_causal)) kend = kend < q0 + TILE ? kend : q0 + TILE;
        const int nkt = (kend + TILE - 1) / TILE;
        for (int kt = 0; kt < nkt; ++kt) {
            const int k0 = kt * TILE;
            __syncthreads();  // dSs and the K tile of the previous step are consumed
            attn_load_kv<T, TILE, DP, KP>(Ks, Vs, kp, vp, meta, k0, S, D, DV);
            const u32 kept = attn_keep_bits<RI, CJ, false>(drop, q0 + ty, k0 + tx, L, S);
            __syncthreads();
            A s[RI][CJ], dp[RI][CJ];
            attn_dot<A, RI, CJ, DP, DP, KP>(s, Qs, Ks, ty, tx);
            attn_dot<A, RI, CJ, DP, DP, KP>(dp, dOs, Vs, ty, tx);
            #pragma unroll
            for (int i = 0; i < RI; ++i) {
                const int row = q0 + ty + 8 * i;
                #pragma unroll
                for (int j = 0; j < CJ; ++j) {
                    const int key = k0 + tx + 32 * j;
                    A pd, ds;
                    attn_grad(score(s[i][j], row, key), lse_s[ty + 8 * i], dp[i][j], del_s[ty + 8 * i], drop.on,
                              (kept >> (i * CJ + j)) & 1u, drop_scale, pd, ds);
                    dSs[(ty + 8 * i) * TILE + tx + 32 * j] = ds;
                }
            }
            __syncthreads();
            attn_accum<A, RI, DJ, TILE, KP>(gq, dSs, Ks, ty, tx);
        }
        #pragma unroll
        for (int i = 0; i < RI; ++i) {
            const int row = q0 + ty + 8 * i;
            if (row >= L) continue;
            #pragma unroll
            for (int jj = 0; jj < DJ; ++jj)
                if (tx + 32 * jj < D) dq[(bh * L + row) * D + tx + 32 * jj] = mt_cast<T>(gq[i][jj] * scale);
        }
    }
}

// ------------------------------------------------------------------------------------------ entry points
// spelled out rather than macro-generated: the loader finds entry points in the source text. Two resident blocks
// per SM up to head dim 64 (at most 128 registers a thread); head dim 128 holds twice the accumulators and runs
// one block per SM rather than spill.

template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_forward_d32(ATTN_PARAMS_IN, T* __restrict__ out,
                                                                     acc_t<T>* __restrict__ lse, ATTN_PARAMS_SHAPE) {
    attn_forward<T, 1>(ATTN_ARGS_IN, out, lse, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_backward_dkv_d32(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dk, T* __restrict__ dv, ATTN_PARAMS_SHAPE) {
    attn_backward_dkv<T, 1>(ATTN_ARGS_IN, dout, lse, delta, dk, dv, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_backward_dq_d32(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dq, ATTN_PARAMS_SHAPE) {
    attn_backward_dq<T, 1>(ATTN_ARGS_IN, dout, lse, delta, dq, ATTN_ARGS_SHAPE);
}

template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_forward_d64(ATTN_PARAMS_IN, T* __restrict__ out,
                                                                     acc_t<T>* __restrict__ lse, ATTN_PARAMS_SHAPE) {
    attn_forward<T, 2>(ATTN_ARGS_IN, out, lse, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_backward_dkv_d64(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dk, T* __restrict__ dv, ATTN_PARAMS_SHAPE) {
    attn_backward_dkv<T, 2>(ATTN_ARGS_IN, dout, lse, delta, dk, dv, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 2) attention_backward_dq_d64(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dq, ATTN_PARAMS_SHAPE) {
    attn_backward_dq<T, 2>(ATTN_ARGS_IN, dout, lse, delta, dq, ATTN_ARGS_SHAPE);
}

template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 1) attention_forward_d128(ATTN_PARAMS_IN, T* __restrict__ out,
                                                                     acc_t<T>* __restrict__ lse, ATTN_PARAMS_SHAPE) {
    attn_forward<T, 4>(ATTN_ARGS_IN, out, lse, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 1) attention_backward_dkv_d128(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dk, T* __restrict__ dv, ATTN_PARAMS_SHAPE) {
    attn_backward_dkv<T, 4>(ATTN_ARGS_IN, dout, lse, delta, dk, dv, ATTN_ARGS_SHAPE);
}
template <typename T>
__global__ void __launch_bounds__(ATTN_THREADS, 1) attention_backward_dq_d128(
    ATTN_PARAMS_IN, const T* __restrict__ dout, const acc_t<T>* __restrict__ lse, const acc_t<T>* __restrict__ delta,
    T* __restrict__ dq, ATTN_PARAMS_SHAPE) {
    attn_backward_dq<T, 4>(ATTN_ARGS_IN, dout, lse, delta, dq, ATTN_ARGS_SHAPE);
}
