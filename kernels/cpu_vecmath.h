// cpu_vecmath.h: the libm functions the CPU loops (kernels/*_cpu.cpp) call from vectorised loops, by type.
//
// With MT_LIBMVEC (the build links glibc's vector math library, libmvec), the declarations below let the
// vectoriser call its vector variants: glibc declares them only under -ffast-math, which would also give up NaN and
// infinity semantics. Without it the same loops call scalar libm.
#pragma once
#include <cmath>

#ifdef MT_LIBMVEC
extern "C" {
float expf(float) __attribute__((simd("notinbranch")));
double exp(double) __attribute__((simd("notinbranch")));
float tanhf(float) __attribute__((simd("notinbranch")));
double tanh(double) __attribute__((simd("notinbranch")));
float exp2f(float) __attribute__((simd("notinbranch")));
double exp2(double) __attribute__((simd("notinbranch")));
float log1pf(float) __attribute__((simd("notinbranch")));
double log1p(double) __attribute__((simd("notinbranch")));
double erf(double) __attribute__((simd("notinbranch")));
float erfcf(float) __attribute__((simd("notinbranch")));
double erfc(double) __attribute__((simd("notinbranch")));
double log(double) __attribute__((simd("notinbranch")));
float logf(float) __attribute__((simd("notinbranch")));
double sin(double) __attribute__((simd("notinbranch")));
double tan(double) __attribute__((simd("notinbranch")));
}
#endif

namespace mt_vecmath {
inline float m_exp(float x) { return expf(x); }
inline double m_exp(double x) { return exp(x); }
inline float m_exp2(float x) { return exp2f(x); }
inline double m_exp2(double x) { return exp2(x); }
inline float m_tanh(float x) { return tanhf(x); }
inline double m_tanh(double x) { return tanh(x); }
inline float m_log1p(float x) { return log1pf(x); }
inline double m_log1p(double x) { return log1p(x); }
inline float m_erfc(float x) { return erfcf(x); }
inline double m_erfc(double x) { return erfc(x); }
}  // namespace mt_vecmath
