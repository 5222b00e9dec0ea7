// matmul.cu: batched C = A @ B (+ bias) for float (SGEMM) and double (DGEMM).
//
// Kernels:
//   matmul_forward<T>   T = float | double. 64 x 64 output tiles, K in steps of 16 staged in shared memory,
//                       256 threads each accumulating a 4 x 4 register block (rows ty + 16 r, columns tx + 16 c,
//                       so shared-memory reads are conflict-free and global stores coalesce). Any M, N, K;
//                       operands through element strides, so transposed operands need no copy; batches through
//                       a table of per-batch element offsets (broadcast batch dims repeat an offset); an
//                       optional bias added per output column in the epilogue. 128-bit loads when an
//                       operand's inner dim is contiguous, its rows 16-byte aligned and K (A) / N (B) a
//                       multiple of the pack (`vec` bit 0 for A, bit 1 for B).
//
// The launcher (backends/cuda/launch.py) picks this kernel for float32 and float64 unless
// mt.backends.cuda.matmul.allow_tf32 asks for cuBLAS TF32 on a GPU.
#include "common.cuh"

#define MM_BM 64
#define MM_BN 64
#define MM_BK 16
#define MM_THREADS 256

template <typename T>
__global__ void __launch_bounds__(MM_THREADS)
matmul_forward(const T* __restrict__ A, const T* __restrict__ B, T* __restrict__ C, const T* __restrict__ bias,
               const i64* __restrict__ boff, i64 batch, i64 M, i64 N, i64 K, i64 sAm, i64 sAk, i64 sBk, i64 sBn,
               i64 sCm, i64 sCn, int has_bias, int vec) {
    // +1 column of padding: the transposing stores into As would otherwise hit one bank 16 times
    __shared__ T As[MM_BK][MM_BM + 1];
    __shared__ T Bs[MM_BK][MM_BN];
    constexpr int S = Packed128<T>::size;
    const int tid = threadIdx.x;
    const int tx = tid % 16, ty = tid / 16;
    const i64 mtiles = (M + MM_BM - 1) / MM_BM, ntiles = (N + MM_BN - 1) / MM_BN;
    const bool a_k_major = sAk == 1 || sAm != 1;  // which index consecutive threads walk when loading A

    for (i64 bz = blockIdx.z; bz < batch; bz += gridDim.z) {
        const T* Ab = A + boff[3 * bz];
        const T* Bb = B + boff[3 * bz + 1];
        T* Cb = C + boff[3 * bz + 2];
        for (i64 mt = blockIdx.y; mt < mtiles; mt += gridDim.y) {
            for (i64 nt = blockIdx.x; nt < ntiles; nt += gridDim.x) {
                const i64 m0 = mt * MM_BM, n0 = nt * MM_BN;
                T acc[4][4];
                #pragma unroll
                for (int r = 0; r < 4; ++r)
                    #pragma unroll
                    for (int c = 0; c < 4; ++c) acc[r][c] = 0;

                for (i64 k0 = 0; k0 < K; k0 += MM_BK) {
                    // ---- stage A[m0:m0+64, k0:k0+16] as As[k][m]
                    if (vec & 1) {
                        for (int q = tid; q < MM_BM * MM_BK / S; q += MM_THREADS) {
                            int mm = q / (MM_BK / S), kk = (q % (MM_BK / S)) * S;
                            i64 gm = m0 + mm, gk = k0 + kk;
                            Packed128<T> v;
                            if (gm < M && gk < K) {
                                v = load128(Ab + gm * sAm + gk);
                            } else {
                                #pragma unroll
                                for (int s = 0; s < S; ++s) v.v[s] = 0;
                            }
                            #pragma unroll
                            for (int s = 0; s < S; ++s) As[kk + s][mm] = v.v[s];
                        }
                    } else {
                        for (int e = tid; e < MM_BM * MM_BK; e += MM_THREADS) {
                            int mm = a_k_major ? e / MM_BK : e % MM_BM;
                            int kk = a_k_major ? e % MM_BK : e / MM_BM;
                            i64 gm = m0 + mm, gk = k0 + kk;
                            As[kk][mm] = (gm < M && gk < K) ? Ab[gm * sAm + gk * sAk] : (T)0;
                        }
                    }
                    // ---- stage B[k0:k0+16, n0:n0+64] as Bs[k][n]
                    if (vec & 2) {
                        for (int q = tid; q < MM_BK * MM_BN / S; q += MM_THREADS) {
                            int kk = q / (MM_BN / S), nn = (q % (MM_BN / S)) * S;
                            i64 gk = k0 + kk, gn = n0 + nn;
                            Packed128<T> v;
                            if (gk < K && gn < N) {
                                v = load128(Bb + gk * sBk + gn);
                            } else {
                                #pragma unroll
                                for (int s = 0; s < S; ++s) v.v[s] = 0;
                            }
                            #pragma unroll
                            for (int s = 0; s < S; ++s) Bs[kk][nn + s] = v.v[s];
                        }
                    } else {
                        const bool b_n_major = sBn == 1 || sBk != 1;
                        for (int e = tid; e < MM_BK * MM_BN; e += MM_THREADS) {
                            int kk = b_n_major ? e / MM_BN : e % MM_BK;
                            int nn = b_n_major ? e % MM_BN : e / MM_BK;
                            i64 gk = k0 + kk, gn = n0 + nn;
                            Bs[kk][nn] = (gk < K && gn < N) ? Bb[gk * sBk + gn * sBn] : (T)0;
                        }
                    }
                    __syncthreads();
                    #pragma unroll
                    for (int kk = 0; kk < MM_BK; ++kk) {
                        T a[4], b[4];
                        #pragma unroll
                        for (int r = 0; r < 4; ++r) a[r] = As[kk][ty + 16 * r];
                        #pragma unroll
                        for (int c = 0; c < 4; ++c) b[c] = Bs[kk][tx + 16 * c];
                        #pragma unroll
                        for (int r = 0; r < 4; ++r)
                            #pragma unroll
                            for (int c = 0; c < 4; ++c) acc[r][c] += a[r] * b[c];
                    }
                    __syncthreads();  // the tiles are overwritten by the next step
                }
                // ---- epilogue
                #pragma unroll
                for (int r = 0; r < 4; ++r) {
                    i64 gm = m0 + ty + 16 * r;
                    if (gm >= M) continue;
                    #pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        i64 gn = n0 + tx + 16 * c;
                        if (gn < N) Cb[gm * sCm + gn * sCn] = has_bias ? acc[r][c] + bias[gn] : acc[r][c];
                    }
                }
            }
        }
    }
}
