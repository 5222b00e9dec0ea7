// matmul.cu: batched C = A @ B (+ bias) for float (SGEMM) and double (DGEMM).
//
// Kernels (all instantiations of one template, mm_tiled):
//   matmul_forward_v2      128 x 128 output tiles, K steps of 8, 256 threads each accumulating an 8 x 8
//                          register block (two 4 x 4 quadrants 64 rows / 64 columns apart, threads as a 16 x 16
//                          grid). float only: 64 float accumulators fit the 128 registers that two blocks per SM allow.
//   sgemm_warp_*           SGEMM variants with warp tiling (a warp owns a 64 x 32 or 32 x 64 piece of the tile, its
//                          threads 8 x 8 each as 2 x 2 sub-blocks of 4 x 4): 128 x 128 tiles with K steps of 8, 16,
//                          or 8 through a 3-stage cp.async ring; 128 x 64 and 64 x 128 tiles of 128 threads with K
//                          steps of 16, two or three stages. Every one takes a block swizzle (`swz`) for L2 reuse.
//   matmul_forward<T>      64 x 64 tiles, K steps of 16, 4 x 4 per thread: four times the blocks, for
//                          problems too small or skinny to fill the GPU with 128 x 128 tiles, and for double.
//   matmul_splitk_reduce<T> sums the split-K partial products in a fixed order (+ bias): deterministic, no atomics.
// `python -m benchmarks.sgemm_variants` times them all against cuBLAS; launch.SGEMM_CHOICE picks one per class
// of product.
//
// Replaces v1 (64 x 64 tiles, 4 x 4 per thread, scalar shared reads, no double buffering: 0.30x cuBLAS).
// Both shared tiles are k-major (As[k][m], Bs[k][n]) with 4 elements of padding per row, in a ring of STAGES
// buffers: the copies of step k + STAGES - 1 (cp.async on sm_80+, see common.cuh) are issued right after the one
// barrier of step k and run behind the math of the steps before them. An operand whose contiguous dim is the
// tile's row (A column-major, B row-major) is copied 16 bytes at a time (`vec` bit 0 for A, bit 1 for B; the
// launcher proves every row of every batch entry 16-byte aligned). Any other layout — the transposed operand of
// every x @ W.T, a row-major A, misaligned views — is copied one element at a time, consecutive threads walking
// the operand's contiguous dim (coalesced global reads) and, thanks to the padding, distinct banks on most of the
// transposing shared stores. Split-K: blockIdx.z runs
// over batch x splits; split s reduces k in [s * kchunk, (s + 1) * kchunk) into its own slice of a workspace.
// `vec` bit 2: C rows are 16-byte aligned and N a multiple of the pack, so the epilogue stores 128 bits.
//
// The launcher (backends/cuda/launch.py, `gemm_plan`) picks the kernel, the swizzle, the split count and the grid;
// it uses cuBLAS instead when mt.backends.cuda.matmul.allow_tf32 asks for TF32 on a GPU.
#include "common.cuh"

#define MM_THREADS 256
#define MM_PAD 4  // keeps rows 16-byte aligned and moves row k + 1 four banks over

// Copies one operand's k-slices into k-major shared tiles S[k][x] (row pitch BX + MM_PAD), one step of BK at a
// time, with NT threads. X is the operand's output dim (m for A, n for B, element stride sX), k has stride sK;
// elements past the operand's edge or the split's last k read as 0. Modes:
//   MM_DIRECT  sX == 1 and every row 16-byte aligned: 16-byte packs go across unchanged
//   MM_KCONTIG sK == 1 (a row-major A, the W of x @ W.T): consecutive threads walk k, so global reads coalesce and
//              the transposing shared stores land one row = 4 banks apart
//   MM_STRIDED anything else: consecutive threads walk x
// Each thread copies a fixed pattern (rows kk0 + i DK, columns xx0 + i DX of the tile). The stager keeps only its
// pointer and an edge mask in registers; the pattern comes from threadIdx and the strides from the kernel's
// parameters (constant memory) at every step, so the registers go to the accumulators.
enum MmMode { MM_DIRECT, MM_KCONTIG, MM_STRIDED };

template <typename T, int BK, int BX, int NT>
struct MmStager {
    static constexpr int P = Packed128<T>::size;
    static constexpr int PITCH = BX + MM_PAD;
    static constexpr int NV = BK * BX / P / NT;  // packs per thread and step (MM_DIRECT)
    static constexpr int NE = BK * BX / NT;      // elements per thread and step (otherwise)
    static_assert(NV >= 1 && NT % (BX / P) == 0 && NT % BK == 0 && NT % BX == 0 && NE <= 32,
                  "tile shape does not divide among the threads");
    const T* g;  // this thread's first element of the next step
    u32 xvalid;  // bit i: element i's column is inside the operand

    // this thread's first row and column in the tile, and the row and column steps between its elements
    static __device__ __forceinline__ void pattern(int mode, int& kk0, int& xx0, int& dk, int& dx) {
        const int tid = threadIdx.x;
        if (mode == MM_DIRECT) {
            kk0 = tid / (BX / P); xx0 = (tid % (BX / P)) * P; dk = NT / (BX / P); dx = 0;
        } else if (mode == MM_KCONTIG) {
            kk0 = tid % BK; xx0 = tid / BK; dk = 0; dx = NT / BK;
        } else {
            kk0 = tid / BX; xx0 = tid % BX; dk = NT / BX; dx = 0;
        }
    }

    __device__ __forceinline__ MmStager(const T* G, int mode, i64 x0, i64 X, i64 kbeg, i64 sX, i64 sK) {
        int kk0, xx0, dk, dx;
        pattern(mode, kk0, xx0, dk, dx);
        g = G + (kbeg + kk0) * sK + (x0 + xx0) * sX;
        // NOTE: in MM_DIRECT X is a multiple of P, so a pack is wholly inside or wholly outside the operand
        xvalid = 0;
        #pragma unroll
        for (int i = 0; i < NE; ++i) xvalid |= (u32)(x0 + xx0 + i * dx < X) << i;
    }

    // the copies of the next step (its first kvalid rows of k exist), then on to the step after it
    __device__ __forceinline__ void issue(T* __restrict__ S, int kvalid, int mode, i64 sX, i64 sK) {
        int kk0, xx0, dk, dx;
        pattern(mode, kk0, xx0, dk, dx);
        T* s = S + kk0 * PITCH + xx0;
        const i64 di = dk * sK + dx * sX;
        const int s_di = dk * PITCH + dx;
        if (mode == MM_DIRECT) {
            #pragma unroll
            for (int i = 0; i < NV; ++i) {
                if (kk0 + i * dk < kvalid && (xvalid & 1)) {
                    mt_cp_async16(s + i * s_di, g + i * di);
                } else {
                    #pragma unroll
                    for (int e = 0; e < P; ++e) s[i * s_di + e] = (T)0;
                }
            }
        } else {
            #pragma unroll
            for (int i = 0; i < NE; ++i) {
                if (kk0 + i * dk < kvalid && (xvalid >> i & 1)) mt_cp_async_elem(s + i * s_di, g + i * di);
                else s[i * s_di] = (T)0;
            }
        }
        g += BK * sK;
    }
};

template <typename T>
__device__ __forceinline__ void mm_load4(const T* __restrict__ p, T* r) {
    constexpr int P = Packed128<T>::size;
    #pragma unroll
    for (int h = 0; h < 4 / P; ++h) {
        Packed128<T> v = load128(p + h * P);
        #pragma unroll
        for (int s = 0; s < P; ++s) r[h * P + s] = v.v[s];
    }
}

// Where a thread's TM x TM block lies in the BM x BN tile: RQ = TM / 4 sub-blocks of 4 x 4 per side; sub-block
// (c, d) starts at row row(c) and column col(d).
//   MM_GRID16  (v2, the 64 x 64 kernel) 256 threads as 16 x 16; sub-blocks BM / RQ apart. A warp (two rows of
//              16 threads) reads 2 distinct A packs and 16 distinct B packs per k.
//   MM_WARP    warps tile the block WM x WN each, and a warp's 32 threads tile its warp tile (WM / 8) x (WN / 8),
//              sub-blocks WM / 2 and WN / 2 apart: a warp reads 8 + 4 (or 4 + 8) distinct packs per k, half the
//              shared wavefronts of MM_GRID16, and its C tile is a compact 64 x 32 block.
enum MmLayout { MM_GRID16, MM_WARP };

template <int BM, int BN, int TM, int NT, int LAYOUT>
struct MmThreadTile {
    static constexpr int RQ = TM / 4;
    static constexpr int WARPS = NT / 32;
    // warps along n: as many as leave a warp tile no wider than it is tall
    static constexpr int WARPS_N = BN >= BM ? (WARPS >= 4 ? 4 : WARPS) : (WARPS >= 2 ? 2 : 1);
    static constexpr int WARPS_M = WARPS / WARPS_N;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int TC = WN / TM;  // threads of a warp along n
    static_assert(LAYOUT == MM_GRID16 ? NT == 256 && 16 * TM == BM && 16 * TM == BN
                                      : TM == 8 && (WM / TM) * TC == 32 && WARPS_M * WARPS_N == WARPS,
                  "thread tiling does not cover the tile");
    int r0, c0;
    __device__ __forceinline__ MmThreadTile() {
        const int tid = threadIdx.x;
        if (LAYOUT == MM_GRID16) {
            r0 = 4 * (tid / 16);
            c0 = 4 * (tid % 16);
        } else {
            const int warp = tid / 32, lane = tid % 32;
            r0 = (warp / WARPS_N) * WM + 4 * (lane / TC);
            c0 = (warp % WARPS_N) * WN + 4 * (lane % TC);
        }
    }
    static constexpr int DR = LAYOUT == MM_GRID16 ? BM / RQ : WM / 2;
    static constexpr int DC = LAYOUT == MM_GRID16 ? BN / RQ : WN / 2;
    __device__ __forceinline__ int row(int c) const { return r0 + c * DR; }
    __device__ __forceinline__ int col(int d) const { return c0 + d * DC; }
};

// One block computes BM x BN tiles of C with NT threads, each accumulating TM x TM, in K steps of BK through a
// STAGES-deep ring of shared tiles; UNROLL k rows of a step are unrolled at a time (registers vs. latency).
// swz > 0 (and a grid of exactly one block per tile): blocks are renumbered so that consecutive blocks walk down
// a band of swz tile rows before moving right, and the blocks resident at once share their A rows and B columns
// in L2.
template <typename T, int BM, int BN, int BK, int TM, int NT, int LAYOUT, int STAGES, int UNROLL>
__device__ __forceinline__ void mm_tiled(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C,
                                         const T* __restrict__ bias, const i64* __restrict__ boff, i64 batch,
                                         int splits, i64 kchunk, i64 split_stride, i64 M, i64 N, i64 K, i64 sAm,
                                         i64 sAk, i64 sBk, i64 sBn, int has_bias, int vec, int swz) {
    static_assert(STAGES >= 2, "a ring of at least two tiles");
    using Tile = MmThreadTile<BM, BN, TM, NT, LAYOUT>;
    constexpr int RQ = Tile::RQ;
    constexpr int AP = BM + MM_PAD, BP = BN + MM_PAD;
    __shared__ __align__(16) T As[STAGES][BK * AP];
    __shared__ __align__(16) T Bs[STAGES][BK * BP];
    constexpr int P = Packed128<T>::size;
    const Tile tt;
    const i64 mtiles = (M + BM - 1) / BM, ntiles = (N + BN - 1) / BN;
    const bool c_vec = vec & 4;
    const int a_mode = vec & 1 ? MM_DIRECT : sAk == 1 ? MM_KCONTIG : MM_STRIDED;
    const int b_mode = vec & 2 ? MM_DIRECT : sBk == 1 ? MM_KCONTIG : MM_STRIDED;
    i64 mt_first = blockIdx.y, nt_first = blockIdx.x;
    if (swz > 0 && gridDim.x == ntiles && gridDim.y == mtiles) {
        const i64 pid = (i64)blockIdx.y * gridDim.x + blockIdx.x;
        const i64 band = (i64)swz * ntiles;
        const i64 m_lo = pid / band * swz;
        const i64 h = mtiles - m_lo < swz ? mtiles - m_lo : swz;
        const i64 r = pid % band;
        mt_first = m_lo + r % h;
        nt_first = r / h;
    }

    for (i64 z = blockIdx.z; z < batch * splits; z += gridDim.z) {
        const i64 bz = z / splits;
        const int split = (int)(z - bz * splits);
        const T* Ab = A + boff[3 * bz];
        const T* Bb = B + boff[3 * bz + 1];
        const i64 kbeg = split * kchunk;
        const i64 kend = kbeg + kchunk < K ? kbeg + kchunk : K;
        const i64 nk = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;  // steps of this split
        for (i64 mt = mt_first; mt < mtiles; mt += gridDim.y) {
            for (i64 nt = nt_first; nt < ntiles; nt += gridDim.x) {
                const i64 m0 = mt * BM, n0 = nt * BN;
                T acc[TM][TM];
                #pragma unroll
                for (int i = 0; i < TM; ++i)
                    #pragma unroll
                    for (int j = 0; j < TM; ++j) acc[i][j] = 0;

                MmStager<T, BK, BM, NT> sa(Ab, a_mode, m0, M, kbeg, sAm, sAk);
                MmStager<T, BK, BN, NT> sb(Bb, b_mode, n0, N, kbeg, sBn, sBk);
                // every step has BK rows of k but the last, which has klast
                const int klast = (int)(kend - kbeg - (nk - 1) * BK);
                // the first STAGES - 1 steps in flight; one commit group per step, empty past the last, so that
                // the wait below always counts STAGES - 2 younger groups
                #pragma unroll
                for (int s = 0; s < STAGES - 1; ++s) {
                    if (s < nk) {
                        const int kvalid = s + 1 == nk ? klast : BK;
                        sa.issue(As[s], kvalid, a_mode, sAm, sAk);
                        sb.issue(Bs[s], kvalid, b_mode, sBn, sBk);
                    }
                    mt_cp_async_commit();
                }
                int buf = 0;
                for (i64 kt = 0; kt < nk; ++kt) {
                    mt_cp_async_wait_group<STAGES - 2>();
                    // one barrier per step: step kt's tiles are visible to all, and every thread is done reading
                    // step kt - 1, whose buffer the copies below overwrite
                    __syncthreads();
                    const i64 kn = kt + STAGES - 1;
                    if (kn < nk) {
                        const int nbuf = buf == 0 ? STAGES - 1 : buf - 1;
                        const int kvalid = kn + 1 == nk ? klast : BK;
                        sa.issue(As[nbuf], kvalid, a_mode, sAm, sAk);
                        sb.issue(Bs[nbuf], kvalid, b_mode, sBn, sBk);
                    }
                    mt_cp_async_commit();
                    const T* as = As[buf];
                    const T* bs = Bs[buf];
                    // NOTE: unrolled fully, ptxas hoists the fragment loads of later k rows and may spill the
                    // 8 x 8 block at 128 registers; UNROLL rows at a time bound that
                    #pragma unroll UNROLL
                    for (int kk = 0; kk < BK; ++kk) {
                        T a[TM], b[TM];
                        #pragma unroll
                        for (int c = 0; c < RQ; ++c) {
                            mm_load4(as + kk * AP + tt.row(c), a + 4 * c);
                            mm_load4(bs + kk * BP + tt.col(c), b + 4 * c);
                        }
                        #pragma unroll
                        for (int i = 0; i < TM; ++i)
                            #pragma unroll
                            for (int j = 0; j < TM; ++j) acc[i][j] += a[i] * b[j];
                    }
                    buf = buf + 1 == STAGES ? 0 : buf + 1;
                }
                mt_cp_async_wait_group<0>();  // the empty tail groups, before the next tile reuses the ring
                __syncthreads();  // the next tile's first copies overwrite buffer 0
                // read here rather than kept live through the k loop, where registers are short
                T* Cb = C + boff[3 * bz + 2] + split * split_stride;

                // ---- epilogue: C is dense (row stride N); a split writes its own slice without the bias
                #pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const i64 gm = m0 + tt.row(i / 4) + i % 4;
                    if (gm >= M) continue;
                    #pragma unroll
                    for (int c = 0; c < RQ; ++c) {
                        const i64 gn = n0 + tt.col(c);
                        T v[4];
                        #pragma unroll
                        for (int j = 0; j < 4; ++j) {
                            v[j] = acc[i][4 * c + j];
                            if (has_bias && gn + j < N) v[j] += bias[gn + j];
                        }
                        T* dst = Cb + gm * N + gn;
                        if (c_vec) {
                            // N is a multiple of the pack, so a pack is wholly inside or outside the row
                            if (gn < N) {
                                #pragma unroll
                                for (int h = 0; h < 4 / P; ++h) {
                                    Packed128<T> o;
                                    #pragma unroll
                                    for (int s = 0; s < P; ++s) o.v[s] = v[h * P + s];
                                    if (gn + h * P < N) store128(dst + h * P, o);
                                }
                            }
                        } else {
                            #pragma unroll
                            for (int j = 0; j < 4; ++j)
                                if (gn + j < N) dst[j] = v[j];
                        }
                    }
                }
            }
        }
    }
}

#define MM_TILED_ARGS(T)                                                                                         \
    const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ C, const T *__restrict__ bias,            \
        const i64 *__restrict__ boff, i64 batch, int splits, i64 kchunk, i64 split_stride, i64 M, i64 N, i64 K, \
        i64 sAm, i64 sAk, i64 sBk, i64 sBn, int has_bias, int vec, int swz
#define MM_TILED_PASS \
    A, B, C, bias, boff, batch, splits, kchunk, split_stride, M, N, K, sAm, sAk, sBk, sBn, has_bias, vec, swz

// NOTE: the SGEMM variants are float only (C entry points, not templates): 64 double accumulators would need 128
// registers alone. Their launch bounds allow 128 registers a thread: 64 accumulators, 16 fragment values,
// addresses. The launcher's table (launch.py, SGEMM_VARIANTS) mirrors each one's tile, BK and thread count.
extern "C" __global__ void __launch_bounds__(MM_THREADS, 2) matmul_forward_v2(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 128, 8, 8, 256, MM_GRID16, 2, 2>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_warp_128x128_k8(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 128, 8, 8, 256, MM_WARP, 2, 2>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_warp_128x128_k16(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 128, 16, 8, 256, MM_WARP, 2, 4>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(256, 2) sgemm_warp_128x128_k8_s3(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 128, 8, 8, 256, MM_WARP, 3, 2>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) sgemm_warp_128x64_k16(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 64, 16, 8, 128, MM_WARP, 2, 2>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 4) sgemm_warp_64x128_k16(MM_TILED_ARGS(float)) {
    mm_tiled<float, 64, 128, 16, 8, 128, MM_WARP, 2, 2>(MM_TILED_PASS);
}

// three stages fit the static 48 KB only with half the tile (38 KB); at four blocks per SM (128 registers) the
// deeper ring spills on sm_90, so three blocks of up to 168 registers
extern "C" __global__ void __launch_bounds__(128, 3) sgemm_warp_128x64_k16_s3(MM_TILED_ARGS(float)) {
    mm_tiled<float, 128, 64, 16, 8, 128, MM_WARP, 3, 2>(MM_TILED_PASS);
}
extern "C" __global__ void __launch_bounds__(128, 3) sgemm_warp_64x128_k16_s3(MM_TILED_ARGS(float)) {
    mm_tiled<float, 64, 128, 16, 8, 128, MM_WARP, 3, 2>(MM_TILED_PASS);
}

template <typename T>
__global__ void __launch_bounds__(MM_THREADS) matmul_forward(MM_TILED_ARGS(T)) {
    mm_tiled<T, 64, 64, 16, 4, 256, MM_GRID16, 2, 16>(MM_TILED_PASS);
}

// C[b, m, n] = sum over s of W[s, b, m, n] (+ bias[n]), s in order: the same bits on every run
template <typename T>
__global__ void __launch_bounds__(MM_THREADS)
matmul_splitk_reduce(const T* __restrict__ W, T* __restrict__ C, const T* __restrict__ bias, i64 total, i64 N,
                     int splits, int has_bias) {
    MT_GRID_STRIDE(i, total) {
        T v = W[i];
        for (int s = 1; s < splits; ++s) v += W[s * total + i];
        if (has_bias) v += bias[i % N];
        C[i] = v;
    }
}
