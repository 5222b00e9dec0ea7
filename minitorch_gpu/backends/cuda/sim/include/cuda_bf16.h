// cuda_bf16.h for simulated device code: __nv_bfloat16 and __nv_bfloat162 as host types with the device's
// results (see cuda_fp16.h next to this file, which this header includes as the toolkit's does).
//   - conversions to bfloat16 round as asked (_rn to nearest even, _rz, _rd, _ru) in one rounding, with IEEE
//     overflow and subnormals kept; a NaN becomes the canonical NaN 0x7fff;
//   - bfloat16 -> float is the 16-bit shift the device does (exact; a NaN keeps its payload);
//   - arithmetic in float rounded once (float's 24 bits exceed twice bfloat16's 8 plus 2, so this is the device's
//     correctly rounded result), fma through double.
#pragma once

#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

namespace cuda_sim {
namespace fp {
inline float bf16_to_float(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace fp
}  // namespace cuda_sim

#ifdef __CUDA_NO_BFLOAT16_CONVERSIONS__
#define CS_IF_CONVERSIONS_BF16(...)
#else
#define CS_IF_CONVERSIONS_BF16(...) __VA_ARGS__
#endif
CS_HALF_LIKE_CLASSES(__nv_bfloat16, __nv_bfloat16_raw, __nv_bfloat162, __nv_bfloat162_raw, 8, 7,
                     cuda_sim::fp::bf16_to_float, BF16)

typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

namespace cuda_sim {
template <>
struct sim_kind<__nv_bfloat16> {
    static constexpr const char* value = "bf2";
};
namespace fp {
inline __nv_bfloat16 bf16_of(uint16_t bits) { return __nv_bfloat16(__nv_bfloat16_raw{bits}); }
inline uint16_t bits_of(__nv_bfloat16 h) { return __nv_bfloat16_raw(h).x; }
template <Round R>
inline __nv_bfloat16 bf(float f) { return bf16_of(from_float<8, 7>(f, R)); }
}  // namespace fp
}  // namespace cuda_sim

// ------------------------------------------------------------------------------------------ conversions
inline __nv_bfloat16 __float2bfloat16(float f) { return cuda_sim::fp::bf<cuda_sim::fp::RN>(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return cuda_sim::fp::bf<cuda_sim::fp::RN>(f); }
inline __nv_bfloat16 __float2bfloat16_rz(float f) { return cuda_sim::fp::bf<cuda_sim::fp::RZ>(f); }
inline __nv_bfloat16 __float2bfloat16_rd(float f) { return cuda_sim::fp::bf<cuda_sim::fp::RD>(f); }
inline __nv_bfloat16 __float2bfloat16_ru(float f) { return cuda_sim::fp::bf<cuda_sim::fp::RU>(f); }
inline __nv_bfloat16 __double2bfloat16(double d) {
    return cuda_sim::fp::bf16_of(cuda_sim::fp::from_double<8, 7>(d, cuda_sim::fp::RN));
}
inline float __bfloat162float(__nv_bfloat16 h) { return cuda_sim::fp::bf16_to_float(cuda_sim::fp::bits_of(h)); }
inline __nv_bfloat162 __float2bfloat162_rn(float f) {
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    return __nv_bfloat162(h, h);
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__float2bfloat16_rn(a), __float2bfloat16_rn(b));
}
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
inline __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.x); }
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }

#define CS_BF16_FROM_INT(NAME, T, KIND)                                                                      \
    inline __nv_bfloat16 NAME##_rn(T v) { return cuda_sim::fp::bf16_of(cuda_sim::fp::KIND<8, 7>(v, cuda_sim::fp::RN)); } \
    inline __nv_bfloat16 NAME##_rz(T v) { return cuda_sim::fp::bf16_of(cuda_sim::fp::KIND<8, 7>(v, cuda_sim::fp::RZ)); } \
    inline __nv_bfloat16 NAME##_rd(T v) { return cuda_sim::fp::bf16_of(cuda_sim::fp::KIND<8, 7>(v, cuda_sim::fp::RD)); } \
    inline __nv_bfloat16 NAME##_ru(T v) { return cuda_sim::fp::bf16_of(cuda_sim::fp::KIND<8, 7>(v, cuda_sim::fp::RU)); }
CS_BF16_FROM_INT(__int2bfloat16, int, from_signed)
CS_BF16_FROM_INT(__uint2bfloat16, unsigned int, from_unsigned)
CS_BF16_FROM_INT(__short2bfloat16, short, from_signed)
CS_BF16_FROM_INT(__ushort2bfloat16, unsigned short, from_unsigned)
CS_BF16_FROM_INT(__ll2bfloat16, long long, from_signed)
CS_BF16_FROM_INT(__ull2bfloat16, unsigned long long, from_unsigned)
#undef CS_BF16_FROM_INT

#define CS_BF16_TO_INT(NAME, T)                                                                              \
    inline T NAME##_rn(__nv_bfloat16 h) { return cuda_sim::fp::to_int<T>(__bfloat162float(h), cuda_sim::fp::RN); } \
    inline T NAME##_rz(__nv_bfloat16 h) { return cuda_sim::fp::to_int<T>(__bfloat162float(h), cuda_sim::fp::RZ); } \
    inline T NAME##_rd(__nv_bfloat16 h) { return cuda_sim::fp::to_int<T>(__bfloat162float(h), cuda_sim::fp::RD); } \
    inline T NAME##_ru(__nv_bfloat16 h) { return cuda_sim::fp::to_int<T>(__bfloat162float(h), cuda_sim::fp::RU); }
CS_BF16_TO_INT(__bfloat162int, int)
CS_BF16_TO_INT(__bfloat162uint, unsigned int)
CS_BF16_TO_INT(__bfloat162short, short)
CS_BF16_TO_INT(__bfloat162ushort, unsigned short)
CS_BF16_TO_INT(__bfloat162ll, long long)
CS_BF16_TO_INT(__bfloat162ull, unsigned long long)
#undef CS_BF16_TO_INT

inline short __bfloat16_as_short(__nv_bfloat16 h) { return short(cuda_sim::fp::bits_of(h)); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return cuda_sim::fp::bits_of(h); }
inline __nv_bfloat16 __short_as_bfloat16(short v) { return cuda_sim::fp::bf16_of(uint16_t(v)); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short v) { return cuda_sim::fp::bf16_of(v); }

// ------------------------------------------------------------------------------------------ arithmetic
CS_HALF_LIKE_OPS(__nv_bfloat16, __nv_bfloat162, __bfloat162float, __float2bfloat16_rn, __double2bfloat16,
                 cuda_sim::fp::bits_of, cuda_sim::fp::bf16_of, 0x7f80u, 0x3f80u)

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7f80u)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7fffu)
#define CUDART_MIN_DENORM_BF16 __ushort_as_bfloat16((unsigned short)0x0001u)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7f7fu)
#define CUDART_NEG_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x8000u)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000u)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3f80u)
