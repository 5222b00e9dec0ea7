// random.cu: counter-based Philox4x32-10 streams, bit-identical with backends/_random.py.
//
// Kernels:
//   philox_words       the raw stream: block b of the draw = Philox(counter + b, key) -> words 4b .. 4b+3
//   uniform_forward<T> uniforms in [low, high): float (d = 24 mantissa digits) from one word each,
//                      (word >> (32 - d)) * 2^-d; double from a 64-bit value (two words, low first) as
//                      (u64 >> 11) * 2^-53; then u * (high - low) + low as two rounded operations
//   normal_forward<T>  Box-Muller in double on pairs (u1 in (0, 1], u2 in [0, 1)): element 2j = r cos t,
//                      2j+1 = r sin t, then * std + mean, rounded once to T. u's come from single words
//                      (float) or 64-bit values (double), as in the NumPy implementation.
//   randint_forward    int64 low + bits % span, with one word when the span fits in 32 bits, else 64 bits
//
// key = the generator's 64-bit seed (low 32 bits = key word 0); the counter is 128-bit (lo, hi), advanced
// by the generator in whole blocks. __fmul_rn / __dmul_rn keep NVRTC from fusing the scale and shift into
// one FMA, which would round once where NumPy rounds twice.
#include "common.cuh"
#include "philox.cuh"

extern "C" __global__ void philox_words(u64 key, u64 ctr_lo, u64 ctr_hi, i64 nblocks, u32* __restrict__ out) {
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

template <typename T>
__global__ void uniform_forward(u64 key, u64 ctr_lo, u64 ctr_hi, i64 n, T* __restrict__ out, T scale, T low,
                                int shift) {
    MT_GRID_STRIDE(i, n) {
        T u;
        if (sizeof(T) == 8) {
            u64 v = ((u64)stream_word(ctr_lo, ctr_hi, key, 2 * i + 1) << 32) | stream_word(ctr_lo, ctr_hi, key, 2 * i);
            u = (T)(double)(v >> 11) * (T)(1.0 / 9007199254740992.0);
        } else {
            u = (T)(float)(stream_word(ctr_lo, ctr_hi, key, i) >> 8) * (T)(1.0f / 16777216.0f);
        }
        out[i] = shift ? scale_shift(u, scale, low) : u;
    }
}

template <typename T>
__global__ void normal_forward(u64 key, u64 ctr_lo, u64 ctr_hi, i64 n, T* __restrict__ out, double mean, double std,
                               int wide) {
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
        out[2 * j] = (T)z0;
        if (2 * j + 1 < n) out[2 * j + 1] = (T)z1;
    }
}

extern "C" __global__ void randint_forward(u64 key, u64 ctr_lo, u64 ctr_hi, i64 n, i64* __restrict__ out, i64 low,
                                           u64 span, int wide) {
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
