// random.cu: counter-based Philox4x32-10 streams, bit-identical with backends/_random.py.
//
// Kernels (T = float | double | __half | __nv_bfloat16):
//   philox_words       the raw stream: block b of the draw = Philox(counter + b, key) -> words 4b .. 4b+3
//   uniform_forward<T> uniforms in [low, high): d mantissa digits (24 float, 11 half, 8 bfloat16) from one word
//                      each, (word >> (32 - d)) * 2^-d in float; double from a 64-bit value (two words, low
//                      first) as (u64 >> 11) * 2^-53; then u * (high - low) + low as two rounded operations in
//                      the arithmetic type (float for the 16-bit types), rounded once to T
//   normal_forward<T>  Box-Muller in double on pairs (u1 in (0, 1], u2 in [0, 1)): element 2j = r cos t,
//                      2j+1 = r sin t, then * std + mean, rounded once to T (double -> half directly, never
//                      through float). u's come from single words (all but double) or 64-bit values (double),
//                      as in the NumPy implementation.
//   randint_forward    int64 low + bits % span, with one word when the span fits in 32 bits, else 64 bits
//   dropout_forward<T> y = x * (keep ? scale : 0) (+ r): keep_i = word i < threshold, the same draw as the
//                      bernoulli mask of the NumPy implementation (word * 2^-32 < 1 - p); a thread owns the 4
//                      elements of one Philox block (8, two blocks, for the 16-bit types: one 128-bit pack);
//                      the forward, the backward (the same call on the gradient with the same counter: the mask
//                      is regenerated, never stored) and the fused residual x + dropout(y). The 16-bit types
//                      multiply in float by the scale rounded to T and round the product to T, then add the
//                      residual in float and round again: the two roundings of x * mask and r + (x * mask).
//
// key = the generator's 64-bit seed (low 32 bits = key word 0); the counter is 128-bit (lo, hi), advanced
// by the generator in whole blocks. `rng`, when not null, holds the generator's {seed, offset} in device memory
// (CUDA-graph capture, philox.cuh's philox_resolve): the key is read there and the counter is relative to it.
// __fmul_rn / __dmul_rn keep NVRTC from fusing the scale and shift into one FMA, which would round once where
// NumPy rounds twice.
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "philox.cuh"

extern "C" __global__ void philox_words(u64 key, u64 ctr_lo, u64 ctr_hi, const u64* __restrict__ rng, i64 nblocks,
                                        u32* __restrict__ out) {
    philox_resolve(key, ctr_lo, ctr_hi, rng);
    MT_GRID_STRIDE(b, nblocks) {
        u64 lo = ctr_lo + (u64)b;
        u64 hi = ctr_hi + (lo < ctr_lo ? 1 : 0);
        Words4 r = philox(lo, hi, key);
        #pragma unroll
        for (int k = 0; k < 4; ++k) out[4 * b + k] = r.w[k];
    }
}

__device__ __forceinline__ float scale_shift(float u, float scale, float low) { return __fadd_rn(__fmul_rn(u, scale), low); }
__device__ __forceinline__ double scale_shift(double u, double scale, double low) { return __dadd_rn(__dmul_rn(u, scale), low); }

// mantissa digits of the uniforms of each storage type (backends/_random.py's table)
template <typename T> struct RandDigits { static constexpr int value = 24; };
template <> struct RandDigits<double> { static constexpr int value = 53; };
template <> struct RandDigits<__half> { static constexpr int value = 11; };
template <> struct RandDigits<__nv_bfloat16> { static constexpr int value = 8; };

template <typename T>
__global__ void uniform_forward(u64 key, u64 ctr_lo, u64 ctr_hi, const u64* __restrict__ rng, i64 n,
                                T* __restrict__ out, acc_t<T> scale, acc_t<T> low, int shift) {
    typedef acc_t<T> A;
    philox_resolve(key, ctr_lo, ctr_hi, rng);
    constexpr int D = RandDigits<T>::value;
    MT_GRID_STRIDE(i, n) {
        A u;
        if constexpr (D == 53) {
            u64 v = ((u64)stream_word(ctr_lo, ctr_hi, key, 2 * i + 1) << 32) | stream_word(ctr_lo, ctr_hi, key, 2 * i);
            u = (A)(v >> 11) * (A)(1.0 / 9007199254740992.0);
        } else {
            // (word >> (32 - D)) < 2^D and the power of two are exact in float: u is exact
            u = (A)(stream_word(ctr_lo, ctr_hi, key, i) >> (32 - D)) * (A)(1.0f / (float)(1u << D));
        }
        out[i] = mt_cast<T>(shift ? scale_shift(u, scale, low) : u);
    }
}

template <typename T>
__global__ void normal_forward(u64 key, u64 ctr_lo, u64 ctr_hi, const u64* __restrict__ rng, i64 n,
                               T* __restrict__ out, double mean, double std, int wide) {
    philox_resolve(key, ctr_lo, ctr_hi, rng);
    i64 pairs = (n + 1) / 2;
    MT_GRID_STRIDE(j, pairs) {
        double u1, u2;
        if (wide) {
            u64 a = ((u64)stream_word(ctr_lo, ctr_hi, key, 4 * j + 1) << 32) | stream_word(ctr_lo, ctr_hi, key, 4 * j);
            u64 b = ((u64)stream_word(ctr_lo, ctr_hi, key, 4 * j + 3) << 32) | stream_word(ctr_lo, ctr_hi, key, 4 * j + 2);
            u1 = __dmul_rn((double)(a >> 11) + 1.0, 1.0 / 9007199254740992.0);
            u2 = __dmul_rn((double)(b >> 11), 1.0 / 9007199254740992.0);
        } else {
            u1 = __dmul_rn((double)stream_word(ctr_lo, ctr_hi, key, 2 * j) + 1.0, 1.0 / 4294967296.0);
            u2 = __dmul_rn((double)stream_word(ctr_lo, ctr_hi, key, 2 * j + 1), 1.0 / 4294967296.0);
        }
        double r = sqrt(__dmul_rn(-2.0, log(u1)));
        double t = __dmul_rn(u2, 2.0 * 3.141592653589793);
        double z0 = __dmul_rn(r, cos(t)), z1 = __dmul_rn(r, sin(t));
        if (std != 1.0) {
            z0 = __dmul_rn(z0, std);
            z1 = __dmul_rn(z1, std);
        }
        if (mean != 0.0) {
            z0 = __dadd_rn(z0, mean);
            z1 = __dadd_rn(z1, mean);
        }
        // one rounding from double, for the 16-bit types too (their constructors from double round directly)
        out[2 * j] = (T)z0;
        if (2 * j + 1 < n) out[2 * j + 1] = (T)z1;
    }
}

extern "C" __global__ void randint_forward(u64 key, u64 ctr_lo, u64 ctr_hi, const u64* __restrict__ rng, i64 n,
                                           i64* __restrict__ out, i64 low, u64 span, int wide) {
    philox_resolve(key, ctr_lo, ctr_hi, rng);
    MT_GRID_STRIDE(i, n) {
        if (wide) {
            u64 v = ((u64)stream_word(ctr_lo, ctr_hi, key, 2 * i + 1) << 32) | stream_word(ctr_lo, ctr_hi, key, 2 * i);
            if (span != 0) v %= span;  // span 0 stands for 2^64: every value is in range
            out[i] = (i64)(v + (u64)low);  // wrapping, as the NumPy implementation adds in uint64
        } else {
            u64 w = stream_word(ctr_lo, ctr_hi, key, i);
            if (span != (1ull << 32)) w %= span;
            out[i] = (i64)w + low;
        }
    }
}

// ------------------------------------------------------------------------------------------ dropout
// mode bits of dropout_forward
#define DROP_ADD 1  // add the residual r
#define DROP_VEC 2  // x, r and y are 16-byte aligned: 128-bit packs

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

template <typename T>
__global__ void dropout_forward(u64 key, u64 ctr_lo, u64 ctr_hi, const u64* __restrict__ rng, i64 n,
                                const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ y, u64 threshold,
                                acc_t<T> scale, int mode) {
    typedef acc_t<T> A;
    philox_resolve(key, ctr_lo, ctr_hi, rng);
    constexpr int S = Packed128<T>::size;
    // elements a thread owns: the 4 words of one Philox block, or two blocks for a 128-bit pack of 8 halves
    constexpr int E = S > 4 ? S : 4;
    constexpr int NB = E / 4;
    bool add = mode & DROP_ADD;
    bool vec = mode & DROP_VEC;
    i64 groups = (n + E - 1) / E;
    // consecutive threads touch consecutive 16-byte pieces (coalesced)
    MT_GRID_STRIDE(gi, groups) {
        A m[E];
        #pragma unroll
        for (int q = 0; q < NB; ++q) {
            u64 lo = ctr_lo + (u64)(gi * NB + q);
            Words4 w = philox(lo, ctr_hi + (lo < ctr_lo ? 1 : 0), key);
            #pragma unroll
            for (int k = 0; k < 4; ++k) m[4 * q + k] = (u64)w.w[k] < threshold ? scale : (A)0;
        }
        i64 i0 = gi * E;
        // the multiply is rounded to T on its own (no FMA with the residual add), as the NumPy body rounds it;
        // x * 0 keeps NaN for an infinite or NaN input, as x * mask does in PyTorch
        if (vec && i0 + E <= n) {
            #pragma unroll
            for (int h = 0; h < E; h += S) {
                Packed128<T> a = load128(x + i0 + h), o;
                #pragma unroll
                for (int k = 0; k < S; ++k) o.v[k] = mt_cast<T>(mul_rn(mt_acc(a.v[k]), m[h + k]));
                if (add) {
                    Packed128<T> c = load128(r + i0 + h);
                    #pragma unroll
                    for (int k = 0; k < S; ++k) o.v[k] = mt_cast<T>(mt_acc(c.v[k]) + mt_acc(o.v[k]));
                }
                store128(y + i0 + h, o);
            }
        } else {
            #pragma unroll
            for (int k = 0; k < E; ++k) {
                if (i0 + k < n) {
                    T v = mt_cast<T>(mul_rn(mt_acc(x[i0 + k]), m[k]));
                    y[i0 + k] = add ? mt_cast<T>(mt_acc(r[i0 + k]) + mt_acc(v)) : v;
                }
            }
        }
    }
}
