// multi_tensor.cuh: the walk shared by every multi-tensor kernel (optim.cu, multi_tensor.cu): one launch over a
// list of tensors of any sizes, through one device table that the launcher builds once per tensor list and
// caches (it changes only when an address or a size does).
//
// Table layout (int64):
//   per tensor, MT_TENSOR_FIELDS entries: MT_ROLES addresses (one per role: param, grad, states... or x, y, z,
//     out; a role a kernel does not use holds any valid address and is never read), the element count, the
//     "vec" bit (every used role 16-byte aligned, so 128-bit loads are safe), and the tensor's first chunk;
//   then per chunk two entries: the tensor index and the chunk's first element.
// Every tensor is cut into chunks of `chunk` elements (a multiple of MtIlp<T>, so a chunk of an aligned tensor
// starts aligned); block b walks chunks b, b + gridDim.x, ...
//
// mt_span runs a functor over one chunk with MT_ILP elements in flight per thread (8 for the 16-bit types: one
// 128-bit pack): every load of an iteration is issued before the first use (128-bit loads on aligned tensors),
// then the functor computes on registers in the arithmetic type acc_t<T> (float for the 16-bit types: each
// stored value is rounded once), then the stores. Consecutive threads touch consecutive 16-byte pieces.
#ifndef MT_MULTI_TENSOR_CUH
#define MT_MULTI_TENSOR_CUH

#define MT_ROLES 5
#define MT_TENSOR_FIELDS 8
#define MT_FIELD_SIZE 5
#define MT_FIELD_VEC 6
#define MT_FIELD_FIRST_CHUNK 7
#define MT_ILP 4  // elements in flight per thread for float and double; the launcher's chunks are multiples of it

// elements in flight per thread for T: at least MT_ILP, and a whole 128-bit pack (8 halves)
template <typename T> struct MtIlp { static constexpr int value = 16 / (int)sizeof(T) > MT_ILP ? 16 / (int)sizeof(T) : MT_ILP; };

template <typename T> __device__ __forceinline__ T* mt_role(const i64* __restrict__ table, i64 ti, int role) {
    return reinterpret_cast<T*>(static_cast<u64>(table[ti * MT_TENSOR_FIELDS + role]));
}

// One chunk: the tensor's role addresses and the element range [start, stop).
template <typename T> struct MtChunk {
    T* ptr[MT_ROLES];
    i64 ti, start, stop;
    bool vec;
};

template <typename T>
__device__ __forceinline__ MtChunk<T> mt_chunk(const i64* __restrict__ table, i64 n_tensors, i64 c, i64 chunk) {
    MtChunk<T> m;
    const i64* ct = table + n_tensors * MT_TENSOR_FIELDS + 2 * c;
    m.ti = ct[0];
    m.start = ct[1];
    i64 size = table[m.ti * MT_TENSOR_FIELDS + MT_FIELD_SIZE];
    m.stop = m.start + chunk < size ? m.start + chunk : size;
    m.vec = table[m.ti * MT_TENSOR_FIELDS + MT_FIELD_VEC] != 0;
    #pragma unroll
    for (int r = 0; r < MT_ROLES; ++r) m.ptr[r] = mt_role<T>(table, m.ti, r);
    return m;
}

// N consecutive elements from 16-byte aligned `src` into registers of the arithmetic type (one 128-bit load for
// 4 floats or 8 halves, two for 4 doubles)
template <typename T, int N> __device__ __forceinline__ void mt_load_vec(acc_t<T> (&r)[N], const T* src) {
    constexpr int P = Packed128<T>::size;
    static_assert(N % P == 0, "a batch is whole 128-bit packs");
    #pragma unroll
    for (int q = 0; q < N / P; ++q) {
        Packed128<T> x = load128(src + q * P);
        #pragma unroll
        for (int e = 0; e < P; ++e) r[q * P + e] = mt_acc(x.v[e]);
    }
}
template <typename T, int N> __device__ __forceinline__ void mt_store_vec(T* dst, const acc_t<T> (&r)[N]) {
    constexpr int P = Packed128<T>::size;
    #pragma unroll
    for (int q = 0; q < N / P; ++q) {
        Packed128<T> x;
        #pragma unroll
        for (int e = 0; e < P; ++e) x.v[e] = mt_cast<T>(r[q * P + e]);
        store128(dst + q * P, x);
    }
}

// Run f(r, k) for every element of the chunk, where r[role][k] holds element k of this thread's batch for each
// role in `load` (a bit mask of roles), in acc_t<T>, and afterwards store the roles in `store` (rounded to T).
// `R` is the number of roles the kernel uses (at most MT_ROLES); f takes `acc_t<T> (&)[R][MtIlp<T>::value]`.
template <typename T, int R, class F>
__device__ __forceinline__ void mt_span(const MtChunk<T>& m, int load, int store, F& f) {
    constexpr int N = MtIlp<T>::value;
    acc_t<T> r[R][N];
    i64 i = m.start;
    if (m.vec) {
        i64 vstop = m.start + (m.stop - m.start) / N * N;
        for (i64 j = m.start + (i64)threadIdx.x * N; j < vstop; j += (i64)blockDim.x * N) {
            #pragma unroll
            for (int q = 0; q < R; ++q)
                if (load & (1 << q)) mt_load_vec<T, N>(r[q], m.ptr[q] + j);
            #pragma unroll
            for (int k = 0; k < N; ++k) f(r, k);
            #pragma unroll
            for (int q = 0; q < R; ++q)
                if (store & (1 << q)) mt_store_vec<T, N>(m.ptr[q] + j, r[q]);
        }
        i = vstop;  // at most N - 1 elements are left: the end of the tensor
    }
    // misaligned tensors and the last few elements of an aligned one: one element at a time (a misaligned
    // tensor is the exception, a view; batching it would double the kernel's registers for the common case)
    for (i64 j = i + threadIdx.x; j < m.stop; j += blockDim.x) {
        #pragma unroll
        for (int q = 0; q < R; ++q)
            if (load & (1 << q)) r[q][0] = mt_acc(m.ptr[q][j]);
        f(r, 0);
        #pragma unroll
        for (int q = 0; q < R; ++q)
            if (store & (1 << q)) m.ptr[q][j] = mt_cast<T>(r[q][0]);
    }
}

#endif  // MT_MULTI_TENSOR_CUH
