// cuda_fp16.h for simulated device code: __half and __half2 as host types with the device's results.
//
// The simulator puts this folder first on the include path, so a kernel's `#include <cuda_fp16.h>` lands here
// (on a GPU, NVRTC reads the CUDA toolkit's header). What matches the device, bit for bit:
//   - conversions to half round as asked (_rn to nearest even, _rz, _rd, _ru) from float, double and integers,
//     in one rounding (double -> half never passes through float); overflow gives inf or the largest finite value
//     as the mode says; subnormals are kept (no flush to zero); a NaN becomes the canonical NaN 0x7fff;
//   - half -> float is exact; a NaN becomes the canonical float NaN 0x7fffffff (the toolkit's host path);
//   - + - * / and sqrt: computed in float and rounded once to half. float's 24 bits are at least twice half's
//     11 plus 2, so that double rounding equals the device's single rounding; fma goes through double (a * b is
//     exact there) for the same reason;
//   - comparisons are IEEE (unordered with NaN); __hmax / __hmin return the other operand of a NaN, the *_nan
//     forms return NaN.
// The transcendental functions (hexp, hlog, hsin ...) are float's, rounded once; the device's approximations may
// differ from them in the last place.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace cuda_sim {
namespace fp {

enum Round { RN, RZ, RD, RU };

// Bits of the binary format with E exponent bits and M stored mantissa bits nearest to (-1)^neg * mag * 2^exp2
// under `mode` (mag > 0): one rounding of the exact value, with IEEE overflow and gradual underflow.
template <int E, int M>
inline uint16_t round_bits(bool neg, unsigned __int128 mag, int exp2, Round mode) {
    constexpr int bias = (1 << (E - 1)) - 1;
    constexpr int emin = 1 - bias;
    constexpr uint32_t inf_bits = ((1u << E) - 1u) << M;
    const uint32_t sign = neg ? 1u << (E + M) : 0u;
    int msb = 127;
    while (!(mag >> msb)) --msb;
    int e = msb + exp2;  // the value lies in [2^e, 2^(e+1))
    // overflow: to inf, or to the largest finite value when the mode rounds toward zero on this side
    auto overflow = [&]() -> uint16_t {
        bool to_inf = mode == RN || (mode == RU && !neg) || (mode == RD && neg);
        return uint16_t(sign | (to_inf ? inf_bits : inf_bits - 1u));
    };
    if (e > bias) return overflow();
    int te = e < emin ? emin : e;  // the exponent of the result's quantum 2^(te - M)
    int shift = exp2 - te + M;     // q = mag * 2^shift, rounded to an integer
    unsigned __int128 q;
    if (shift >= 0) {
        q = mag << shift;  // exact: the value needs no more than M + 1 bits here
    } else {
        int rs = -shift;
        unsigned __int128 rem, half;
        if (rs >= 127) {  // far below half an ulp of the smallest subnormal
            q = 0;
            rem = mag;
            half = ~(unsigned __int128)0;
        } else {
            q = mag >> rs;
            rem = mag & ((((unsigned __int128)1) << rs) - 1);
            half = ((unsigned __int128)1) << (rs - 1);
        }
        bool up = false;
        if (rem != 0) {
            switch (mode) {
                case RN: up = rem > half || (rem == half && (q & 1)); break;
                case RZ: break;
                case RU: up = !neg; break;
                case RD: up = neg; break;
            }
        }
        q += up;
    }
    // exponent field te + bias - 1 plus the significand with its leading bit: a carry out of the significand,
    // and a subnormal rounded up to the smallest normal, both land in the exponent field by themselves
    uint32_t bits = (uint32_t(te + bias - 1) << M) + uint32_t(q);
    if (bits >= inf_bits) return overflow();
    return uint16_t(sign | bits);
}

template <int E, int M>
inline uint16_t from_float(float f, Round mode) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bool neg = u >> 31;
    uint32_t ex = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (ex == 0xffu) {
        if (man) return 0x7fffu;  // canonical NaN
        return uint16_t((neg ? 1u << (E + M) : 0u) | (((1u << E) - 1u) << M));
    }
    if (ex == 0 && man == 0) return neg ? uint16_t(1u << (E + M)) : uint16_t(0);
    if (ex == 0) return round_bits<E, M>(neg, man, -149, mode);
    return round_bits<E, M>(neg, man | 0x800000u, int(ex) - 150, mode);
}

template <int E, int M>
inline uint16_t from_double(double d, Round mode) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    bool neg = u >> 63;
    uint32_t ex = uint32_t(u >> 52) & 0x7ffu;
    uint64_t man = u & 0xfffffffffffffull;
    if (ex == 0x7ffu) {
        if (man) return 0x7fffu;
        return uint16_t((neg ? 1u << (E + M) : 0u) | (((1u << E) - 1u) << M));
    }
    if (ex == 0 && man == 0) return neg ? uint16_t(1u << (E + M)) : uint16_t(0);
    if (ex == 0) return round_bits<E, M>(neg, man, -1074, mode);
    return round_bits<E, M>(neg, man | (1ull << 52), int(ex) - 1075, mode);
}

template <int E, int M>
inline uint16_t from_signed(long long v, Round mode) {
    if (v == 0) return 0;
    bool neg = v < 0;
    unsigned long long mag = neg ? 0ull - (unsigned long long)v : (unsigned long long)v;
    return round_bits<E, M>(neg, mag, 0, mode);
}

template <int E, int M>
inline uint16_t from_unsigned(unsigned long long v, Round mode) {
    return v == 0 ? uint16_t(0) : round_bits<E, M>(false, v, 0, mode);
}

// half (E = 5, M = 10) -> float, exact
inline float half_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h >> 15) << 31, ex = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (ex == 0x1fu) {
        u = man ? 0x7fffffffu : (sign | 0x7f800000u);
    } else if (ex == 0) {
        float m = std::ldexp(float(man), -24);  // subnormal half: exact as a normal float
        return sign ? -m : m;
    } else {
        u = sign | ((ex + 112u) << 23) | (man << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Float to an integer type, truncating / rounding as asked; NaN gives 0 and out-of-range values saturate, as the
// device's cvt.*i* instructions do.
template <class I>
inline I to_int(float f, Round mode) {
    if (f != f) return I(0);
    double r;
    switch (mode) {
        case RN: r = std::nearbyint(double(f)); break;
        case RZ: r = std::trunc(double(f)); break;
        case RD: r = std::floor(double(f)); break;
        default: r = std::ceil(double(f)); break;
    }
    constexpr double lo = double(std::numeric_limits<I>::min()), hi = double(std::numeric_limits<I>::max());
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi) return std::numeric_limits<I>::max();
    return I(r);
}

}  // namespace fp
}  // namespace cuda_sim

struct __half_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};

// The conversions of a 16-bit float class H with E exponent and M mantissa bits whose bits are in `__x` and whose
// value TO_F(bits) gives exactly: from every arithmetic type by rounding to nearest even, to float exactly, and to
// integers by truncation as the device's __half2*_rz / __bfloat162*_rz do.
#define CS_HALF_LIKE_CONVERSIONS(H, E, M, TO_F)                                                              \
    H(float f) : __x(cuda_sim::fp::from_float<E, M>(f, cuda_sim::fp::RN)) {}                                 \
    H(double d) : __x(cuda_sim::fp::from_double<E, M>(d, cuda_sim::fp::RN)) {}                               \
    H(short v) : __x(cuda_sim::fp::from_signed<E, M>(v, cuda_sim::fp::RN)) {}                                \
    H(unsigned short v) : __x(cuda_sim::fp::from_unsigned<E, M>(v, cuda_sim::fp::RN)) {}                     \
    H(int v) : __x(cuda_sim::fp::from_signed<E, M>(v, cuda_sim::fp::RN)) {}                                  \
    H(unsigned int v) : __x(cuda_sim::fp::from_unsigned<E, M>(v, cuda_sim::fp::RN)) {}                       \
    H(long v) : __x(cuda_sim::fp::from_signed<E, M>(v, cuda_sim::fp::RN)) {}                                 \
    H(unsigned long v) : __x(cuda_sim::fp::from_unsigned<E, M>(v, cuda_sim::fp::RN)) {}                      \
    H(long long v) : __x(cuda_sim::fp::from_signed<E, M>(v, cuda_sim::fp::RN)) {}                            \
    H(unsigned long long v) : __x(cuda_sim::fp::from_unsigned<E, M>(v, cuda_sim::fp::RN)) {}                 \
    H& operator=(float f) { return *this = H(f); }                                                           \
    H& operator=(double d) { return *this = H(d); }                                                          \
    operator float() const { return TO_F(__x); }                                                             \
    operator signed char() const { return cuda_sim::fp::to_int<signed char>(TO_F(__x), cuda_sim::fp::RZ); } \
    operator unsigned char() const { return cuda_sim::fp::to_int<unsigned char>(TO_F(__x), cuda_sim::fp::RZ); } \
    operator char() const { return cuda_sim::fp::to_int<char>(TO_F(__x), cuda_sim::fp::RZ); }               \
    operator short() const { return cuda_sim::fp::to_int<short>(TO_F(__x), cuda_sim::fp::RZ); }             \
    operator unsigned short() const { return cuda_sim::fp::to_int<unsigned short>(TO_F(__x), cuda_sim::fp::RZ); } \
    operator int() const { return cuda_sim::fp::to_int<int>(TO_F(__x), cuda_sim::fp::RZ); }                 \
    operator unsigned int() const { return cuda_sim::fp::to_int<unsigned int>(TO_F(__x), cuda_sim::fp::RZ); } \
    operator long long() const { return cuda_sim::fp::to_int<long long>(TO_F(__x), cuda_sim::fp::RZ); }     \
    operator unsigned long long() const {                                                                    \
        return cuda_sim::fp::to_int<unsigned long long>(TO_F(__x), cuda_sim::fp::RZ);                        \
    }                                                                                                        \
    operator bool() const { return (__x & 0x7fffu) != 0; }

// The class H over its raw struct RAW (bits in `x`), with the conversions unless NO_CONVERSIONS is defined, and
// its pair class H2 over RAW2.
#define CS_HALF_LIKE_CLASSES(H, RAW, H2, RAW2, E, M, TO_F, NO_CONVERSIONS)                                   \
    struct alignas(2) H {                                                                                    \
      protected:                                                                                             \
        unsigned short __x;                                                                                  \
                                                                                                             \
      public:                                                                                                \
        H() = default;                                                                                       \
        constexpr H(const RAW& r) : __x(r.x) {}                                                              \
        H& operator=(const RAW& r) { __x = r.x; return *this; }                                              \
        operator RAW() const { return RAW{__x}; }                                                            \
        CS_IF_CONVERSIONS_##NO_CONVERSIONS(CS_HALF_LIKE_CONVERSIONS(H, E, M, TO_F))                          \
    };                                                                                                       \
    struct alignas(4) H2 {                                                                                   \
        H x, y;                                                                                              \
        H2() = default;                                                                                      \
        constexpr H2(const H& a, const H& b) : x(a), y(b) {}                                                 \
        H2(const RAW2& r) : x(RAW{r.x}), y(RAW{r.y}) {}                                                      \
        operator RAW2() const { return RAW2{RAW(x).x, RAW(y).x}; }                                           \
    };

#ifdef __CUDA_NO_HALF_CONVERSIONS__
#define CS_IF_CONVERSIONS_HALF(...)
#else
#define CS_IF_CONVERSIONS_HALF(...) __VA_ARGS__
#endif
CS_HALF_LIKE_CLASSES(__half, __half_raw, __half2, __half2_raw, 5, 10, cuda_sim::fp::half_to_float, HALF)

typedef __half half;
typedef __half2 half2;

namespace cuda_sim {
template <>
struct sim_kind<__half> {
    static constexpr const char* value = "f2";
};
namespace fp {
inline __half half_of(uint16_t bits) { return __half(__half_raw{bits}); }
inline uint16_t bits_of(__half h) { return __half_raw(h).x; }
inline __half h_rn(float f) { return half_of(from_float<5, 10>(f, RN)); }
}  // namespace fp
}  // namespace cuda_sim

// ------------------------------------------------------------------------------------------ conversions
inline __half __float2half(float f) { return cuda_sim::fp::h_rn(f); }
inline __half __float2half_rn(float f) { return cuda_sim::fp::h_rn(f); }
inline __half __float2half_rz(float f) { return cuda_sim::fp::half_of(cuda_sim::fp::from_float<5, 10>(f, cuda_sim::fp::RZ)); }
inline __half __float2half_rd(float f) { return cuda_sim::fp::half_of(cuda_sim::fp::from_float<5, 10>(f, cuda_sim::fp::RD)); }
inline __half __float2half_ru(float f) { return cuda_sim::fp::half_of(cuda_sim::fp::from_float<5, 10>(f, cuda_sim::fp::RU)); }
inline __half __double2half(double d) { return cuda_sim::fp::half_of(cuda_sim::fp::from_double<5, 10>(d, cuda_sim::fp::RN)); }
inline float __half2float(__half h) { return cuda_sim::fp::half_to_float(cuda_sim::fp::bits_of(h)); }
inline __half2 __float2half2_rn(float f) { __half h = __float2half_rn(f); return __half2(h, h); }
inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half_rn(a), __float2half_rn(b)); }
inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
inline float2 __half22float2(__half2 h) { return make_float2(__half2float(h.x), __half2float(h.y)); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }
inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }

#define CS_HALF_FROM_INT(NAME, T, KIND)                                                                      \
    inline __half NAME##_rn(T v) { return cuda_sim::fp::half_of(cuda_sim::fp::KIND<5, 10>(v, cuda_sim::fp::RN)); } \
    inline __half NAME##_rz(T v) { return cuda_sim::fp::half_of(cuda_sim::fp::KIND<5, 10>(v, cuda_sim::fp::RZ)); } \
    inline __half NAME##_rd(T v) { return cuda_sim::fp::half_of(cuda_sim::fp::KIND<5, 10>(v, cuda_sim::fp::RD)); } \
    inline __half NAME##_ru(T v) { return cuda_sim::fp::half_of(cuda_sim::fp::KIND<5, 10>(v, cuda_sim::fp::RU)); }
CS_HALF_FROM_INT(__int2half, int, from_signed)
CS_HALF_FROM_INT(__uint2half, unsigned int, from_unsigned)
CS_HALF_FROM_INT(__short2half, short, from_signed)
CS_HALF_FROM_INT(__ushort2half, unsigned short, from_unsigned)
CS_HALF_FROM_INT(__ll2half, long long, from_signed)
CS_HALF_FROM_INT(__ull2half, unsigned long long, from_unsigned)
#undef CS_HALF_FROM_INT

#define CS_HALF_TO_INT(NAME, T)                                                                              \
    inline T NAME##_rn(__half h) { return cuda_sim::fp::to_int<T>(__half2float(h), cuda_sim::fp::RN); }      \
    inline T NAME##_rz(__half h) { return cuda_sim::fp::to_int<T>(__half2float(h), cuda_sim::fp::RZ); }      \
    inline T NAME##_rd(__half h) { return cuda_sim::fp::to_int<T>(__half2float(h), cuda_sim::fp::RD); }      \
    inline T NAME##_ru(__half h) { return cuda_sim::fp::to_int<T>(__half2float(h), cuda_sim::fp::RU); }
CS_HALF_TO_INT(__half2int, int)
CS_HALF_TO_INT(__half2uint, unsigned int)
CS_HALF_TO_INT(__half2short, short)
CS_HALF_TO_INT(__half2ushort, unsigned short)
CS_HALF_TO_INT(__half2ll, long long)
CS_HALF_TO_INT(__half2ull, unsigned long long)
#undef CS_HALF_TO_INT

inline short __half_as_short(__half h) { return short(cuda_sim::fp::bits_of(h)); }
inline unsigned short __half_as_ushort(__half h) { return cuda_sim::fp::bits_of(h); }
inline __half __short_as_half(short v) { return cuda_sim::fp::half_of(uint16_t(v)); }
inline __half __ushort_as_half(unsigned short v) { return cuda_sim::fp::half_of(v); }

// ------------------------------------------------------------------------------------------ arithmetic
// The arithmetic, comparisons, math and operators of a 16-bit float type H with its pair type H2, written once
// for __half here and for __nv_bfloat16 in cuda_bf16.h. TO_F(h) / RN(f) / RN_D(d) convert, BITS(h) / OF(bits)
// reinterpret, EXP_ALL is the exponent field of inf and NaN, ONE the bits of 1.0.
#define CS_HALF_LIKE_OPS(H, H2, TO_F, RN, RN_D, BITS, OF, EXP_ALL, ONE)                                      \
    inline H __hadd(H a, H b) { return RN(TO_F(a) + TO_F(b)); }                                              \
    inline H __hsub(H a, H b) { return RN(TO_F(a) - TO_F(b)); }                                              \
    inline H __hmul(H a, H b) { return RN(TO_F(a) * TO_F(b)); }                                              \
    inline H __hdiv(H a, H b) { return RN(TO_F(a) / TO_F(b)); }                                              \
    inline H __hadd_rn(H a, H b) { return __hadd(a, b); }                                                    \
    inline H __hsub_rn(H a, H b) { return __hsub(a, b); }                                                    \
    inline H __hmul_rn(H a, H b) { return __hmul(a, b); }                                                    \
    /* a * b is exact in double, so the sum is the only rounding before the one to H */                     \
    inline H __hfma(H a, H b, H c) { return RN_D(double(TO_F(a)) * double(TO_F(b)) + double(TO_F(c))); }   \
    inline H __hneg(H a) { return OF(uint16_t(BITS(a) ^ 0x8000u)); }                                         \
    inline H __habs(H a) { return OF(uint16_t(BITS(a) & 0x7fffu)); }                                         \
    inline bool __hisnan(H a) { return (BITS(a) & 0x7fffu) > (EXP_ALL); }                                    \
    /* -1 for -inf, 1 for +inf, 0 otherwise */                                                               \
    inline int __hisinf(H a) { return BITS(a) == (EXP_ALL) ? 1 : (BITS(a) == ((EXP_ALL) | 0x8000u) ? -1 : 0); } \
    namespace cuda_sim {                                                                                     \
    namespace fp {                                                                                           \
    inline H sat(H h) {                                                                                      \
        float f = TO_F(h);                                                                                   \
        return f != f ? OF(0) : (f < 0.0f ? OF(0) : (f > 1.0f ? OF(ONE) : h));                               \
    }                                                                                                        \
    }                                                                                                        \
    }                                                                                                        \
    inline H __hadd_sat(H a, H b) { return cuda_sim::fp::sat(__hadd(a, b)); }                                        \
    inline H __hsub_sat(H a, H b) { return cuda_sim::fp::sat(__hsub(a, b)); }                                        \
    inline H __hmul_sat(H a, H b) { return cuda_sim::fp::sat(__hmul(a, b)); }                                        \
    inline H __hfma_sat(H a, H b, H c) { return cuda_sim::fp::sat(__hfma(a, b, c)); }                                \
    inline H __hfma_relu(H a, H b, H c) {                                                                    \
        H r = __hfma(a, b, c);                                                                               \
        return !__hisnan(r) && TO_F(r) < 0.0f ? OF(0) : r;                                                   \
    }                                                                                                        \
    inline bool __heq(H a, H b) { return TO_F(a) == TO_F(b); }                                               \
    inline bool __hne(H a, H b) { return TO_F(a) < TO_F(b) || TO_F(a) > TO_F(b); }                           \
    inline bool __hlt(H a, H b) { return TO_F(a) < TO_F(b); }                                                \
    inline bool __hle(H a, H b) { return TO_F(a) <= TO_F(b); }                                               \
    inline bool __hgt(H a, H b) { return TO_F(a) > TO_F(b); }                                                \
    inline bool __hge(H a, H b) { return TO_F(a) >= TO_F(b); }                                               \
    /* the unordered forms are also true when either operand is NaN */                                       \
    inline bool __hequ(H a, H b) { return !(TO_F(a) < TO_F(b) || TO_F(a) > TO_F(b)); }                       \
    inline bool __hneu(H a, H b) { return !(TO_F(a) == TO_F(b)); }                                           \
    inline bool __hltu(H a, H b) { return !(TO_F(a) >= TO_F(b)); }                                           \
    inline bool __hleu(H a, H b) { return !(TO_F(a) > TO_F(b)); }                                            \
    inline bool __hgtu(H a, H b) { return !(TO_F(a) <= TO_F(b)); }                                           \
    inline bool __hgeu(H a, H b) { return !(TO_F(a) < TO_F(b)); }                                            \
    /* max / min return the other operand of a NaN; the _nan forms the canonical NaN */                      \
    inline H __hmax(H a, H b) {                                                                              \
        if (__hisnan(a)) return __hisnan(b) ? OF(0x7fffu) : b;                                               \
        if (__hisnan(b)) return a;                                                                           \
        return TO_F(a) > TO_F(b) ? a : b;                                                                    \
    }                                                                                                        \
    inline H __hmin(H a, H b) {                                                                              \
        if (__hisnan(a)) return __hisnan(b) ? OF(0x7fffu) : b;                                               \
        if (__hisnan(b)) return a;                                                                           \
        return TO_F(a) < TO_F(b) ? a : b;                                                                    \
    }                                                                                                        \
    inline H __hmax_nan(H a, H b) { return __hisnan(a) || __hisnan(b) ? OF(0x7fffu) : __hmax(a, b); }        \
    inline H __hmin_nan(H a, H b) { return __hisnan(a) || __hisnan(b) ? OF(0x7fffu) : __hmin(a, b); }        \
    inline H hsqrt(H h) { return RN(std::sqrt(TO_F(h))); }                                                   \
    inline H hrsqrt(H h) { return RN(1.0f / std::sqrt(TO_F(h))); }                                           \
    inline H hrcp(H h) { return RN(1.0f / TO_F(h)); }                                                        \
    inline H hexp(H h) { return RN(std::exp(TO_F(h))); }                                                     \
    inline H hexp2(H h) { return RN(std::exp2(TO_F(h))); }                                                   \
    inline H hexp10(H h) { return RN(std::pow(10.0f, TO_F(h))); }                                            \
    inline H hlog(H h) { return RN(std::log(TO_F(h))); }                                                     \
    inline H hlog2(H h) { return RN(std::log2(TO_F(h))); }                                                   \
    inline H hlog10(H h) { return RN(std::log10(TO_F(h))); }                                                 \
    inline H hsin(H h) { return RN(std::sin(TO_F(h))); }                                                     \
    inline H hcos(H h) { return RN(std::cos(TO_F(h))); }                                                     \
    inline H htanh(H h) { return RN(std::tanh(TO_F(h))); }                                                   \
    inline H hfloor(H h) { return RN(std::floor(TO_F(h))); }                                                 \
    inline H hceil(H h) { return RN(std::ceil(TO_F(h))); }                                                   \
    inline H htrunc(H h) { return RN(std::trunc(TO_F(h))); }                                                 \
    inline H hrint(H h) { return RN(std::nearbyint(TO_F(h))); }                                              \
    inline H2 __hadd2(H2 a, H2 b) { return H2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }                         \
    inline H2 __hsub2(H2 a, H2 b) { return H2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }                         \
    inline H2 __hmul2(H2 a, H2 b) { return H2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }                         \
    inline H2 __h2div(H2 a, H2 b) { return H2(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }                         \
    inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }         \
    inline H2 __hmax2(H2 a, H2 b) { return H2(__hmax(a.x, b.x), __hmax(a.y, b.y)); }                         \
    inline H2 __hmin2(H2 a, H2 b) { return H2(__hmin(a.x, b.x), __hmin(a.y, b.y)); }                         \
    inline H2 __hneg2(H2 a) { return H2(__hneg(a.x), __hneg(a.y)); }                                         \
    inline H2 __habs2(H2 a) { return H2(__habs(a.x), __habs(a.y)); }                                         \
    inline H2 h2sqrt(H2 a) { return H2(hsqrt(a.x), hsqrt(a.y)); }                                            \
    inline H2 h2exp(H2 a) { return H2(hexp(a.x), hexp(a.y)); }                                               \
    inline H2 h2log(H2 a) { return H2(hlog(a.x), hlog(a.y)); }                                               \
    inline bool __hbeq2(H2 a, H2 b) { return __heq(a.x, b.x) && __heq(a.y, b.y); }                           \
    inline bool __hbne2(H2 a, H2 b) { return __hne(a.x, b.x) && __hne(a.y, b.y); }                           \
    inline float __low2float(H2 a) { return TO_F(a.x); }                                                     \
    inline float __high2float(H2 a) { return TO_F(a.y); }                                                    \
    CS_HALF_LIKE_OPERATORS(H, H2, OF, ONE)

#ifndef __CUDA_NO_HALF_OPERATORS__
#define CS_HALF_LIKE_OPERATORS(H, H2, OF, ONE)                                                                   \
    inline H operator+(const H& a, const H& b) { return __hadd(a, b); }                                      \
    inline H operator-(const H& a, const H& b) { return __hsub(a, b); }                                      \
    inline H operator*(const H& a, const H& b) { return __hmul(a, b); }                                      \
    inline H operator/(const H& a, const H& b) { return __hdiv(a, b); }                                      \
    inline H& operator+=(H& a, const H& b) { return a = __hadd(a, b); }                                      \
    inline H& operator-=(H& a, const H& b) { return a = __hsub(a, b); }                                      \
    inline H& operator*=(H& a, const H& b) { return a = __hmul(a, b); }                                      \
    inline H& operator/=(H& a, const H& b) { return a = __hdiv(a, b); }                                      \
    inline H operator+(const H& a) { return a; }                                                             \
    inline H operator-(const H& a) { return __hneg(a); }                                                     \
    inline H& operator++(H& a) { return a = __hadd(a, OF(ONE)); }                                \
    inline H& operator--(H& a) { return a = __hsub(a, OF(ONE)); }                                \
    inline H operator++(H& a, int) { H r = a; ++a; return r; }                                               \
    inline H operator--(H& a, int) { H r = a; --a; return r; }                                               \
    inline bool operator==(const H& a, const H& b) { return __heq(a, b); }                                   \
    inline bool operator!=(const H& a, const H& b) { return __hneu(a, b); }                                  \
    inline bool operator<(const H& a, const H& b) { return __hlt(a, b); }                                    \
    inline bool operator<=(const H& a, const H& b) { return __hle(a, b); }                                   \
    inline bool operator>(const H& a, const H& b) { return __hgt(a, b); }                                    \
    inline bool operator>=(const H& a, const H& b) { return __hge(a, b); }                                   \
    inline H2 operator+(const H2& a, const H2& b) { return __hadd2(a, b); }                                  \
    inline H2 operator-(const H2& a, const H2& b) { return __hsub2(a, b); }                                  \
    inline H2 operator*(const H2& a, const H2& b) { return __hmul2(a, b); }                                  \
    inline H2 operator/(const H2& a, const H2& b) { return __h2div(a, b); }                                  \
    inline H2& operator+=(H2& a, const H2& b) { return a = __hadd2(a, b); }                                  \
    inline H2& operator-=(H2& a, const H2& b) { return a = __hsub2(a, b); }                                  \
    inline H2& operator*=(H2& a, const H2& b) { return a = __hmul2(a, b); }                                  \
    inline H2& operator/=(H2& a, const H2& b) { return a = __h2div(a, b); }                                  \
    inline H2 operator-(const H2& a) { return __hneg2(a); }                                                  \
    inline bool operator==(const H2& a, const H2& b) { return __hbeq2(a, b); }
#else
#define CS_HALF_LIKE_OPERATORS(H, H2, OF, ONE)
#endif

CS_HALF_LIKE_OPS(__half, __half2, __half2float, __float2half_rn, __double2half, cuda_sim::fp::bits_of,
                 cuda_sim::fp::half_of, 0x7c00u, 0x3c00u)

#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7c00u)
#define CUDART_NAN_FP16 __ushort_as_half((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_FP16 __ushort_as_half((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7bffu)
#define CUDART_NEG_ZERO_FP16 __ushort_as_half((unsigned short)0x8000u)
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000u)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3c00u)
