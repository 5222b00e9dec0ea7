// vec64_cpu.h: the 64-byte vectors the CPU kernels compute in (cnn_cpu.cpp, gemm_cpu.cpp): loads and stores at
// any address, the in-register transpose of an n x n block, and rows to lanes and back through it.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace {

typedef long long idx;

// 64 bytes of T (16 floats, 8 doubles): one AVX-512 register, two AVX ones; GCC and Clang lower the arithmetic
// to whatever the target has
template <typename T> struct Vec64 {
    typedef T type __attribute__((vector_size(64)));
    // the same vector at any address of a T: loads and stores through it are single unaligned moves (a
    // memcpy of 64 bytes may be split into halves and reloaded whole, which stalls store forwarding)
    typedef T unaligned __attribute__((vector_size(64), aligned(sizeof(T)), may_alias));
    static constexpr int n = 64 / sizeof(T);
};

template <typename T>
inline typename Vec64<T>::type vload(const T* p) {
    return *reinterpret_cast<const typename Vec64<T>::unaligned*>(p);
}

template <typename T>
inline void vstore(T* p, typename Vec64<T>::type v) {
    *reinterpret_cast<typename Vec64<T>::unaligned*>(p) = v;
}

// ---- an n x n block transposed in registers: log2(n) rounds of two-source shuffles that swap the
// off-diagonal B x B sub-blocks of each pair of rows B apart
template <typename T, int B>
inline void swap_blocks(typename Vec64<T>::type& a, typename Vec64<T>::type& b) {
    constexpr int n = Vec64<T>::n;
    typedef typename std::conditional<sizeof(T) == 4, int32_t, int64_t>::type I;
    typedef I M __attribute__((vector_size(64)));
    M lo, hi;
    for (int j = 0; j < n; ++j) {
        lo[j] = (j & B) ? n + j - B : j;
        hi[j] = (j & B) ? n + j : j + B;
    }
    typename Vec64<T>::type na = __builtin_shuffle(a, b, lo), nb = __builtin_shuffle(a, b, hi);
    a = na;
    b = nb;
}

template <typename T>
inline void transpose_block(typename Vec64<T>::type* r) {
    constexpr int n = Vec64<T>::n;
    if constexpr (n >= 16)
        for (int i = 0; i < n; ++i)
            if (!(i & 8)) swap_blocks<T, 8>(r[i], r[i + 8]);
    for (int i = 0; i < n; ++i)
        if (!(i & 4)) swap_blocks<T, 4>(r[i], r[i + 4]);
    for (int i = 0; i < n; ++i)
        if (!(i & 2)) swap_blocks<T, 2>(r[i], r[i + 2]);
    for (int i = 0; i < n; ++i)
        if (!(i & 1)) swap_blocks<T, 1>(r[i], r[i + 1]);
}

// `rows` (<= n) rows of `cols` elements (src_ld apart) into the lanes of cols vectors at dst, dst_ld apart
// (lanes past rows zero). A short row is read as a whole vector where that stays below `end` (the rest of the
// vector lands in lanes that are not stored), else element by element.
template <typename T>
void to_lanes(const T* src, idx src_ld, int rows, idx cols, T* dst, idx dst_ld, const T* end) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    for (idx c0 = 0; c0 < cols; c0 += n) {
        const idx w = cols - c0 < n ? cols - c0 : n;
        V r[n];
        for (int l = 0; l < n; ++l) {
            const T* p = src + l * src_ld + c0;
            if (l >= rows) {
                r[l] = V{};
            } else if (w == n || p + n <= end) {
                r[l] = vload(p);
            } else {
                r[l] = V{};
                for (idx j = 0; j < w; ++j) r[l][j] = p[j];
            }
        }
        transpose_block<T>(r);
        for (idx j = 0; j < w; ++j) vstore(dst + (c0 + j) * dst_ld, r[j]);
    }
}

// the inverse: the first `rows` lanes of cols vectors (src_ld apart) into rows of cols elements, dst_ld apart
template <typename T>
void from_lanes(const T* src, idx src_ld, int rows, idx cols, T* dst, idx dst_ld) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    for (idx c0 = 0; c0 < cols; c0 += n) {
        const idx w = cols - c0 < n ? cols - c0 : n;
        V r[n];
        for (int j = 0; j < n; ++j) {
            if (j < w) r[j] = vload(src + (c0 + j) * src_ld);
            else r[j] = V{};
        }
        transpose_block<T>(r);
        for (int l = 0; l < rows; ++l) {
            if (w == n) vstore(dst + l * dst_ld + c0, r[l]);
            else std::memcpy(dst + l * dst_ld + c0, &r[l], sizeof(T) * w);
        }
    }
}

}  // namespace
