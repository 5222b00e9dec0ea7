// half.cu: the simulator's host <cuda_fp16.h> and <cuda_bf16.h>, one kernel per group of intrinsics.
//   to_half<F> / to_bf16<F>   float or double -> 16 bits in the four rounding modes (_rn, _rz, _rd, _ru)
//   half_to_float, bf16_to_float   every bit pattern back to float
//   half_ops<H>               + - * / fma max min (and the _nan forms) of two arrays of H, through the intrinsics
//   half_operators<H>         the same four through the C++ operators, and comparisons as a bit mask
//   half2_lanes<H2>           pair conversions and lane-wise arithmetic
//   half_ints                 integer <-> half conversions
//   half_atomic_add           atomicAdd on __half and __nv_bfloat16 (CAS loop)
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define GRID_STRIDE(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                               i += (long long)blockDim.x * gridDim.x)

template <typename F>
__global__ void to_half(long long n, const F* x, unsigned short* out) {
    GRID_STRIDE(i, n) {
        F v = x[i];
        if constexpr (sizeof(F) == 4) {
            out[4 * i] = __half_as_ushort(__float2half_rn(v));
            out[4 * i + 1] = __half_as_ushort(__float2half_rz(v));
            out[4 * i + 2] = __half_as_ushort(__float2half_rd(v));
            out[4 * i + 3] = __half_as_ushort(__float2half_ru(v));
        } else {
            out[4 * i] = __half_as_ushort(__double2half(v));
            out[4 * i + 1] = __half_as_ushort(__half(v));  // the conversion constructor rounds to nearest too
            out[4 * i + 2] = out[4 * i];
            out[4 * i + 3] = out[4 * i];
        }
    }
}

template <typename F>
__global__ void to_bf16(long long n, const F* x, unsigned short* out) {
    GRID_STRIDE(i, n) {
        F v = x[i];
        if constexpr (sizeof(F) == 4) {
            out[4 * i] = __bfloat16_as_ushort(__float2bfloat16(v));
            out[4 * i + 1] = __bfloat16_as_ushort(__float2bfloat16_rz(v));
            out[4 * i + 2] = __bfloat16_as_ushort(__float2bfloat16_rd(v));
            out[4 * i + 3] = __bfloat16_as_ushort(__float2bfloat16_ru(v));
        } else {
            out[4 * i] = __bfloat16_as_ushort(__double2bfloat16(v));
            out[4 * i + 1] = __bfloat16_as_ushort(__nv_bfloat16(v));
            out[4 * i + 2] = out[4 * i];
            out[4 * i + 3] = out[4 * i];
        }
    }
}

extern "C" __global__ void half_to_float(long long n, const __half* x, float* y, float* y_operator) {
    GRID_STRIDE(i, n) {
        y[i] = __half2float(x[i]);
        y_operator[i] = x[i];  // operator float
    }
}

extern "C" __global__ void bf16_to_float(long long n, const __nv_bfloat16* x, float* y, float* y_operator) {
    GRID_STRIDE(i, n) {
        y[i] = __bfloat162float(x[i]);
        y_operator[i] = x[i];
    }
}

template <typename H>
__global__ void half_ops(long long n, const H* a, const H* b, const H* c, H* out) {
    GRID_STRIDE(i, n) {
        H* o = out + 9 * i;
        o[0] = __hadd(a[i], b[i]);
        o[1] = __hsub(a[i], b[i]);
        o[2] = __hmul(a[i], b[i]);
        o[3] = __hdiv(a[i], b[i]);
        o[4] = __hfma(a[i], b[i], c[i]);
        o[5] = __hmax(a[i], b[i]);
        o[6] = __hmin(a[i], b[i]);
        o[7] = __hmax_nan(a[i], b[i]);
        o[8] = __hmin_nan(a[i], b[i]);
    }
}

template <typename H>
__global__ void half_operators(long long n, const H* a, const H* b, H* out, int* cmp) {
    GRID_STRIDE(i, n) {
        H x = a[i], y = b[i];
        out[4 * i] = x + y;
        out[4 * i + 1] = x - y;
        H t = x;
        t *= y;
        out[4 * i + 2] = t;
        out[4 * i + 3] = x / y;
        cmp[i] = (x == y) | (x != y) << 1 | (x < y) << 2 | (x <= y) << 3 | (x > y) << 4 | (x >= y) << 5 |
                 __hisnan(x) << 6 | (__hisinf(x) & 3) << 7 | __hequ(x, y) << 9 | __hne(x, y) << 10;
    }
}

template <typename H2>
__global__ void half2_lanes(long long n, const float* x, float* out) {
    GRID_STRIDE(i, n) {
        H2 p, q;
        if constexpr (sizeof(p.x) == 2 && std::is_same_v<H2, __half2>) {
            p = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
            q = __float2half2_rn(x[2 * i + 1]);
        } else {
            p = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
            q = __float2bfloat162_rn(x[2 * i + 1]);
        }
        H2 s = __hfma2(p, q, p);  // p * q + p, lane by lane
        out[4 * i] = __low2float(s);
        out[4 * i + 1] = __high2float(s);
        H2 d = __hneg2(p - q);
        out[4 * i + 2] = __low2float(d);
        out[4 * i + 3] = __high2float(d);
    }
}

extern "C" __global__ void half_ints(long long n, const int* v, const float* f, unsigned short* h, int* back) {
    GRID_STRIDE(i, n) {
        h[2 * i] = __half_as_ushort(__int2half_rn(v[i]));
        h[2 * i + 1] = __bfloat16_as_ushort(__int2bfloat16_rn(v[i]));
        back[4 * i] = __half2int_rz(__float2half_rn(f[i]));
        back[4 * i + 1] = __half2int_rn(__float2half_rn(f[i]));
        back[4 * i + 2] = __bfloat162int_rd(__float2bfloat16_rn(f[i]));
        back[4 * i + 3] = int(__float2half_rn(f[i]));  // operator int truncates
    }
}

extern "C" __global__ void half_atomic_add(long long n, __half* h, __nv_bfloat16* b) {
    GRID_STRIDE(i, n) {
        atomicAdd(h + (i % 2), __float2half_rn(1.0f));
        atomicAdd(b + (i % 2), __float2bfloat16_rn(1.0f));
    }
}
