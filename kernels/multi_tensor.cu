// multi_tensor.cu: list ("foreach") kernels over many tensors in one launch, through the cached tables of
// multi_tensor.cuh: gradient norms and clipping (nn.utils.clip_grad_norm_, torch._foreach_norm) and the
// optimizers' foreach lerp / addcmul / addcdiv.
//
// Kernels (T = float | double | __half | __nv_bfloat16; the 16-bit types compute in float, take their scalars in
// float, keep the norm partials in float and round each stored value once):
//   multi_norm_partial<T>   per chunk of every tensor (role 0), its partial: sum |x|^p (sum x^2 for p = 2, max |x|
//                           for p = inf) into `partial[chunk]`; one block per chunk, grid-stride over chunks
//   multi_norm_finish<T>    out[0] = the norm of all tensors together and, with per_tensor, out[1 + i] = the norm
//                           of tensor i, from the partials (a block per result)
//   multi_clip_scale<T>     x *= min(max_norm / (total[0] + 1e-6), 1) for every tensor, the coefficient computed
//                           from the norm in device memory, so clipping never waits for the host
//   foreach_ternary<T>      out = lerp(x, y, w) | x + alpha * y * z | x + alpha * y / z | clamp(x, -w, w), with one
//                           alpha for the list or one per tensor; roles x, y, z, out (out may be x: in place)
//   multi_unscale<T>        GradScaler's unscale: x *= inv_scale[0] in place for every tensor, and found_inf[0] = 1
//                           when any element was inf or NaN (torch._amp_foreach_non_finite_check_and_unscale_); both
//                           scalars stay in device memory, so checking gradients never waits for the host
//
// A clip_grad_norm_ is three launches whatever the number of tensors: partial, finish, scale. The norm
// partials accumulate in acc_t<T> (float32 for float32 and 16-bit gradients, as PyTorch's foreach norm does in its
// opmath type); the norms are stored in T.
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"
#include "multi_tensor.cuh"

// @enum norm kinds: the p of a p-norm, with its cheap special cases
enum NormKind { N_two, N_one, N_inf, N_p };

template <typename A> struct NormBatch {
    int kind;
    A p;
    A acc;
    template <int N> __device__ __forceinline__ void operator()(A (&r)[1][N], int k) {
        A a = mt_abs(r[0][k]);
        switch (kind) {
            case N_two: acc += a * a; break;
            case N_one: acc += a; break;
            case N_inf: acc = mt_max(acc, a); break;
            default: acc += mt_pow(a, p); break;
        }
    }
};

template <typename A> __device__ __forceinline__ A norm_reduce(int kind, A v, A* scratch) {
    return kind == N_inf ? block_reduce(v, MaxOp(), (A)0, scratch) : block_reduce(v, SumOp(), (A)0, scratch);
}

template <typename T>
__global__ void multi_norm_partial(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks, i64 chunk, int kind,
                                   acc_t<T> p, acc_t<T>* __restrict__ partial) {
    typedef acc_t<T> A;
    __shared__ A scratch[32];
    for (i64 ci = blockIdx.x; ci < n_chunks; ci += gridDim.x) {
        MtChunk<T> m = mt_chunk<T>(table, n_tensors, ci, chunk);
        NormBatch<A> op{kind, p, (A)0};
        mt_span<T, 1>(m, 1, 0, op);
        A v = norm_reduce(kind, op.acc, scratch);
        if (threadIdx.x == 0) partial[ci] = v;
    }
}

template <typename A> __device__ __forceinline__ A norm_root(int kind, A s, A p) {
    switch (kind) {
        case N_two: return mt_sqrt(s);
        case N_one:
        case N_inf: return s;
        default: return mt_pow(s, (A)1 / p);
    }
}

// Block b < n_tensors (per_tensor only) finishes tensor b, block n_results - 1 the total; grid-stride over them.
template <typename T>
__global__ void multi_norm_finish(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks, int kind, acc_t<T> p,
                                  const acc_t<T>* __restrict__ partial, T* __restrict__ out, int per_tensor) {
    typedef acc_t<T> A;
    __shared__ A scratch[32];
    i64 n_results = per_tensor ? n_tensors + 1 : 1;
    for (i64 b = blockIdx.x; b < n_results; b += gridDim.x) {
        bool total = b == n_results - 1;
        i64 lo = total ? 0 : table[b * MT_TENSOR_FIELDS + MT_FIELD_FIRST_CHUNK];
        i64 hi = (total || b + 1 == n_tensors) ? n_chunks : table[(b + 1) * MT_TENSOR_FIELDS + MT_FIELD_FIRST_CHUNK];
        A acc = 0;
        for (i64 c = lo + threadIdx.x; c < hi; c += blockDim.x)
            acc = kind == N_inf ? mt_max(acc, partial[c]) : acc + partial[c];
        acc = norm_reduce(kind, acc, scratch);
        if (threadIdx.x == 0) out[total ? 0 : 1 + b] = mt_cast<T>(norm_root(kind, acc, p));
    }
}

template <typename A> struct ScaleBatch {
    A coef;
    template <int N> __device__ __forceinline__ void operator()(A (&r)[1][N], int k) const { r[0][k] = r[0][k] * coef; }
};

template <typename T>
__global__ void multi_clip_scale(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks, i64 chunk,
                                 const T* __restrict__ total, double max_norm) {
    typedef acc_t<T> A;
    // PyTorch's clip_coef_clamped = clamp(max_norm / (total + 1e-6), max=1), a tensor of T (rounded to a 16-bit T
    // before it scales); a NaN total stays NaN
    A coef = (A)max_norm / (mt_acc(total[0]) + (A)1e-6);
    ScaleBatch<A> op{mt_acc(mt_cast<T>(coef > (A)1 ? (A)1 : coef))};
    for (i64 ci = blockIdx.x; ci < n_chunks; ci += gridDim.x) {
        MtChunk<T> m = mt_chunk<T>(table, n_tensors, ci, chunk);
        mt_span<T, 1>(m, 1, 1, op);
    }
}

// @enum foreach ternary ops (the arithmetic of elementwise.cu's ternary_forward, operation for operation)
enum ForeachOp { F_lerp, F_addcmul, F_addcdiv, F_clamp };

template <typename A> struct TernaryBatch {
    int op;
    A w;  // lerp's weight, the alpha of addcmul / addcdiv, or the bound of clamp
    template <int N> __device__ __forceinline__ void operator()(A (&r)[4][N], int k) const {
        A a = r[0][k];
        A y;
        if (op == F_clamp) {
            y = mt_min(mt_max(a, -w), w);
        } else if (op == F_lerp) {
            A b = r[1][k];
            y = mt_abs(w) < (A)0.5 ? a + w * (b - a) : b - (b - a) * ((A)1 - w);
        } else {
            A t = op == F_addcmul ? r[1][k] * r[2][k] : r[1][k] / r[2][k];
            if (w != (A)1) t = t * w;
            y = a + t;
        }
        r[3][k] = y;
    }
};

template <typename T>
__global__ void foreach_ternary(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks, i64 chunk, int op,
                                double w, const double* __restrict__ per_tensor) {
    typedef acc_t<T> A;
    TernaryBatch<A> f{op, (A)w};
    const int load = op == F_clamp ? 1 : (op == F_lerp ? 3 : 7);
    for (i64 ci = blockIdx.x; ci < n_chunks; ci += gridDim.x) {
        MtChunk<T> m = mt_chunk<T>(table, n_tensors, ci, chunk);
        if (per_tensor != nullptr) f.w = (A)per_tensor[m.ti];
        mt_span<T, 4>(m, load, 8, f);
    }
}

// ---------------------------------------------------------------------- GradScaler's unscale
template <typename A> struct UnscaleBatch {
    A inv;
    bool bad;
    template <int N> __device__ __forceinline__ void operator()(A (&r)[1][N], int k) {
        A v = r[0][k];
        if (!mt_isfinite(v)) bad = true;
        // PyTorch leaves the values untouched (NaN payloads included) when the scale is 1
        r[0][k] = inv == (A)1 ? v : v * inv;
    }
};

template <typename T>
__global__ void multi_unscale(const i64* __restrict__ table, i64 n_tensors, i64 n_chunks, i64 chunk,
                              float* __restrict__ found_inf, const float* __restrict__ inv_scale) {
    typedef acc_t<T> A;
    UnscaleBatch<A> op{(A)inv_scale[0], false};
    for (i64 ci = blockIdx.x; ci < n_chunks; ci += gridDim.x) {
        MtChunk<T> m = mt_chunk<T>(table, n_tensors, ci, chunk);
        mt_span<T, 1>(m, 1, 1, op);
    }
    // every thread that saw a non-finite value stores the same 1.0f: the race is benign, as in PyTorch's kernel
    if (op.bad) found_inf[0] = 1.0f;
}
