// elementwise_cpu.cpp: elementwise maps for the CPU backend where NumPy needs several passes over memory (gelu and
// its gradient, sigmoid, silu, erf, the activation gradients, and in float32 erfinv, lgamma and digamma, whose
// reference bodies run tens of passes) or runs a slow scalar libm loop (fmod, remainder, floor_divide, logaddexp,
// hypot, sign), or takes two passes where one does (frac, relu's gradient); and the plain arithmetic and relu, which
// NumPy runs on one thread, for long arrays when the backend has more.
//
// Entry points (C ABI, called through ctypes by backends/_elementwise_native.py, which compiles this file with the
// host C++ compiler on first use and caches the library):
//   mt_ew_unary(op, dtype, n, x, y)                      y[i] = op(x[i])                   -> 0, or < 0 on bad input
//   mt_ew_binary(op, dtype, n, a, a_step, b, b_step, y)  y[i] = op(a[i * a_step], b[i * b_step]); a step of 0
//                                                        broadcasts a scalar (at most one of the two)
//   mt_ew_unary_pieces(op, dtype, n, x, y, piece, next)
//   mt_ew_binary_pieces(op, dtype, n, a, a_step, b, b_step, y, piece, next)
//                                                        the same over pieces [k piece, (k + 1) piece) taken from
//                                                        the counter `next` (starting at 0) by every thread of
//                                                        one call; piece a multiple of 16, so that every piece
//                                                        but the last is whole vectors, as in one call. Their
//                                                        twins `<entry>_parallel` (pool_cpu.h's MT_PARALLEL: a
//                                                        thread count first) run them on the worker pool
//   mt_ew_supports(arity, op, dtype)                     -> 1 when the op is compiled for the dtype
//   mt_lstm_cell_forward(dtype, B, H, gi, gh, c, h_out, c_out)
//   mt_lstm_cell_backward(dtype, B, H, dh, dc, gi, gh, c, d_gates, dc_prev)
//                                                        one LSTM step's pointwise half and its gradient (the
//                                                        lstm_cell_* primitives of backends/_rnn.py); dh, dc may
//                                                        be null (a zero gradient)
//     op      a UnaryOp / BinaryOp member (arity 1 / 2); Python reads the enums from this file
//     dtype   0 float32, 1 float64
//     arrays  contiguous; y may be one of the inputs (each element is read before it is written)
//
// The NumPy bodies of backends/_elementwise.py are the reference, and tests compare the two. Where this file repeats
// the reference's arithmetic step by step (erf, gelu and the division family in float32, sign), it is compiled with
// floating-point contraction off and the results are bit-identical; where it calls libm (exp, log1p, erf), the
// vector variants of glibc's libmvec (MT_LIBMVEC, when the build finds them) are within a few ulp of NumPy's.
//
// v1: every op in one pass; the LSTM cell in one pass over its gates. fmod and its family compute float32 in double, exact while the quotient is below 2^24
// (see fmod_f32), the rare larger quotients finished by libm's fmodf in a second loop.
#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu_vecmath.h"
#include "pool_cpu.h"

// erfinv, lgamma and digamma are float32 only: float64 keeps the reference bodies, whose libm calls this file
// could match only to an ulp of terms that cancel (lgamma, digamma near their zeros). relu and the arithmetic
// (add .. div, relu_backward) are there for the pool's threads: one thread of NumPy is as fast
enum UnaryOp { U_erf, U_gelu, U_gelu_tanh, U_sigmoid, U_silu, U_sign, U_frac, U_erfinv, U_lgamma, U_digamma, U_relu,
               U_erfc, U_exp2, U_rsqrt, U_reciprocal, U_cube };
enum BinaryOp {
    B_gelu_backward, B_gelu_tanh_backward, B_sigmoid_backward, B_tanh_backward, B_logaddexp, B_logaddexp2,
    B_hypot, B_fmod, B_remainder, B_floor_divide, B_add, B_sub, B_mul, B_div, B_relu_backward, B_copysign
};

namespace {

using idx = int64_t;

using namespace mt_vecmath;

template <typename T> inline T clip(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }  // NaN stays
template <typename T> inline T min_nan(T a, T b) { return (b < a) ? b : a; }  // NumPy's minimum for a NaN in a

// ------------------------------------------------------------------------------------------ erf and gelu
// float32: the rational minimax fit of _elementwise.py (_ERF32_PS / _ERF32_QS: coefficients in s = x^2, halved for
// erf / 2), evaluated in the order of its Horner loop, so bit-identical to the NumPy body. Scaling by powers of two
// is exact, so rounding the literal first and scaling after gives NumPy's constants.
constexpr float kErfP[6] = {1.1283791392975586f, 3.0967330082891698f / 16, 13.594073783468733f / 256,
                            15.906318686540226f / 4096, 18.64938948096302f / 65536, 2.0832915688465734f / 1048576};
constexpr float kErfPHalf[6] = {kErfP[0] / 2, kErfP[1] / 2, kErfP[2] / 2, kErfP[3] / 2, kErfP[4] / 2, kErfP[5] / 2};
constexpr float kErfQ[6] = {1.0f, 8.077729057911256f / 16, 29.52968085616319f / 256, 62.28917803204715f / 4096,
                            77.69819610218812f / 65536, 39.237956613183236f / 1048576};
constexpr double kSqrt1_2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;
constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

inline float horner6(float s, const float* c) {
    float r = s * c[5];
    r = r + c[4];
    for (int k = 3; k >= 0; --k) {
        r = r * s;
        r = r + c[k];
    }
    return r;
}

inline float erf32(float x, const float* p_coefs) {
    float xc = clip(x, -4.0f, 4.0f);
    float s = xc * xc;
    float p = horner6(s, p_coefs);
    float q = horner6(s, kErfQ);
    p = p / q;
    return p * xc;
}

inline float erf_of(float x) { return erf32(x, kErfP); }
inline double erf_of(double x) { return erf(x); }

// Phi(x) = 1/2 + erf(x / sqrt 2) / 2
inline float gelu_cdf(float x) {
    float r = erf32(x * (float)kSqrt1_2, kErfPHalf);
    return r + 0.5f;
}
inline double gelu_cdf(double x) { return (erf(x * kSqrt1_2) + 1.0) * 0.5; }

template <typename T> inline T gelu(T x) { return gelu_cdf(x) * x; }

template <typename T> inline T gelu_backward(T g, T x) {
    T cdf = gelu_cdf(x);
    T pdf = x * x;
    pdf = pdf * (T)-0.5;
    pdf = m_exp(pdf);
    pdf = pdf * (T)kInvSqrt2Pi;
    pdf = pdf * x;
    return (cdf + pdf) * g;
}

// the largest argument whose exp is finite (as _exp_limit), so large |x| neither overflows nor loses accuracy
template <typename T> inline T exp_limit() { return (T)(std::log((double)std::numeric_limits<T>::max()) * 0.999); }

// tanh-gelu is x s with s = (1 + tanh u) / 2 = 1 / (1 + e), e = exp(-2u), u = beta (x + kappa x^3): the sigmoid
// form of _gelu_tanh_gate, accurate where tanh(u) is near -1, and 1 - s = e s without a subtraction
// (the forward lets e overflow, so s is exactly 0 there as PyTorch's 1 + tanh(u): gelu(-inf) NaN, gelu(-1e30)
// -0.0; the gradient clamps it, whose e s would be inf * 0)
template <typename T, bool Clamp> inline T gelu_tanh_exp(T x) {
    T e = x * x;
    e = e * (T)kKappa;
    e = e + (T)1;
    e = e * x;
    e = e * (T)(-2 * kBeta);
    return m_exp(Clamp ? min_nan(e, exp_limit<T>()) : e);
}

template <typename T> inline T gelu_tanh(T x) { return ((T)1 / (gelu_tanh_exp<T, false>(x) + (T)1)) * x; }

// d/dx x s(u) = s + x 2 s (1 - s) u', u' = beta (1 + 3 kappa x^2)
template <typename T> inline T gelu_tanh_backward(T g, T x) {
    T e = gelu_tanh_exp<T, true>(x);
    T s = (T)1 / (e + (T)1);
    T d = e * s;
    d = d * s;
    T du = x * x;
    du = du * (T)(3 * kKappa);
    du = du + (T)1;
    d = d * du;
    d = d * x;
    d = d * (T)(2 * kBeta);
    d = d + s;
    return d * g;
}

// ------------------------------------------------------------------------------------------ sigmoid family

// clamped below overflow: the LSTM cell's gates (as backends/_rnn.py's reference)
template <typename T> inline T sigmoid(T x, T lim) { return (T)1 / ((T)1 + m_exp(min_nan(-x, lim))); }
// PyTorch's 1 / (1 + exp(-x)): exactly 0 where exp(-x) overflows (sigmoid(-inf) is 0, silu(-inf) NaN)
template <typename T> inline T sigmoid(T x) { return (T)1 / ((T)1 + m_exp(-x)); }
template <typename T> inline T sign(T x) { return (T)(x > 0) - (T)(x < 0); }  // 0 for NaN and -0.0, as _sign

// ------------------------------------------------------------------------------------------ logaddexp, hypot
// NumPy's npy_logaddexp: equal arguments (infinities of one sign included) give x + log 2
template <typename T> inline T logaddexp(T x, T y) {
    T d = x - y;
    T m = d > 0 ? x : y;
    T r = m + m_log1p(m_exp(-std::fabs(d)));
    r = d != d ? d : r;
    return x == y ? x + (T)0.6931471805599453 : r;
}

template <typename T> inline T logaddexp2(T x, T y) {
    T d = x - y;
    T m = d > 0 ? x : y;
    T r = m + (T)1.4426950408889634 * m_log1p(m_exp2(-std::fabs(d)));
    r = d != d ? d : r;
    return x == y ? x + (T)1 : r;
}

// float32 in double: both squares are exact and the sum is rounded once; an infinite side wins over NaN (IEEE)
inline float hypot32(float a, float b) {
    double ad = a, bd = b;
    float r = (float)std::sqrt(ad * ad + bd * bd);
    return (std::isinf(a) || std::isinf(b)) ? std::numeric_limits<float>::infinity() : r;
}

// ------------------------------------------------------------------------------------------ the division family
// fmod of float32 through double. With a = A 2^ea, b = B 2^eb (A, B < 2^24 integers), a quotient that is not an
// integer lies at least 1/B (ea >= eb) or 2^(ea-eb)/B (ea < eb) from the nearest integer, while the double quotient
// is off by at most |q| 2^-53; below |q| = 2^24 that error is smaller than the gap, so trunc(q) is the true integer
// part. trunc(q) * b then has at most 48 significant bits (exact), and a - trunc(q) * b, a multiple of the smaller
// ulp and below |b|, is exact too. Returns false where |q| >= 2^24 (inf and NaN quotients included): libm finishes
// those.
inline bool fmod32_fast(float a, float b, float& r) {
    double ad = a, bd = b;
    double q = ad / bd;
    double t = std::trunc(q);
    // a quotient below 1 leaves a itself (also for an infinite b, where 0 * b would be NaN)
    r = (float)std::copysign(t == 0 ? ad : ad - t * bd, ad);
    return std::fabs(q) < 16777216.0;
}

// npy_divmod's remainder and floor quotient (Python's convention) from the fmod above, written with selects so
// that the loops vectorise; a zero remainder keeps fmod's sign (the dividend's), as PyTorch's (NumPy's takes the
// divisor's)
inline float remainder32(float a, float b, float mod) {
    float adj = ((b < 0) != (mod < 0)) ? mod + b : mod;
    return mod != 0 ? adj : mod;
}

inline float floor_divide32(float a, float b, float mod) {
    float div = (a - mod) / b;
    div = (mod != 0 && ((b < 0) != (mod < 0))) ? div - 1.0f : div;
    float fl = std::floor(div);
    fl = (div - fl > 0.5f) ? fl + 1.0f : fl;
    float r = div != 0 ? fl : std::copysign(0.0f, a / b);
    return b == 0 ? a / b : r;
}

// y = finish(a, b, fmod(a, b)); the fast fmod in one vectorised pass, then libm's for the quotients it declines
template <class F> int division32(idx n, const float* a, idx sa, const float* b, idx sb, float* y, F finish) {
    int slow = 0;
    auto one = [&slow, finish](float av, float bv) {
        float r;
        slow |= !fmod32_fast(av, bv, r);
        return finish(av, bv, r);
    };
    if (sa && sb) {
        for (idx i = 0; i < n; ++i) y[i] = one(a[i], b[i]);
    } else if (sb) {
        const float av = a[0];
        for (idx i = 0; i < n; ++i) y[i] = one(av, b[i]);
    } else {
        const float bv = b[0];
        for (idx i = 0; i < n; ++i) y[i] = one(a[i], bv);
    }
    if (slow) {
        for (idx i = 0; i < n; ++i) {
            float av = a[i * sa], bv = b[i * sb], r;
            if (!fmod32_fast(av, bv, r)) y[i] = finish(av, bv, std::fmod(av, bv));
        }
    }
    return 0;
}

// ------------------------------------------------------------------------------------------ special functions
// float32 inputs, computed in double and rounded once, as the reference bodies do; every loop below is branch-free
// (fixed trip counts, selects), so it vectorises with libmvec's log, sin, tan, exp and erf.
constexpr double kPi = 3.141592653589793;
constexpr double kHalfLog2Pi = 0.9189385332046728;  // log(2 pi) / 2
constexpr double kLogPi = 1.1447298858494002;

// erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010), in float: within 4 ulp
// of the correctly rounded value on every float32 input (PyTorch's float32 erfinv is also one rational
// approximation, of the same accuracy). A Halley step in double would round correctly but cost 4x (the reference
// body, three Halley steps in float64, stays the exact one).
constexpr float kGilesLow[9] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
                                -0.00125372503f, -0.00417768164f, 0.246640727f, 1.50140941f};
constexpr float kGilesHigh[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
                                 -0.0076224613f, 0.00943887047f, 1.00167406f, 2.83297682f};

inline float horner9(const float* c, float t) {
    float p = c[0];
    for (int k = 1; k < 9; ++k) p = p * t + c[k];
    return p;
}

inline float erfinv32(float y) {
    const float ya = std::fabs(y);
    const bool inside = ya < 1.0f;  // false for NaN
    const float yc = inside ? y : 0.0f;
    const float w = -logf((1.0f - yc) * (1.0f + yc));  // 1 - yc is exact for yc near 1: no cancellation
    const float lo = horner9(kGilesLow, w - 2.5f), hi = horner9(kGilesHigh, std::sqrt(w) - 3.0f);
    const float edge = ya == 1.0f ? std::copysign(std::numeric_limits<float>::infinity(), y)
                                  : std::numeric_limits<float>::quiet_NaN();
    return inside ? (w < 5.0f ? lo : hi) * yc : edge;
}

// lgamma: the reference's formulas (backends/_special.py) in double: reflection below 1/2, lgamma(w) =
// lgamma(w + 8) - log(w (w + 1) ... (w + 7)) below 8.5 (one product: the reference's loop up to 15 does not
// vectorise), Stirling's series with the coefficients B_2k / (2k (2k - 1)), whose first omitted term is below 1e-17
// from 8.5 on. The reflected and direct results share one log: log(prod / |sin(pi z)|) or log(prod).
constexpr double kStirling[8] = {1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188, -691.0 / 360360,
                                 1.0 / 156, -3617.0 / 122400};

inline double sinpi(double z) {  // sin(pi z), exactly 0 at the integers
    double r = z - 2.0 * std::nearbyint(z * 0.5);
    r = r > 0.5 ? 1.0 - r : (r < -0.5 ? -1.0 - r : r);
    return sin(kPi * r);
}

inline float lgamma32(float v) {
    const double z = v;
    const bool reflect = z < 0.5;
    const double w = reflect ? 1.0 - z : z;
    const bool shift = w < 8.5;
    const double prod = shift ? w * (w + 1.0) * (w + 2.0) * (w + 3.0) * (w + 4.0) * (w + 5.0) * (w + 6.0) * (w + 7.0)
                              : 1.0;
    const double y = shift ? w + 8.0 : w;
    const double inv = 1.0 / y, inv2 = inv * inv;
    double series = 0.0;
    for (int k = 7; k >= 0; --k) series = series * inv2 + kStirling[k];
    const double big = (y - 0.5) * log(y) - y + kHalfLog2Pi + series * inv;  // lgamma(y)
    const double l = log(reflect ? prod / std::fabs(sinpi(z)) : prod);  // +inf at the poles (sin = 0)
    const double r = reflect ? kLogPi - big + l : big - l;
    const double inf = std::numeric_limits<double>::infinity();
    // the zeros at 1 and 2 exactly, as PyTorch's (the sum above cancels there to a few 1e-15; next to them that
    // absolute error is under half a float32 ulp of the value)
    return (float)(std::isinf(z) || std::isinf(w) ? inf : (z == 1.0 || z == 2.0) ? 0.0 : r);
}

// digamma: Cephes' (as PyTorch's CPU kernel and the reference): reflection for negative x through pi / tan(pi x),
// the recurrence up to 10, the asymptotic series in 1 / x^2; NaN at the negative poles, -inf at +0, +inf at -0.
constexpr double kPsiA[7] = {8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                             -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
constexpr double kPsi10 = 2.25175258906672110764;

inline float digamma32(float v) {
    const double z = v;
    const bool neg = z < 0.0;
    const double frac = z - std::trunc(z);
    double result = neg ? -kPi / tan(kPi * frac) : 0.0;
    double y = neg ? 1.0 - z : z;
#pragma GCC unroll 16
    for (int i = 0; i < 10; ++i) {
        const bool low = y < 10.0;
        result = low ? result - 1.0 / y : result;
        y = low ? y + 1.0 : y;
    }
    const double w = 1.0 / (y * y);
    double poly = 0.0;
    for (int k = 0; k < 7; ++k) poly = poly * w + kPsiA[k];
    const double tail = y < 1.0e17 ? w * poly : 0.0;
    double r = y == 10.0 ? result + kPsi10 : result + log(y) - 0.5 / y - tail;
    r = neg && z == std::trunc(z) ? std::numeric_limits<double>::quiet_NaN() : r;
    r = z == 0.0 ? std::copysign(std::numeric_limits<double>::infinity(), -z) : r;
    return (float)r;
}

// ------------------------------------------------------------------------------------------ loops
template <typename T, class F> void map1(idx n, const T* x, T* y, F f) {
    for (idx i = 0; i < n; ++i) y[i] = f(x[i]);
}

// the step cases apart, so that each loop vectorises with unit strides
template <typename T, class F> void map2(idx n, const T* a, idx sa, const T* b, idx sb, T* y, F f) {
    if (sa && sb) {
        for (idx i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
    } else if (sb) {
        T av = a[0];
        for (idx i = 0; i < n; ++i) y[i] = f(av, b[i]);
    } else {
        T bv = b[0];
        for (idx i = 0; i < n; ++i) y[i] = f(a[i], bv);
    }
}

template <typename T> int unary(int op, idx n, const T* x, T* y) {
    switch (op) {
        case U_erf: map1(n, x, y, [](T v) { return erf_of(v); }); return 0;
        case U_gelu: map1(n, x, y, [](T v) { return gelu(v); }); return 0;
        case U_gelu_tanh: map1(n, x, y, [](T v) { return gelu_tanh(v); }); return 0;
        case U_sigmoid: map1(n, x, y, [](T v) { return sigmoid(v); }); return 0;
        case U_silu: map1(n, x, y, [](T v) { return v * sigmoid(v); }); return 0;
        case U_sign: map1(n, x, y, [](T v) { return sign(v); }); return 0;
        // the reference's x - trunc(x) in one pass instead of two (NaN for infinities on both)
        case U_frac: map1(n, x, y, [](T v) { return v - std::trunc(v); }); return 0;
        // a compare and a select, as NumPy's clip(x, 0, inf): NaN and -0.0 stay, as PyTorch's relu keeps them
        case U_relu: map1(n, x, y, [](T v) { return v < (T)0 ? (T)0 : v; }); return 0;
        // libm's (libmvec's vector variant where linked): under an ulp, tiny values included, where the
        // composite's 60-level continued fraction takes ~150x PyTorch's time
        case U_erfc: map1(n, x, y, [](T v) { return m_erfc(v); }); return 0;
        // libmvec's vector exp2 where linked: NumPy's float32 exp2 is a scalar libm loop (3.5x PyTorch's time on
        // 1M floats)
        case U_exp2: map1(n, x, y, [](T v) { return m_exp2(v); }); return 0;
        // a square root and a division, each rounded: the reference's sqrt then reciprocal, and PyTorch's
        // pow(x, -0.5), bit for bit, in one pass instead of two
        case U_rsqrt: map1(n, x, y, [](T v) { return (T)1 / std::sqrt(v); }); return 0;
        // NumPy's float32 reciprocal has no vector loop (1.9x PyTorch's time on 1M floats); one division each
        case U_reciprocal: map1(n, x, y, [](T v) { return (T)1 / v; }); return 0;
        // PyTorch's pow(x, 3): (x * x) * x, both products rounded, in one pass instead of NumPy's two
        case U_cube: map1(n, x, y, [](T v) { return (v * v) * v; }); return 0;
    }
    if constexpr (sizeof(T) == 4) {
        switch (op) {
            case U_erfinv: map1(n, x, y, erfinv32); return 0;
            case U_lgamma: map1(n, x, y, lgamma32); return 0;
            case U_digamma: map1(n, x, y, digamma32); return 0;
        }
    }
    return -1;
}

template <typename T> int binary_common(int op, idx n, const T* a, idx sa, const T* b, idx sb, T* y) {
    switch (op) {
        case B_gelu_backward: map2(n, a, sa, b, sb, y, [](T g, T x) { return gelu_backward(g, x); }); return 0;
        case B_gelu_tanh_backward:
            map2(n, a, sa, b, sb, y, [](T g, T x) { return gelu_tanh_backward(g, x); });
            return 0;
        case B_sigmoid_backward:
            map2(n, a, sa, b, sb, y, [](T g, T v) { return g * (v * ((T)1 - v)); });
            return 0;
        case B_tanh_backward: map2(n, a, sa, b, sb, y, [](T g, T v) { return g * ((T)1 - v * v); }); return 0;
        case B_logaddexp: map2(n, a, sa, b, sb, y, [](T u, T v) { return logaddexp(u, v); }); return 0;
        case B_logaddexp2: map2(n, a, sa, b, sb, y, [](T u, T v) { return logaddexp2(u, v); }); return 0;
        // one rounding each, as NumPy's: the same bits, on the pool's threads where NumPy has one
        case B_add: map2(n, a, sa, b, sb, y, [](T u, T v) { return u + v; }); return 0;
        case B_sub: map2(n, a, sa, b, sb, y, [](T u, T v) { return u - v; }); return 0;
        case B_mul: map2(n, a, sa, b, sb, y, [](T u, T v) { return u * v; }); return 0;
        case B_div: map2(n, a, sa, b, sb, y, [](T u, T v) { return u / v; }); return 0;
        // relu's gradient from its output: PyTorch zeroes where y <= 0 (a NaN y passes g), and a select keeps a
        // masked-out inf or NaN gradient from leaking (g * mask would not)
        case B_relu_backward: map2(n, a, sa, b, sb, y, [](T g, T v) { return v <= (T)0 ? (T)0 : g; }); return 0;
        // bit operations, exact; NumPy's loop is scalar
        case B_copysign: map2(n, a, sa, b, sb, y, [](T u, T v) { return std::copysign(u, v); }); return 0;
    }
    return -1;
}

int binary32(int op, idx n, const float* a, idx sa, const float* b, idx sb, float* y) {
    switch (op) {
        case B_hypot: map2(n, a, sa, b, sb, y, [](float u, float v) { return hypot32(u, v); }); return 0;
        case B_fmod: return division32(n, a, sa, b, sb, y, [](float, float, float mod) { return mod; });
        case B_remainder:
            return division32(n, a, sa, b, sb, y, [](float u, float v, float mod) { return remainder32(u, v, mod); });
        case B_floor_divide:
            return division32(n, a, sa, b, sb, y,
                              [](float u, float v, float mod) { return floor_divide32(u, v, mod); });
    }
    return binary_common(op, n, a, sa, b, sb, y);
}

// ------------------------------------------------------------------------------------------ the LSTM cell
// gates (B, 4H) in PyTorch's order i, f, g, o; the reference is backends/_rnn.py (sigmoid clamped as _sigmoid_)
// the outputs are fresh arrays (Python allocates them): __restrict__ lets the loops vectorise without alias checks
template <typename T>
void lstm_forward(idx B, idx H, const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                  T* __restrict__ h_out, T* __restrict__ c_out) {
    const T lim = exp_limit<T>();
    for (idx b = 0; b < B; ++b) {
        const T* __restrict__ xi = gi + b * 4 * H;
        const T* __restrict__ xh = gh + b * 4 * H;
        for (idx j = 0; j < H; ++j) {
            T i = sigmoid(xi[j] + xh[j], lim), f = sigmoid(xi[H + j] + xh[H + j], lim);
            T g = m_tanh(xi[2 * H + j] + xh[2 * H + j]), o = sigmoid(xi[3 * H + j] + xh[3 * H + j], lim);
            T cn = f * c[b * H + j] + i * g;
            c_out[b * H + j] = cn;
            h_out[b * H + j] = m_tanh(cn) * o;
        }
    }
}

// which of dh, dc exist is a template parameter: a load under a runtime condition would not vectorise
template <typename T, bool HasDh, bool HasDc>
void lstm_backward_v(idx B, idx H, const T* __restrict__ dh, const T* __restrict__ dc, const T* __restrict__ gi,
                     const T* __restrict__ gh, const T* __restrict__ c, T* __restrict__ d, T* __restrict__ dc_prev) {
    const T lim = exp_limit<T>();
    for (idx b = 0; b < B; ++b) {
        const T* __restrict__ xi = gi + b * 4 * H;
        const T* __restrict__ xh = gh + b * 4 * H;
        T* __restrict__ db = d + b * 4 * H;
        for (idx j = 0; j < H; ++j) {
            T i = sigmoid(xi[j] + xh[j], lim), f = sigmoid(xi[H + j] + xh[H + j], lim);
            T g = m_tanh(xi[2 * H + j] + xh[2 * H + j]), o = sigmoid(xi[3 * H + j] + xh[3 * H + j], lim);
            T cv = c[b * H + j];
            T tc = m_tanh(f * cv + i * g);
            T dhv = HasDh ? dh[b * H + j] : (T)0;
            // c' reaches the loss through h' = o tanh(c') and through the next step's c
            T gc = ((T)1 - tc * tc) * o * dhv + (HasDc ? dc[b * H + j] : (T)0);
            db[3 * H + j] = dhv * tc * o * ((T)1 - o);
            db[j] = gc * g * i * ((T)1 - i);
            db[H + j] = gc * cv * f * ((T)1 - f);
            db[2 * H + j] = gc * i * ((T)1 - g * g);
            dc_prev[b * H + j] = gc * f;
        }
    }
}

template <typename T>
void lstm_backward(idx B, idx H, const T* dh, const T* dc, const T* gi, const T* gh, const T* c, T* d, T* dc_prev) {
    if (dh && dc)
        lstm_backward_v<T, true, true>(B, H, dh, dc, gi, gh, c, d, dc_prev);
    else if (dh)
        lstm_backward_v<T, true, false>(B, H, dh, dc, gi, gh, c, d, dc_prev);
    else if (dc)
        lstm_backward_v<T, false, true>(B, H, dh, dc, gi, gh, c, d, dc_prev);
    else
        lstm_backward_v<T, false, false>(B, H, dh, dc, gi, gh, c, d, dc_prev);
}

bool supports(int arity, int op, int dtype) {
    if (dtype != 0 && dtype != 1) return false;
    if (arity == 1) {
        if (op < U_erf || op > U_cube) return false;
        return dtype == 0 || op <= U_frac || op >= U_relu;  // erfinv, lgamma, digamma: float32 only
    }
    if (arity != 2 || op < B_gelu_backward || op > B_copysign) return false;
    // the float64 division family and hypot stay with NumPy: libm is the only exact route there
    return dtype == 0 || op <= B_logaddexp2 || op >= B_add;
}

}  // namespace

extern "C" {

int mt_ew_supports(int arity, int op, int dtype) { return supports(arity, op, dtype) ? 1 : 0; }

int mt_ew_unary(int op, int dtype, idx n, const void* x, void* y) {
    if (n < 0 || !supports(1, op, dtype)) return -1;
    if (dtype == 0) return unary<float>(op, n, (const float*)x, (float*)y);
    return unary<double>(op, n, (const double*)x, (double*)y);
}

int mt_ew_binary(int op, int dtype, idx n, const void* a, idx a_step, const void* b, idx b_step, void* y) {
    if (n < 0 || !supports(2, op, dtype) || (a_step != 0 && a_step != 1) || (b_step != 0 && b_step != 1) ||
        (a_step == 0 && b_step == 0))
        return -1;
    if (dtype == 0) return binary32(op, n, (const float*)a, a_step, (const float*)b, b_step, (float*)y);
    return binary_common<double>(op, n, (const double*)a, a_step, (const double*)b, b_step, (double*)y);
}

int mt_ew_unary_pieces(int op, int dtype, idx n, const void* x, void* y, idx piece, idx* next) {
    if (n < 0 || piece <= 0 || piece % 16 != 0 || !supports(1, op, dtype)) return -1;
    const idx isz = dtype == 0 ? 4 : 8;
    for (;;) {
        const idx s = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED) * piece;
        if (s >= n) return 0;
        const int rc = mt_ew_unary(op, dtype, n - s < piece ? n - s : piece, (const char*)x + s * isz,
                                   (char*)y + s * isz);
        if (rc != 0) return rc;
    }
}

int mt_ew_binary_pieces(int op, int dtype, idx n, const void* a, idx a_step, const void* b, idx b_step, void* y,
                        idx piece, idx* next) {
    if (n < 0 || piece <= 0 || piece % 16 != 0 || !supports(2, op, dtype)) return -1;
    const idx isz = dtype == 0 ? 4 : 8;
    for (;;) {
        const idx s = __atomic_fetch_add(next, 1, __ATOMIC_RELAXED) * piece;
        if (s >= n) return 0;
        const int rc = mt_ew_binary(op, dtype, n - s < piece ? n - s : piece, (const char*)a + s * isz * a_step,
                                    a_step, (const char*)b + s * isz * b_step, b_step, (char*)y + s * isz);
        if (rc != 0) return rc;
    }
}

int mt_lstm_cell_forward(int dtype, idx B, idx H, const void* gi, const void* gh, const void* c, void* h_out,
                         void* c_out) {
    if (B < 0 || H < 0) return -1;
    if (dtype == 0)
        lstm_forward(B, H, (const float*)gi, (const float*)gh, (const float*)c, (float*)h_out, (float*)c_out);
    else if (dtype == 1)
        lstm_forward(B, H, (const double*)gi, (const double*)gh, (const double*)c, (double*)h_out, (double*)c_out);
    else
        return -1;
    return 0;
}

int mt_lstm_cell_backward(int dtype, idx B, idx H, const void* dh, const void* dc, const void* gi, const void* gh,
                          const void* c, void* d_gates, void* dc_prev) {
    if (B < 0 || H < 0) return -1;
    if (dtype == 0)
        lstm_backward(B, H, (const float*)dh, (const float*)dc, (const float*)gi, (const float*)gh, (const float*)c,
                      (float*)d_gates, (float*)dc_prev);
    else if (dtype == 1)
        lstm_backward(B, H, (const double*)dh, (const double*)dc, (const double*)gi, (const double*)gh,
                      (const double*)c, (double*)d_gates, (double*)dc_prev);
    else
        return -1;
    return 0;
}

}  // extern "C"

// the parallel twins (pool_cpu.h)
MT_PARALLEL(mt_ew_unary_pieces)
MT_PARALLEL(mt_ew_binary_pieces)
