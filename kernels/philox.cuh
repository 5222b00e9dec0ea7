// philox.cuh: the counter-based Philox4x32-10 block function shared by random.cu (the raw stream and its
// distributions) and attention.cu (dropout masks regenerated inside the kernels). Bit-identical with
// backends/_random.py: key = the generator's 64-bit seed, counter = a 128-bit block number (lo, hi).
#ifndef MT_PHILOX_CUH
#define MT_PHILOX_CUH
#include "common.cuh"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

struct Words4 {
    u32 w[4];
};

__device__ __forceinline__ Words4 philox(u64 ctr_lo, u64 ctr_hi, u64 key) {
    u32 c0 = (u32)ctr_lo, c1 = (u32)(ctr_lo >> 32), c2 = (u32)ctr_hi, c3 = (u32)(ctr_hi >> 32);
    u32 k0 = (u32)key, k1 = (u32)(key >> 32);
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        u64 p0 = (u64)PHILOX_M0 * c0;
        u64 p1 = (u64)PHILOX_M1 * c2;
        u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0;
        u32 n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
        c1 = (u32)p1;
        c3 = (u32)p0;
        c0 = n0;
        c2 = n2;
    }
    return Words4{{c0, c1, c2, c3}};
}

// The stream a launch draws from: its (key, counter) arguments, or, when `state` is not null, the generator's
// {seed, offset} in device memory with the counter argument taken relative to that offset. A CUDA graph captures
// the pointer, and the generator writes its seed and offset there before each replay, so every replay draws
// fresh numbers at the position an eager run would (PyTorch's philox seed and offset "extragraph" tensors).
__device__ __forceinline__ void philox_resolve(u64& key, u64& ctr_lo, u64& ctr_hi, const u64* __restrict__ state) {
    if (state == nullptr) return;
    key = state[0];
    const u64 lo = ctr_lo + state[1];
    ctr_hi += lo < ctr_lo ? 1 : 0;  // carry out of the low half
    ctr_lo = lo;
}

// word i of the stream that starts at block (ctr_lo, ctr_hi)
__device__ __forceinline__ u32 stream_word(u64 ctr_lo, u64 ctr_hi, u64 key, i64 i) {
    u64 b = (u64)(i >> 2);
    u64 lo = ctr_lo + b;
    u64 hi = ctr_hi + (lo < ctr_lo ? 1 : 0);  // carry out of the low half
    return philox(lo, hi, key).w[i & 3];
}

#endif  // MT_PHILOX_CUH
