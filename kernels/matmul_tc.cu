// matmul_tc.cu: batched C = A @ B (+ bias) on the tensor cores (mma.sync), float32 accumulation.
//
// Kernels (all instantiations of one template, tc_gemm):
//   tcgemm_<type>_<tile>_<a><b>   type: f16 and bf16 (m16n8k16; the result rounded to the input type) or tf32
//                                 (float32 operands rounded to tf32 on their way into m16n8k8, the result float32:
//                                 what mt.backends.cuda.matmul.allow_tf32 allows);
//                                 tile: 128x128 (4 warps of 64 x 64) or 64x64 (4 warps of 32 x 32: four times the
//                                 blocks, for problems that 128 x 128 tiles leave SMs idle);
//                                 a, b: how each operand's shared tile is laid out, "k" with k contiguous (both
//                                 operands of x @ W.T, the A of g @ W) or "t" with m (A) or n (B) contiguous (the W of
//                                 g @ W, both operands of the weight gradient g.T @ x).
//   tc_splitk_reduce_<type>       sums the split-K float32 partials in a fixed order, adds the bias, rounds to the
//                                 output type: deterministic, no atomics.
// The launcher (backends/cuda/launch.py, `tc_plan`) picks the kernel, the split count and the grid.
//
// Pipeline (as in matmul.cu): a ring of STAGES shared tiles per operand, filled with 16-byte cp.async copies on
// sm_80 (common.cuh) STAGES - 1 steps ahead of the math; one barrier per k step. A tile stores the operand in the
// orientation its global memory has, so every copy is a straight 16-byte move, and the fragment loads absorb the
// transpose: ldmatrix for 16-bit types (.trans for a "t" tile), 32-bit shared loads for tf32 (ldmatrix moves
// 16-bit elements, so its .trans cannot transpose 32-bit ones). Rows are padded by 16 bytes ("k" tiles) or 8
// elements ("t" tiles), so the 8 rows one ldmatrix matrix reads, and the 32 words a tf32 fragment load reads,
// fall in distinct banks.
// An operand is copied 16 bytes at a time (`vec` bit 0 for A, bit 1 for B) when its contiguous dim is the tile's
// and the launcher proved every row of every batch entry 16-byte aligned and the contiguous extent a multiple of
// 16 bytes; any other layout (a strided view, an odd batch offset) is copied element by element, consecutive
// threads walking the tile's contiguous dim. `vec` bit 2: N is even, so the epilogue stores pairs of outputs.
// Split-K: blockIdx.z runs over batch x splits; split s reduces k in [s * kchunk, (s + 1) * kchunk) into its own
// float32 slice of a workspace (the C argument), and tc_splitk_reduce_<type> sums the slices.
//
// float16 and bfloat16 are passed as their bits (u16, see common.cuh): the kernels never do half arithmetic.
#include "common.cuh"

#ifndef MT_TENSOR_CORES
#error "matmul_tc.cu needs mma.sync and ldmatrix: compile it for sm_80 or newer (or run it on the simulator)"
#endif

enum TcType { TC_F16, TC_BF16, TC_TF32 };

// per type: storage, the k of one mma, the k of one pipeline step (64 bytes of each row of a "k" tile), and the
// conversions to and from the float32 of the accumulators
template <int TY> struct TcT {
    using T = u16;
    static constexpr int MMA_K = 16;
    static constexpr int BK = 32;
    static __device__ __forceinline__ float to_float(T v) {
        return TY == TC_F16 ? mt_f16_to_float(v) : mt_bf16_to_float(v);
    }
    static __device__ __forceinline__ T from_float(float v) {
        return TY == TC_F16 ? mt_float_to_f16(v) : mt_float_to_bf16(v);
    }
};
template <> struct TcT<TC_TF32> {
    using T = float;
    static constexpr int MMA_K = 8;
    static constexpr int BK = 16;
    static __device__ __forceinline__ float to_float(float v) { return v; }
    static __device__ __forceinline__ float from_float(float v) { return v; }
};

// An operand's shared tile of BX (m or n) by BK: KMAJ stores [x][k] (k contiguous), else [k][x]
template <typename T, int BX, int BK, bool KMAJ>
struct TcTile {
    static constexpr int P = 16 / sizeof(T);  // elements per 16-byte pack
    static constexpr int PITCH = KMAJ ? BK + P : BX + 8;
    static constexpr int ELEMS = KMAJ ? BX * PITCH : BK * PITCH;
    static __device__ __forceinline__ int at(int x, int k) { return KMAJ ? x * PITCH + k : k * PITCH + x; }

    // the copies of one step: operand G (element strides sX, sK) at (x0, k0); rows past X or k past kend read 0
    template <int NT>
    static __device__ __forceinline__ void stage(T* __restrict__ S, const T* __restrict__ G, bool vec, i64 x0, i64 X,
                                                 i64 k0, i64 kend, i64 sX, i64 sK) {
        if (vec) {
            // packs run along the tile's contiguous dim, which is the operand's (stride 1)
            constexpr int PER_ROW = (KMAJ ? BK : BX) / P;
            constexpr int NPACK = BX * BK / P;
            static_assert(NPACK % NT == 0, "the packs of a step do not divide among the threads");
            #pragma unroll
            for (int i = 0; i < NPACK / NT; ++i) {
                const int p = threadIdx.x + i * NT;
                const int r = p / PER_ROW, c = (p % PER_ROW) * P;
                const int x = KMAJ ? r : c, k = KMAJ ? c : r;
                T* s = S + at(x, k);
                const i64 gx = x0 + x, gk = k0 + k;
                // NOTE: the launcher makes the contiguous extent a multiple of P, so a pack is wholly in or out
                if (gx < X && gk < kend) {
                    mt_cp_async16(s, G + gk * sK + gx * sX);
                } else {
                    Packed128<T> z;
                    #pragma unroll
                    for (int e = 0; e < P; ++e) z.v[e] = (T)0;
                    store128(s, z);
                }
            }
        } else {
            constexpr int NE = BX * BK / NT;
            static_assert(NE * NT == BX * BK, "the elements of a step do not divide among the threads");
            #pragma unroll 4
            for (int i = 0; i < NE; ++i) {
                const int e = threadIdx.x + i * NT;
                const int x = KMAJ ? e / BK : e % BX, k = KMAJ ? e % BK : e / BX;
                const i64 gx = x0 + x, gk = k0 + k;
                S[at(x, k)] = gx < X && gk < kend ? G[gk * sK + gx * sX] : (T)0;
            }
        }
    }
};

// lane (g, t) holds rows g and g + 8, columns 2t and 2t + 1 of each 16 x 8 mma tile: rows row0 + 16 i + 8 h,
// columns col0 + 8 j of the output
template <typename Tr, int MI, int NJ>
__device__ __forceinline__ void tc_add_bias(float (&acc)[MI][NJ][4], const typename Tr::T* __restrict__ bias,
                                            i64 col0, i64 N) {
    #pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const i64 gn = col0 + 8 * j;
        const float b0 = gn < N ? Tr::to_float(bias[gn]) : 0.0f;
        const float b1 = gn + 1 < N ? Tr::to_float(bias[gn + 1]) : 0.0f;
        #pragma unroll
        for (int i = 0; i < MI; ++i) {
            acc[i][j][0] += b0;
            acc[i][j][1] += b1;
            acc[i][j][2] += b0;
            acc[i][j][3] += b1;
        }
    }
}

// `pair`: N is even (and C's rows with it), so each lane's two columns are one aligned 2-element store
template <typename O, int MI, int NJ, typename Cvt>
__device__ __forceinline__ void tc_store(O* __restrict__ C, const float (&acc)[MI][NJ][4], i64 row0, i64 col0,
                                         i64 M, i64 N, bool pair, Cvt cvt) {
    #pragma unroll
    for (int i = 0; i < MI; ++i) {
        #pragma unroll
        for (int h = 0; h < 2; ++h) {
            const i64 gm = row0 + 16 * i + 8 * h;
            if (gm >= M) continue;
            O* row = C + gm * N + col0;
            const int left = (int)(N - col0 < 8 * NJ ? N - col0 : 8 * NJ);  // columns of this row still in C
            #pragma unroll
            for (int j = 0; j < NJ; ++j) {
                if (8 * j >= left) continue;
                const O o0 = cvt(acc[i][j][2 * h]), o1 = cvt(acc[i][j][2 * h + 1]);
                if (pair) {
                    // the type of two outputs side by side: float2 for float, 32 bits for two 16-bit values
                    if constexpr (sizeof(O) == 4) *reinterpret_cast<float2*>(row + 8 * j) = make_float2(o0, o1);
                    else *reinterpret_cast<u32*>(row + 8 * j) = (u32)o0 | ((u32)o1 << 16);
                } else {
                    row[8 * j] = o0;
                    if (8 * j + 1 < left) row[8 * j + 1] = o1;
                }
            }
        }
    }
}

extern __shared__ __align__(16) unsigned char tc_smem[];

#define TC_ARGS(T)                                                                                              \
    const T *__restrict__ A, const T *__restrict__ B, void *__restrict__ C, const T *__restrict__ bias,         \
        const i64 *__restrict__ boff, i64 batch, int splits, i64 kchunk, i64 split_stride, i64 M, i64 N, i64 K, \
        i64 sAm, i64 sAk, i64 sBk, i64 sBn, int has_bias, int vec
#define TC_PASS A, B, C, bias, boff, batch, splits, kchunk, split_stride, M, N, K, sAm, sAk, sBk, sBn, has_bias, vec

// One block computes BM x BN tiles of C with WARPS_M x WARPS_N warps, each owning a (BM / WARPS_M) x
// (BN / WARPS_N) piece as MI x NJ mma tiles of 16 x 8.
template <int TY, int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool AK, bool BKM>
__device__ __forceinline__ void tc_gemm(TC_ARGS(typename TcT<TY>::T)) {
    using Tr = TcT<TY>;
    using T = typename Tr::T;
    constexpr int BK = Tr::BK, MK = Tr::MMA_K;
    constexpr int KUNROLL = TY == TC_TF32 ? 1 : BK / MK;
    constexpr int NT = 32 * WARPS_M * WARPS_N;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    constexpr int MI = WM / 16, NJ = WN / 8;
    static_assert(MI * 16 == WM && NJ * 8 == WN && NJ % 2 == 0, "warp tile must be 16m x 16n");
    static_assert(STAGES >= 2, "a ring of at least two tiles");
    using LA = TcTile<T, BM, BK, AK>;
    using LB = TcTile<T, BN, BK, BKM>;
    constexpr int STAGE = LA::ELEMS + LB::ELEMS;
    static_assert(LA::ELEMS % (16 / sizeof(T)) == 0 && LB::ELEMS % (16 / sizeof(T)) == 0,
                  "tiles stay 16-byte aligned");

    unsigned char* raw = tc_smem;  // (an implicit conversion: the simulator models the array as an object)
    T* smem = reinterpret_cast<T*>(raw);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm0 = (warp / WARPS_N) * WM, wn0 = (warp % WARPS_N) * WN;
    const int g = lane / 4, t = lane % 4;
    const bool a_vec = vec & 1, b_vec = vec & 2, c_pair = vec & 4;
    const bool partial = splits > 1;
    const i64 mtiles = (M + BM - 1) / BM, ntiles = (N + BN - 1) / BN;

    for (i64 z = blockIdx.z; z < batch * splits; z += gridDim.z) {
        const i64 bz = z / splits;
        const int split = (int)(z - bz * splits);
        const T* Ab = A + boff[3 * bz];
        const T* Bb = B + boff[3 * bz + 1];
        const i64 kbeg = split * kchunk;
        const i64 kend = kbeg + kchunk < K ? kbeg + kchunk : K;
        const i64 nk = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;
        for (i64 mt = blockIdx.y; mt < mtiles; mt += gridDim.y) {
            for (i64 nt = blockIdx.x; nt < ntiles; nt += gridDim.x) {
                const i64 m0 = mt * BM, n0 = nt * BN;
                float acc[MI][NJ][4];
                #pragma unroll
                for (int i = 0; i < MI; ++i)
                    #pragma unroll
                    for (int j = 0; j < NJ; ++j)
                        #pragma unroll
                        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

                // one commit group per step, empty past the last, so the wait below always counts STAGES - 2
                #pragma unroll
                for (int s = 0; s < STAGES - 1; ++s) {
                    if (s < nk) {
                        T* st = smem + s * STAGE;
                        LA::template stage<NT>(st, Ab, a_vec, m0, M, kbeg + s * BK, kend, sAm, sAk);
                        LB::template stage<NT>(st + LA::ELEMS, Bb, b_vec, n0, N, kbeg + s * BK, kend, sBn, sBk);
                    }
                    mt_cp_async_commit();
                }
                int buf = 0;
                for (i64 kt = 0; kt < nk; ++kt) {
                    mt_cp_async_wait_group<STAGES - 2>();
                    // step kt's tiles are visible to all, and every warp is done with step kt - 1's buffer
                    __syncthreads();
                    const i64 kn = kt + STAGES - 1;
                    if (kn < nk) {
                        T* st = smem + (buf == 0 ? STAGES - 1 : buf - 1) * STAGE;
                        LA::template stage<NT>(st, Ab, a_vec, m0, M, kbeg + kn * BK, kend, sAm, sAk);
                        LB::template stage<NT>(st + LA::ELEMS, Bb, b_vec, n0, N, kbeg + kn * BK, kend, sBn, sBk);
                    }
                    mt_cp_async_commit();
                    const T* as = smem + buf * STAGE;
                    const T* bs = as + LA::ELEMS;
                    // NOTE: unrolled, the tf32 steps' 32-bit fragment loads of the second k8 are hoisted above
                    // the first's mma and spill at 255 registers; the ldmatrix steps fit unrolled
                    #pragma unroll KUNROLL
                    for (int kk = 0; kk < BK; kk += MK) {
                        u32 af[MI][4], bf[NJ][2];
                        if constexpr (TY == TC_TF32) {
                            // fragments by 32-bit shared loads, rounded to tf32 on the way
                            #pragma unroll
                            for (int i = 0; i < MI; ++i) {
                                const int m = wm0 + 16 * i + g;
                                af[i][0] = mt_tf32(as[LA::at(m, kk + t)]);
                                af[i][1] = mt_tf32(as[LA::at(m + 8, kk + t)]);
                                af[i][2] = mt_tf32(as[LA::at(m, kk + t + 4)]);
                                af[i][3] = mt_tf32(as[LA::at(m + 8, kk + t + 4)]);
                            }
                            #pragma unroll
                            for (int j = 0; j < NJ; ++j) {
                                const int n = wn0 + 8 * j + g;
                                bf[j][0] = mt_tf32(bs[LB::at(n, kk + t)]);
                                bf[j][1] = mt_tf32(bs[LB::at(n, kk + t + 4)]);
                            }
                        } else {
                            // lane l addresses row l % 8 of matrix l / 8; see the lane maps in the file header
                            const int r = lane % 8, q = lane / 8;
                            #pragma unroll
                            for (int i = 0; i < MI; ++i) {
                                const int m = wm0 + 16 * i;
                                if (AK) mt_ldmatrix_x4(af[i], as + LA::at(m + r + 8 * (q % 2), kk + 8 * (q / 2)));
                                else mt_ldmatrix_x4_trans(af[i], as + LA::at(m + 8 * (q % 2), kk + r + 8 * (q / 2)));
                            }
                            #pragma unroll
                            for (int j = 0; j < NJ / 2; ++j) {
                                const int n = wn0 + 16 * j;
                                u32 w[4];
                                if (BKM) mt_ldmatrix_x4(w, bs + LB::at(n + r + 8 * (q / 2), kk + 8 * (q % 2)));
                                else mt_ldmatrix_x4_trans(w, bs + LB::at(n + 8 * (q / 2), kk + r + 8 * (q % 2)));
                                bf[2 * j][0] = w[0];
                                bf[2 * j][1] = w[1];
                                bf[2 * j + 1][0] = w[2];
                                bf[2 * j + 1][1] = w[3];
                            }
                        }
                        #pragma unroll
                        for (int i = 0; i < MI; ++i)
                            #pragma unroll
                            for (int j = 0; j < NJ; ++j) {
                                if constexpr (TY == TC_TF32) mt_mma_tf32_m16n8k8(acc[i][j], af[i], bf[j]);
                                else if constexpr (TY == TC_F16) mt_mma_f16_m16n8k16(acc[i][j], af[i], bf[j]);
                                else mt_mma_bf16_m16n8k16(acc[i][j], af[i], bf[j]);
                            }
                    }
                    buf = buf + 1 == STAGES ? 0 : buf + 1;
                }
                mt_cp_async_wait_group<0>();  // the empty tail groups, before the next tile reuses the ring
                __syncthreads();  // the next tile's first copies overwrite buffer 0

                // ---- epilogue: dense C (row stride N); a split writes float32 into its own slice, without bias
                const i64 coff = boff[3 * bz + 2];
                const i64 row0 = m0 + wm0 + g, col0 = n0 + wn0 + 2 * t;
                if (partial) {
                    tc_store<float, MI, NJ>(static_cast<float*>(C) + split * split_stride + coff, acc, row0, col0,
                                            M, N, c_pair, [](float v) { return v; });
                } else {
                    if (has_bias) tc_add_bias<Tr, MI, NJ>(acc, bias, col0, N);
                    tc_store<T, MI, NJ>(static_cast<T*>(C) + coff, acc, row0, col0, M, N, c_pair,
                                        [](float v) { return Tr::from_float(v); });
                }
            }
        }
    }
}

// C[b, m, n] = sum over s of W[s, b, m, n] (+ bias[n]), s in order, rounded once to the output type
template <int TY>
__device__ __forceinline__ void tc_splitk_reduce(const float* __restrict__ W, void* __restrict__ C,
                                                 const typename TcT<TY>::T* __restrict__ bias, i64 total, i64 N,
                                                 int splits, int has_bias) {
    using Tr = TcT<TY>;
    MT_GRID_STRIDE(i, total) {
        float v = W[i];
        for (int s = 1; s < splits; ++s) v += W[s * total + i];
        if (has_bias) v += Tr::to_float(bias[i % N]);
        static_cast<typename Tr::T*>(C)[i] = Tr::from_float(v);
    }
}

#define TC_REDUCE_ARGS(T) \
    const float *__restrict__ W, void *__restrict__ C, const T *__restrict__ bias, i64 total, i64 N, int splits, \
        int has_bias
#define TC_REDUCE_PASS W, C, bias, total, N, splits, has_bias

extern "C" __global__ void __launch_bounds__(256) tc_splitk_reduce_f16(TC_REDUCE_ARGS(u16)) {
    tc_splitk_reduce<TC_F16>(TC_REDUCE_PASS);
}
extern "C" __global__ void __launch_bounds__(256) tc_splitk_reduce_bf16(TC_REDUCE_ARGS(u16)) {
    tc_splitk_reduce<TC_BF16>(TC_REDUCE_PASS);
}
extern "C" __global__ void __launch_bounds__(256) tc_splitk_reduce_tf32(TC_REDUCE_ARGS(float)) {
    tc_splitk_reduce<TC_TF32>(TC_REDUCE_PASS);
}

// The entry points: launch.TC_KERNELS mirrors each one's tile, BK, threads, stages and blocks per SM.
// 128 x 128: 4 warps of 64 x 64 (128 accumulators and 16 + 16 fragment registers a thread, the 8 ldmatrix of a
// k16 step feeding 32 mma), a 4-stage ring of 80 KB; two blocks of up to 255 registers per SM.
// 64 x 64: 4 warps of 32 x 32 (32 accumulators), a 3-stage ring of 30 KB (float16/bfloat16) or 28 KB (tf32); four
// blocks of up to 128 registers.
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_f16_128x128_kk(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 128, 128, 2, 2, 4, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_f16_128x128_kt(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 128, 128, 2, 2, 4, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_f16_128x128_tk(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 128, 128, 2, 2, 4, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_f16_128x128_tt(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 128, 128, 2, 2, 4, false, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_bf16_128x128_kk(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 128, 128, 2, 2, 4, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_bf16_128x128_kt(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 128, 128, 2, 2, 4, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_bf16_128x128_tk(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 128, 128, 2, 2, 4, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_bf16_128x128_tt(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 128, 128, 2, 2, 4, false, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_tf32_128x128_kk(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 128, 128, 2, 2, 4, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_tf32_128x128_kt(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 128, 128, 2, 2, 4, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_tf32_128x128_tk(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 128, 128, 2, 2, 4, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 2) tcgemm_tf32_128x128_tt(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 128, 128, 2, 2, 4, false, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_f16_64x64_kk(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 64, 64, 2, 2, 3, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_f16_64x64_kt(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 64, 64, 2, 2, 3, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_f16_64x64_tk(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 64, 64, 2, 2, 3, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_f16_64x64_tt(TC_ARGS(u16)) {
    tc_gemm<TC_F16, 64, 64, 2, 2, 3, false, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_bf16_64x64_kk(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 64, 64, 2, 2, 3, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_bf16_64x64_kt(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 64, 64, 2, 2, 3, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_bf16_64x64_tk(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 64, 64, 2, 2, 3, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_bf16_64x64_tt(TC_ARGS(u16)) {
    tc_gemm<TC_BF16, 64, 64, 2, 2, 3, false, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_tf32_64x64_kk(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 64, 64, 2, 2, 3, true, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_tf32_64x64_kt(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 64, 64, 2, 2, 3, true, false>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_tf32_64x64_tk(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 64, 64, 2, 2, 3, false, true>(TC_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) tcgemm_tf32_64x64_tt(TC_ARGS(float)) {
    tc_gemm<TC_TF32, 64, 64, 2, 2, 3, false, false>(TC_PASS);
}
