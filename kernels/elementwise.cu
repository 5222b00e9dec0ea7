// elementwise.cu: unary, binary and ternary maps for float, double, half and bfloat16.
//
// Kernels (templates over the storage type T = float | double | __half | __nv_bfloat16, exported through name
// expressions such as "unary_forward<__half>"; the 16-bit types load into float, compute there and round once
// on the store, and their 128-bit packs carry 8 elements; scalar arguments come in the arithmetic type
// acc_t<T>, so a Python scalar keeps its float32 value as in PyTorch):
//   unary_forward            y = f(x), contiguous; 128-bit packs when every pointer is 16-byte aligned
//   unary_strided_forward    y = f(x) over strided / broadcast operands (up to 8 dims)
//   unary_rows_forward       y = f(x) over rows whose last dim is contiguous (sliced or permuted views), as
//                            binary_rows_forward
//   predicate_forward        bool y = p(x) (isnan, isinf, ...), contiguous (nd = 0) or strided
//   binary_forward           y = f(a, b), contiguous, either side may be a scalar argument, packs when aligned
//   binary_strided_forward   y = f(a, b), strided / broadcast
//   binary_rows_forward      y = f(a, b) over rows whose last dim is contiguous (stride 1) in the output and in
//                            each operand or constant along the row (stride 0): bias adds (rows, C) + (C,),
//                            (rows, C) * (rows, 1), masks (B*H, T*T) + (T*T,); 128-bit packs when aligned,
//                            the row's offsets computed once per pack
//   compare_forward          bool y = a <op> b (comparisons and logical ops), contiguous or strided
//   ternary_forward          y = f(a, b, c): clamp, lerp, addcmul, addcdiv; contiguous or strided
//   where_forward            y = cond ? a : b, contiguous or strided
//
// An operation is an op code (the enums below) passed to the kernel, not a template parameter: one compile
// per file instead of one instantiation per op and dtype and path (hundreds), and the switch is uniform across
// the grid (every thread takes the same branch), so it costs no divergence. The Python launcher
// (minitorch_gpu/backends/cuda/launch.py) reads the enums from this file, so the names here are the primitive names.
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"

// @enum unary: the backend's unary primitive names (softplus takes p0 = beta, p1 = threshold)
enum UnaryOp {
    U_neg, U_abs, U_exp, U_exp2, U_log, U_log2, U_log10, U_log1p, U_expm1, U_sqrt, U_rsqrt, U_sin, U_cos, U_tan,
    U_tanh, U_floor, U_ceil, U_trunc, U_rint, U_frac, U_reciprocal, U_square, U_asin, U_acos, U_atan, U_sinh,
    U_cosh, U_asinh, U_acosh, U_atanh, U_deg2rad, U_rad2deg, U_sign, U_relu, U_sigmoid, U_erf, U_gelu,
    U_gelu_tanh, U_softplus, U_silu, U_lgamma, U_digamma
};
// @enum predicate: bool results of a float input
enum PredicateOp { P_isnan, P_isinf, P_isfinite, P_signbit, P_logical_not };
// @enum binary
enum BinaryOp {
    B_add, B_sub, B_mul, B_div, B_maximum, B_minimum, B_fmax, B_fmin, B_pow, B_atan2, B_copysign, B_hypot,
    B_logaddexp, B_logaddexp2, B_fmod, B_remainder, B_floor_divide, B_trunc_divide, B_gelu_backward, B_gelu_tanh_backward,
    B_silu_backward, B_sigmoid_backward, B_tanh_backward
};
// @enum compare
enum CompareOp { C_eq, C_ne, C_lt, C_le, C_gt, C_ge, C_logical_and, C_logical_or, C_logical_xor };
// @enum ternary: clamp(x, lo, hi); lerp(a, b, w); addcmul / addcdiv: a + alpha * b (* or /) c
enum TernaryOp { T_clamp, T_lerp, T_addcmul, T_addcdiv };

#define MT_SQRT1_2 0.7071067811865476
#define MT_INV_SQRT_2PI 0.3989422804014327
#define MT_GELU_BETA 0.7978845608028654
#define MT_GELU_KAPPA 0.044715
#define MT_PI 3.141592653589793

// ------------------------------------------------------------------------------------------ device functors
template <typename T> __device__ __forceinline__ T sigmoid_of(T x) {
    // the exponent is never positive, so nothing overflows and tiny results keep their relative accuracy
    if (x >= (T)0) return (T)1 / ((T)1 + mt_exp(-x));
    T e = mt_exp(x);
    return e / ((T)1 + e);
}

// PyTorch's calc_digamma: reflection below 0, the recurrence up to 10, then the asymptotic series (Cephes)
template <typename T> __device__ __forceinline__ T digamma_of(T x) {
    if (x == (T)0) return mt_copysign(mt_inf<T>(), -x);
    T result = (T)0;
    if (x < (T)0) {
        if (x == mt_trunc(x)) return mt_inf<T>() - mt_inf<T>();  // poles (and -inf): NaN
        // pi / tan(pi x) with x reduced by its integer part: tan has period pi
        T r = x - mt_trunc(x);
        result = -(T)MT_PI / mt_tan((T)MT_PI * r);
        x = (T)1 - x;
    }
    while (x < (T)10) { result -= (T)1 / x; x += (T)1; }
    if (x == (T)10) return result + (T)2.25175258906672110764;
    T y = (T)0;
    if (x < (T)1.0e17) {
        T z = (T)1 / (x * x);
        y = z * ((((((z * (T)8.33333333333333333333E-2 - (T)2.10927960927960927961E-2) * z
                     + (T)7.57575757575757575758E-3) * z - (T)4.16666666666666666667E-3) * z
                   + (T)3.96825396825396825397E-3) * z - (T)8.33333333333333333333E-3) * z
                 + (T)8.33333333333333333333E-2);
    }
    return result + mt_log(x) - (T)0.5 / x - y;
}

template <typename T> struct UnaryF {
    int op;
    T p0, p1;
    __device__ __forceinline__ T operator()(T x) const {
        switch (op) {
            case U_neg: return -x;
            case U_abs: return mt_abs(x);
            case U_exp: return mt_exp(x);
            case U_exp2: return mt_exp2(x);
            case U_log: return mt_log(x);
            case U_log2: return mt_log2(x);
            case U_log10: return mt_log10(x);
            case U_log1p: return mt_log1p(x);
            case U_expm1: return mt_expm1(x);
            case U_sqrt: return mt_sqrt(x);
            case U_rsqrt: return (T)1 / mt_sqrt(x);
            case U_sin: return mt_sin(x);
            case U_cos: return mt_cos(x);
            case U_tan: return mt_tan(x);
            case U_tanh: return mt_tanh(x);
            case U_floor: return mt_floor(x);
            case U_ceil: return mt_ceil(x);
            case U_trunc: return mt_trunc(x);
            case U_rint: return mt_rint(x);
            case U_frac: return x - mt_trunc(x);
            case U_reciprocal: return (T)1 / x;
            case U_square: return x * x;
            case U_asin: return mt_asin(x);
            case U_acos: return mt_acos(x);
            case U_atan: return mt_atan(x);
            case U_sinh: return mt_sinh(x);
            case U_cosh: return mt_cosh(x);
            case U_asinh: return mt_asinh(x);
            case U_acosh: return mt_acosh(x);
            case U_atanh: return mt_atanh(x);
            case U_deg2rad: return x * (T)(MT_PI / 180.0);
            case U_rad2deg: return x * (T)(180.0 / MT_PI);
            // PyTorch's sign is 0 for NaN
            case U_sign: return (T)(x > (T)0) - (T)(x < (T)0);
            // NaN stays NaN, like maximum(x, 0)
            case U_relu: return x < (T)0 ? (T)0 : x;
            case U_sigmoid: return sigmoid_of(x);
            case U_erf: return mt_erf(x);
            case U_gelu: return ((mt_erf(x * (T)MT_SQRT1_2) + (T)1) * x) * (T)0.5;
            case U_gelu_tanh: {
                T inner = (x * x * (T)MT_GELU_KAPPA + (T)1) * x * (T)MT_GELU_BETA;
                return ((mt_tanh(inner) + (T)1) * x) * (T)0.5;
            }
            case U_softplus: {
                // p0 = beta, p1 = threshold: x itself where beta x > threshold (PyTorch's linear region)
                T xb = x * p0;
                if (xb > p1) return x;
                return mt_log1p(mt_exp(xb)) / p0;
            }
            case U_silu: return x * sigmoid_of(x);
            case U_lgamma: return mt_lgamma(x);
            case U_digamma: return digamma_of(x);
        }
        return x;
    }
};

template <typename T> struct PredicateF {
    int op;
    __device__ __forceinline__ u8 operator()(T x) const {
        switch (op) {
            case P_isnan: return mt_isnan(x);
            case P_isinf: return mt_isinf(x);
            case P_isfinite: return mt_isfinite(x);
            case P_signbit: return mt_signbit(x);
            case P_logical_not: return x == (T)0;
        }
        return 0;
    }
};

// NumPy's float floor division and remainder (npy_divmod), so results agree to the last bit
template <typename T> __device__ __forceinline__ T floor_divide_of(T a, T b) {
    if (b == (T)0) return a / b;
    T mod = mt_fmod(a, b);
    T div = (a - mod) / b;
    if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) div -= (T)1;
    if (div == (T)0) return mt_copysign((T)0, a / b);
    T fl = mt_floor(div);
    if (div - fl > (T)0.5) fl += (T)1;
    return fl;
}
template <typename T> __device__ __forceinline__ T remainder_of(T a, T b) {
    if (b == (T)0) return mt_fmod(a, b);
    T mod = mt_fmod(a, b);
    // a zero keeps fmod's sign (the dividend's), as PyTorch's
    if (mod != (T)0 && (b < (T)0) != (mod < (T)0)) mod += b;
    return mod;
}
template <typename T> __device__ __forceinline__ T logaddexp_of(T a, T b) {
    if (a == b) return a + (T)0.6931471805599453;  // equal infinities must not give inf - inf
    T d = a - b;
    if (d > (T)0) return a + mt_log1p(mt_exp(-d));
    if (d <= (T)0) return b + mt_log1p(mt_exp(d));
    return d;  // NaN
}

// log2(2^a + 2^b), with logaddexp's care for equal infinities
template <typename T> __device__ __forceinline__ T logaddexp2_of(T a, T b) {
    if (a == b) return a + (T)1;
    T d = a - b;
    if (d > (T)0) return a + mt_log1p(mt_exp2(-d)) * (T)1.4426950408889634;
    if (d <= (T)0) return b + mt_log1p(mt_exp2(d)) * (T)1.4426950408889634;
    return d;  // NaN
}

template <typename T> struct BinaryF {
    int op;
    __device__ __forceinline__ T operator()(T a, T b) const {
        switch (op) {
            case B_add: return a + b;
            case B_sub: return a - b;
            case B_mul: return a * b;
            case B_div: return a / b;
            case B_maximum: return mt_max(a, b);
            case B_minimum: return mt_min(a, b);
            case B_fmax: return mt_fmax(a, b);
            case B_fmin: return mt_fmin(a, b);
            case B_pow: return mt_pow(a, b);
            case B_atan2: return mt_atan2(a, b);
            case B_copysign: return mt_copysign(a, b);
            case B_hypot: return mt_hypot(a, b);
            case B_logaddexp: return logaddexp_of(a, b);
            case B_logaddexp2: return logaddexp2_of(a, b);
            case B_fmod: return mt_fmod(a, b);
            case B_remainder: return remainder_of(a, b);
            case B_floor_divide: return floor_divide_of(a, b);
            case B_trunc_divide: return mt_trunc(a / b);
            // a = incoming gradient, b = the forward input
            case B_gelu_backward: {
                T cdf = (mt_erf(b * (T)MT_SQRT1_2) + (T)1) * (T)0.5;
                T pdf = mt_exp(b * b * (T)-0.5) * (T)MT_INV_SQRT_2PI * b;
                return (cdf + pdf) * a;
            }
            case B_gelu_tanh_backward: {
                T x_sq = b * b;
                T th = mt_tanh((x_sq * (T)MT_GELU_KAPPA + (T)1) * b * (T)MT_GELU_BETA);
                T left = (th + (T)1) * (T)0.5;
                T right = ((T)1 - th * th) * (x_sq * (T)(3 * MT_GELU_KAPPA) + (T)1) * b * (T)(0.5 * MT_GELU_BETA);
                return (left + right) * a;
            }
            case B_silu_backward: {
                T s = sigmoid_of(b);
                return a * s * ((T)1 + b * ((T)1 - s));
            }
            // b = the forward output
            case B_sigmoid_backward: return a * (b * ((T)1 - b));
            case B_tanh_backward: return a * ((T)1 - b * b);
        }
        return a;
    }
};

template <typename T> struct CompareF {
    int op;
    __device__ __forceinline__ u8 operator()(T a, T b) const {
        switch (op) {
            case C_eq: return a == b;
            case C_ne: return a != b;
            case C_lt: return a < b;
            case C_le: return a <= b;
            case C_gt: return a > b;
            case C_ge: return a >= b;
            case C_logical_and: return (a != (T)0) && (b != (T)0);
            case C_logical_or: return (a != (T)0) || (b != (T)0);
            case C_logical_xor: return (a != (T)0) != (b != (T)0);
        }
        return 0;
    }
};

template <typename T> struct TernaryF {
    int op;
    T alpha;
    __device__ __forceinline__ T operator()(T a, T b, T c) const {
        switch (op) {
            // min(max(x, lo), hi) with NaN from any side, and lo > hi giving hi (PyTorch)
            case T_clamp: return mt_min(mt_max(a, b), c);
            // PyTorch's two-sided formula: exact at both ends
            case T_lerp: return mt_abs(c) < (T)0.5 ? a + c * (b - a) : b - (b - a) * ((T)1 - c);
            case T_addcmul: { T t = b * c; if (alpha != (T)1) t = t * alpha; return a + t; }
            case T_addcdiv: { T t = b / c; if (alpha != (T)1) t = t * alpha; return a + t; }
        }
        return a;
    }
};

// operand modes: bit k set means operand k is the scalar argument, not the array; MODE_VEC asks for 128-bit
// packs (the launcher sets it only when every array pointer is 16-byte aligned and the operands contiguous)
#define MODE_SCALAR(k) (1 << (k))
#define MODE_VEC (1 << 4)

// ------------------------------------------------------------------------------------------ unary
template <typename T>
__global__ void unary_forward(i64 n, const T* x, T* y, int op, acc_t<T> p0, acc_t<T> p1, int vec) {
    UnaryF<acc_t<T>> f{op, p0, p1};
    i64 done = 0;
    if (vec) {
        constexpr int S = Packed128<T>::size;
        i64 packs = n / S;
        MT_GRID_STRIDE(p, packs) {
            Packed128<T> a = load128(x + p * S);
            Packed128<T> r;
            #pragma unroll
            for (int k = 0; k < S; ++k) r.v[k] = mt_cast<T>(f(mt_acc(a.v[k])));
            store128(y + p * S, r);
        }
        done = packs * S;
    }
    MT_GRID_STRIDE_FROM(i, done, n) y[i] = mt_cast<T>(f(mt_acc(x[i])));
}

template <typename T>
__global__ void unary_strided_forward(i64 n, int nd, const i64* __restrict__ meta, const T* x, T* y, int op,
                                      acc_t<T> p0, acc_t<T> p1, int mode) {
    UnaryF<acc_t<T>> f{op, p0, p1};
    MT_GRID_STRIDE(i, n) {
        i64 off[2];
        mt_offsets<2>(i, n, nd, meta, off);
        y[off[0]] = mt_cast<T>(f(mt_acc(x[off[1]])));
    }
}

// the row walk of binary_rows_forward (see there) for one operand
template <typename T>
__global__ void __launch_bounds__(256, 5) unary_rows_forward(i64 rows, i64 cols, int nd, const i64* __restrict__ meta,
                                                             const T* x, T* y, int op, acc_t<T> p0, acc_t<T> p1,
                                                             int mode, u32 cpr_magic, u32 cpr_shift) {
    constexpr int S = Packed128<T>::size;
    using A = acc_t<T>;
    UnaryF<A> f{op, p0, p1};
    bool vec = mode & MODE_VEC;
    bool x_row = meta[3 * nd - 1] == 0;  // an expanded operand: one value per row
    int w = vec ? S : 1;
    u32 cpr = (u32)((cols + w - 1) / w);
    u32 total = (u32)rows * cpr;
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < total; p += gridDim.x * blockDim.x) {
        u32 row = mt_fastdiv(p, cpr_magic, cpr_shift);
        i64 c = (i64)((p - row * cpr) * (u32)w);
        i64 off[2];
        mt_offsets_dims<2, true>(row, nd - 1, nd, meta, off);
        T* yr = y + off[0] + c;
        const T* xr = x + off[1] + (x_row ? 0 : c);
        if (vec && c + S <= cols) {
            Packed128<T> px, r;
            A x0 = x_row ? mt_acc(*xr) : (A)0;
            if (!x_row) px = load128(xr);
            #pragma unroll
            for (int k = 0; k < S; ++k) r.v[k] = mt_cast<T>(f(x_row ? x0 : mt_acc(px.v[k])));
            store128(yr, r);
        } else {
            int m = cols - c < w ? (int)(cols - c) : w;
            for (int k = 0; k < m; ++k) yr[k] = mt_cast<T>(f(mt_acc(xr[x_row ? 0 : k])));
        }
    }
}

template <typename T>
__global__ void predicate_forward(i64 n, int nd, const i64* __restrict__ meta, const T* x, u8* y, int op) {
    PredicateF<acc_t<T>> f{op};
    if (nd == 0) {
        MT_GRID_STRIDE(i, n) y[i] = f(mt_acc(x[i]));
        return;
    }
    MT_GRID_STRIDE(i, n) {
        i64 off[2];
        mt_offsets<2>(i, n, nd, meta, off);
        y[off[0]] = f(mt_acc(x[off[1]]));
    }
}

// ------------------------------------------------------------------------------------------ binary
template <typename T>
__global__ void binary_forward(i64 n, const T* a, const T* b, T* y, int op,
                               acc_t<T> sa, acc_t<T> sb, int mode) {
    BinaryF<acc_t<T>> f{op};
    bool a_s = mode & MODE_SCALAR(0), b_s = mode & MODE_SCALAR(1);
    i64 done = 0;
    if (mode & MODE_VEC) {
        constexpr int S = Packed128<T>::size;
        i64 packs = n / S;
        MT_GRID_STRIDE(p, packs) {
            Packed128<T> pa, pb, r;
            if (!a_s) pa = load128(a + p * S);
            if (!b_s) pb = load128(b + p * S);
            #pragma unroll
            for (int k = 0; k < S; ++k) r.v[k] = mt_cast<T>(f(a_s ? sa : mt_acc(pa.v[k]), b_s ? sb : mt_acc(pb.v[k])));
            store128(y + p * S, r);
        }
        done = packs * S;
    }
    MT_GRID_STRIDE_FROM(i, done, n) y[i] = mt_cast<T>(f(a_s ? sa : mt_acc(a[i]), b_s ? sb : mt_acc(b[i])));
}

template <typename T>
__global__ void binary_strided_forward(i64 n, int nd, const i64* __restrict__ meta, const T* a, const T* b, T* y,
                                       int op, acc_t<T> sa, acc_t<T> sb, int mode) {
    BinaryF<acc_t<T>> f{op};
    bool a_s = mode & MODE_SCALAR(0), b_s = mode & MODE_SCALAR(1);
    MT_GRID_STRIDE(i, n) {
        i64 off[3];
        mt_offsets<3>(i, n, nd, meta, off);
        y[off[0]] = mt_cast<T>(f(a_s ? sa : mt_acc(a[off[1]]), b_s ? sb : mt_acc(b[off[2]])));
    }
}

// `meta` describes the collapsed output (nd >= 2 dims, the last one contiguous in the output); the launcher
// checked that each array operand's last stride is 0 or 1, and that every index fits in 31 bits (so the
// division by the packs per row, `cpr_magic` and `cpr_shift`, and the row's offsets use 32-bit fast division).
// A work item is one pack of S elements of one row, or one element without MODE_VEC.
// NOTE: the launch bounds (256-thread blocks, as the launcher's THREADS) cap registers at 48: the op switch
// unrolled over a pack took 53-64 registers, which left 3-4 blocks per SM; a streaming bias add wants as many
// 16-byte loads in flight as it can get, and 5 blocks fit without spilling (6 spill).
template <typename T>
__global__ void __launch_bounds__(256, 5) binary_rows_forward(i64 rows, i64 cols, int nd, const i64* __restrict__ meta, const T* a,
                                    const T* b, T* y, int op, acc_t<T> sa, acc_t<T> sb, int mode, u32 cpr_magic,
                                    u32 cpr_shift) {
    constexpr int S = Packed128<T>::size;
    using A = acc_t<T>;
    BinaryF<A> f{op};
    bool a_s = mode & MODE_SCALAR(0), b_s = mode & MODE_SCALAR(1);
    bool vec = mode & MODE_VEC;
    // along the row an operand is contiguous (its last stride is 1) or one value per row (0)
    bool a_row = !a_s && meta[3 * nd - 1] == 0, b_row = !b_s && meta[4 * nd - 1] == 0;
    int w = vec ? S : 1;
    u32 cpr = (u32)((cols + w - 1) / w);
    u32 total = (u32)rows * cpr;
    for (u32 p = blockIdx.x * blockDim.x + threadIdx.x; p < total; p += gridDim.x * blockDim.x) {
        u32 row = mt_fastdiv(p, cpr_magic, cpr_shift);
        i64 c = (i64)((p - row * cpr) * (u32)w);
        i64 off[3];
        mt_offsets_dims<3, true>(row, nd - 1, nd, meta, off);
        T* yr = y + off[0] + c;
        const T* ar = a + off[1] + (a_row ? 0 : c);
        const T* br = b + off[2] + (b_row ? 0 : c);
        // a row-constant operand is read once per pack, a contiguous one only as the pack (no extra load)
        A a0 = a_s ? sa : (a_row ? mt_acc(*ar) : (A)0), b0 = b_s ? sb : (b_row ? mt_acc(*br) : (A)0);
        if (vec && c + S <= cols) {
            Packed128<T> pa, pb, r;
            if (!a_s && !a_row) pa = load128(ar);
            if (!b_s && !b_row) pb = load128(br);
            #pragma unroll
            for (int k = 0; k < S; ++k)
                r.v[k] = mt_cast<T>(f(a_s || a_row ? a0 : mt_acc(pa.v[k]), b_s || b_row ? b0 : mt_acc(pb.v[k])));
            store128(yr, r);
        } else {
            int m = cols - c < w ? (int)(cols - c) : w;
            for (int k = 0; k < m; ++k)
                yr[k] = mt_cast<T>(f(a_s || a_row ? a0 : mt_acc(ar[k]), b_s || b_row ? b0 : mt_acc(br[k])));
        }
    }
}

template <typename T>
__global__ void compare_forward(i64 n, int nd, const i64* __restrict__ meta, const T* a, const T* b, u8* y, int op,
                                acc_t<T> sa, acc_t<T> sb, int mode) {
    CompareF<acc_t<T>> f{op};
    bool a_s = mode & MODE_SCALAR(0), b_s = mode & MODE_SCALAR(1);
    if (nd == 0) {
        MT_GRID_STRIDE(i, n) y[i] = f(a_s ? sa : mt_acc(a[i]), b_s ? sb : mt_acc(b[i]));
        return;
    }
    MT_GRID_STRIDE(i, n) {
        i64 off[3];
        mt_offsets<3>(i, n, nd, meta, off);
        y[off[0]] = f(a_s ? sa : mt_acc(a[off[1]]), b_s ? sb : mt_acc(b[off[2]]));
    }
}

// ------------------------------------------------------------------------------------------ ternary
template <typename T>
__global__ void ternary_forward(i64 n, int nd, const i64* __restrict__ meta, const T* a, const T* b, const T* c,
                                T* y, int op, acc_t<T> sa, acc_t<T> sb, acc_t<T> sc, acc_t<T> alpha, int mode) {
    TernaryF<acc_t<T>> f{op, alpha};
    bool a_s = mode & MODE_SCALAR(0), b_s = mode & MODE_SCALAR(1), c_s = mode & MODE_SCALAR(2);
    if (nd == 0) {
        MT_GRID_STRIDE(i, n)
            y[i] = mt_cast<T>(f(a_s ? sa : mt_acc(a[i]), b_s ? sb : mt_acc(b[i]), c_s ? sc : mt_acc(c[i])));
        return;
    }
    MT_GRID_STRIDE(i, n) {
        i64 off[4];
        mt_offsets<4>(i, n, nd, meta, off);
        y[off[0]] = mt_cast<T>(f(a_s ? sa : mt_acc(a[off[1]]), b_s ? sb : mt_acc(b[off[2]]),
                                 c_s ? sc : mt_acc(c[off[3]])));
    }
}

template <typename T>
__global__ void where_forward(i64 n, int nd, const i64* __restrict__ meta, const u8* cond, const T* a, const T* b,
                              T* y, acc_t<T> sa_acc, acc_t<T> sb_acc, int mode) {
    // mode bit 1: a is the scalar, bit 2: b is (bit 0 would be the condition, which is always an array)
    bool a_s = mode & MODE_SCALAR(1), b_s = mode & MODE_SCALAR(2);
    T sa = mt_cast<T>(sa_acc), sb = mt_cast<T>(sb_acc);  // a selected scalar is stored in the result's type
    if (nd == 0) {
        MT_GRID_STRIDE(i, n) y[i] = cond[i] ? (a_s ? sa : a[i]) : (b_s ? sb : b[i]);
        return;
    }
    MT_GRID_STRIDE(i, n) {
        i64 off[4];
        mt_offsets<4>(i, n, nd, meta, off);
        y[off[0]] = cond[off[1]] ? (a_s ? sa : a[off[2]]) : (b_s ? sb : b[off[3]]);
    }
}
