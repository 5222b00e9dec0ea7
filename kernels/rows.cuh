// rows.cuh: the row walk shared by layernorm.cu, softmax.cu and cross_entropy.cu.
//
// A row of N contiguous elements is split into groups of W elements (W = 16 / sizeof(T) when every row start
// is 16-byte aligned and N % W == 0, so a group is one 128-bit access; else W = 1). A team of P threads (one
// warp, or one block) owns a row; thread r takes groups r, r + P, r + 2P, ... so each access instruction of a
// warp covers one contiguous span. The first K = MT_ROW_CACHE_GROUPS / (the team's CACHE_DIV, and the kernel's
// own divisor when it keeps several arrays) groups of each thread are kept in registers, so a row that fits
// (P K W elements) is read from memory once however many passes the kernel makes over it; groups beyond that
// are read again (from L1/L2, as the team just read them). Counting groups rather than bytes keeps the scalar
// path (misaligned rows) as light in registers as the 128-bit one: it caches 8 elements where that caches 32.
// A group holds its values in the arithmetic type acc_t<T> (float for the 16-bit types, converted on load and
// rounded on store), so a 16-bit group of 8 takes as many registers as two float groups: K is halved for them.
#ifndef MT_ROWS_CUH
#define MT_ROWS_CUH
#include "common.cuh"

// groups of one row a warp team's thread keeps in registers: 8 x 128-bit (32 float or 16 double registers)
#define MT_ROW_CACHE_GROUPS 8

// W elements of storage type T, held in its arithmetic type
template <typename T, int W> struct Group {
    acc_t<T> v[W];
};

// groups a thread keeps in registers: the budget of MT_ROW_CACHE_GROUPS float-or-double groups, in registers
template <typename T, int W, int DIV = 1> struct RowCfg {
    static constexpr int GROUPS = MT_ROW_CACHE_GROUPS * (int)sizeof(T) / (int)sizeof(acc_t<T>);
    static constexpr int K = GROUPS / DIV > 0 ? GROUPS / DIV : 1;
};

template <typename T, int W> __device__ __forceinline__ Group<T, W> gload(const T* p) {
    Group<T, W> g;
    if constexpr (W * sizeof(T) == 16) {
        Packed128<T> q = load128(p);
        #pragma unroll
        for (int i = 0; i < W; ++i) g.v[i] = mt_acc(q.v[i]);
    } else {
        #pragma unroll
        for (int i = 0; i < W; ++i) g.v[i] = mt_acc(p[i]);
    }
    return g;
}

template <typename T, int W> __device__ __forceinline__ void gstore(T* p, const Group<T, W>& g) {
    if constexpr (W * sizeof(T) == 16) {
        Packed128<T> q;
        #pragma unroll
        for (int i = 0; i < W; ++i) q.v[i] = mt_cast<T>(g.v[i]);
        store128(p, q);
    } else {
        #pragma unroll
        for (int i = 0; i < W; ++i) p[i] = mt_cast<T>(g.v[i]);
    }
}

// a group stored in its arithmetic type (float partial sums of a 16-bit row): 128-bit stores where T is that type
template <typename T, int W> __device__ __forceinline__ void gstore_acc(acc_t<T>* p, const Group<T, W>& g) {
    if constexpr (sizeof(T) == sizeof(acc_t<T>)) {
        gstore<T, W>(reinterpret_cast<T*>(p), g);
    } else {
        #pragma unroll
        for (int i = 0; i < W; ++i) p[i] = g.v[i];
    }
}

// a parameter vector (layer-norm weight, class weights) read as a group, or ones when absent
template <typename T, int W> __device__ __forceinline__ Group<T, W> gload_or_one(const T* p, bool present) {
    if (present) return gload<T, W>(p);
    Group<T, W> g;
    #pragma unroll
    for (int i = 0; i < W; ++i) g.v[i] = 1;
    return g;
}

// A warp per row: blockDim.x / 32 rows per block at a time, no block barrier inside the row loop.
struct WarpTeam {
    // a thread of this team caches MT_ROW_CACHE_GROUPS / CACHE_DIV groups
    static constexpr int CACHE_DIV = 1;
    static constexpr bool WHOLE_BLOCK = false;
    __device__ __forceinline__ int rank() const { return threadIdx.x % MT_WARP; }
    __device__ __forceinline__ int size() const { return MT_WARP; }
    __device__ __forceinline__ i64 first() const {
        return (i64)blockIdx.x * (blockDim.x / MT_WARP) + threadIdx.x / MT_WARP;
    }
    __device__ __forceinline__ i64 stride() const { return (i64)gridDim.x * (blockDim.x / MT_WARP); }
    template <typename T> __device__ __forceinline__ T sum(T v) const { return warp_sum(v); }
    template <typename T> __device__ __forceinline__ T max(T v) const { return warp_max(v); }
};

// A block per row: every thread of the block walks the same rows, so the barriers in the reductions are uniform.
// `scratch` is 32 elements of shared memory owned by the kernel.
template <typename T> struct BlockTeam {
    // half the registers of a warp team's thread: a block per row keeps enough warps per SM resident to have
    // many loads in flight, and a long row is spread over 8 warps' registers already
    static constexpr int CACHE_DIV = 2;
    static constexpr bool WHOLE_BLOCK = true;
    T* scratch;
    __device__ __forceinline__ int rank() const { return threadIdx.x; }
    __device__ __forceinline__ int size() const { return blockDim.x; }
    __device__ __forceinline__ i64 first() const { return blockIdx.x; }
    __device__ __forceinline__ i64 stride() const { return gridDim.x; }
    __device__ __forceinline__ T sum(T v) const { return block_reduce(v, SumOp(), (T)0, scratch); }
    __device__ __forceinline__ T max(T v) const { return block_reduce(v, MaxOp(), -mt_inf<T>(), scratch); }
};

#endif  // MT_ROWS_CUH
