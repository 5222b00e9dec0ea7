// gemm_cpu.cpp: the CPU backend's own matrix product, C = A B (+ bias), float32 and float64, for the classes of
// product where OpenBLAS is slow (few rows, small batched products with a transposed operand; the decision rule
// is backends/_gemm_native.py's, from measurements): packed panels and a register-blocked micro-kernel.
//
// Entry points (C ABI, called through ctypes by backends/_gemm_native.py, which compiles this file with the host
// C++ compiler on first use and caches the library). `dtype` is 0 for float32, 1 for float64.
//
//   mt_gemm(dtype, geo, a, b, bias, c, scratch, slot_elems, next, slot) -> 0 | < 0
//     C[b] = A[b] B[b] (+ bias) for every batch entry b; pieces: (batch entry, block of MC rows, block of NC
//     columns), shared between the calling threads through the counter `next`; each thread takes its slot of
//     the caller's scratch (slot_elems elements each, mt_gemm_scratch's size) from the counter `slot`. A piece
//     sums over K in the same order whoever computes it, so results never depend on the thread count.
//   mt_gemm_scratch(dtype, geo) -> elements of one thread's scratch | < 0 for a bad geometry
//   mt_gemm_parallel: mt_gemm's twin on the worker pool (pool_cpu.h's MT_PARALLEL: a thread count, then the same
//     arguments)
//
// `geo` is int64, kGeo values: {M, N, K, sam, sak, sbk, sbn, scm, nb, bd[4], sa[4], sb[4], sc[4], MC, NC, KC,
// NV, pack_b}: the product's sizes; the element strides of A's rows and columns, B's rows and columns and C's
// rows (C's columns are unit-stride); nb batch dims (0..4) of sizes bd with the element strides of A, B and C
// along each (0 for a broadcast operand); the piece sizes and the K block; the vectors of columns per tile
// (NV, 1..4); pack_b 1 to pack every panel of B, 0 to read B's rows where they are (only with sbn == 1: the
// last, partial panel is packed all the same). Strides may be negative. `bias`, null or N contiguous values, is
// added to every row after the sum over K (NumPy's order: the product, then the add).
//
// ---- design
// The micro-kernel keeps an R x NV tile of C in R * NV vector registers (64 bytes: 16 floats or 8 doubles) and
// walks K: per step NV vector loads of a row of B, R broadcasts of A's column, R * NV fused multiply-adds. A is
// packed per block of R rows, k-major ([k][R], so the R broadcasts read one cache line), B per panel of NV
// vectors, k-major, zero-padded past N. Packing is where every layout lands: transposed, strided or
// broadcast operands cost nothing in the kernel. The largest R per NV fills 24 to 28 of the 32 AVX-512
// registers (NV 1: 16 rows; 2: 12; 3: 8; 4: 6), leaving room for B's vectors; rows of a piece are split
// into blocks as even as the bound allows (16 rows are 2 x 8, not 12 + 4: a 4-row tile is load-bound).
// Loop order per piece: K blocks (KC) outermost, then blocks of R rows (A's packed block stays in L1), then the
// column panels (B's block, KC x NC, streams from L2).
//
// NOTE (traps met on AVX-512, as in cnn_cpu.cpp): loads and stores go through a may_alias vector type, never
// memcpy (GCC splits a 64-byte memcpy into halves, and a whole-vector reload of them stalls store forwarding);
// packed panels are read at a stride that is a multiple of 64 bytes, rows of A's block one line apart.
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "pool_cpu.h"
#include "vec64_cpu.h"

namespace {

idx take(idx* next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

constexpr int kGeo = 32;
// blocks of rows of a piece at most (the piece's rows MC are at most this many tiles)
constexpr idx kMaxBlocks = 64;
constexpr int kMaxBatchDims = 4;
constexpr int kMaxNV = 4;
// the most rows of a tile for NV vectors of columns: R * NV accumulators, NV vectors of B, out of 32 registers
constexpr int kRows[kMaxNV + 1] = {0, 16, 12, 8, 6};
// rows of B a step of the micro-kernel prefetches ahead
constexpr idx kPrefetchRows = 16;

struct Geo {
    idx M, N, K, sam, sak, sbk, sbn, scm, nb;
    idx bd[kMaxBatchDims], sa[kMaxBatchDims], sb[kMaxBatchDims], sc[kMaxBatchDims];
    idx MC, NC, KC, NV, pack_b, order, pack_a;
    idx batch() const {
        idx n = 1;
        for (int d = 0; d < nb; ++d) n *= bd[d];
        return n;
    }
};

bool read_geo(const long long* g, Geo* o) {
    o->M = g[0], o->N = g[1], o->K = g[2], o->sam = g[3], o->sak = g[4], o->sbk = g[5], o->sbn = g[6];
    o->scm = g[7], o->nb = g[8];
    for (int d = 0; d < kMaxBatchDims; ++d) {
        o->bd[d] = g[9 + d], o->sa[d] = g[13 + d], o->sb[d] = g[17 + d], o->sc[d] = g[21 + d];
        if (o->bd[d] < 0) return false;
    }
    o->MC = g[25], o->NC = g[26], o->KC = g[27], o->NV = g[28], o->pack_b = g[29], o->order = g[30];
    o->pack_a = g[31];
    return o->M >= 0 && o->N >= 0 && o->K >= 0 && o->nb >= 0 && o->nb <= kMaxBatchDims && o->MC > 0 &&
           o->NC > 0 && o->KC > 0 && o->NV >= 1 && o->NV <= kMaxNV && (o->pack_b || o->sbn == 1) && (o->pack_a || o->sam == 1 || o->sak == 1) &&
           (o->MC + kRows[o->NV] - 1) / kRows[o->NV] <= kMaxBlocks;
}

template <typename T>
constexpr idx row_stride(idx rows) {
    return (rows + Vec64<T>::n - 1) / Vec64<T>::n * Vec64<T>::n;
}

// elements of one thread's scratch: A's rows of a piece packed in blocks of R x KC (R rounded up to whole
// vectors), B's panels of KC x NC rounded up to whole panels, and a line of slack for aligning the slot
template <typename T>
idx scratch_elems(const Geo& g) {
    constexpr idx n = Vec64<T>::n;
    const idx w = g.NV * n, kc = g.KC < g.K ? g.KC : (g.K > 0 ? g.K : 1);
    const idx nc = g.NC < g.N ? g.NC : g.N, mc = g.MC < g.M ? g.MC : g.M;
    const idx a = (mc + kRows[g.NV] - 1) / kRows[g.NV] * row_stride<T>(kRows[g.NV]) * kc;
    return a + (nc + w - 1) / w * w * kc + n;
}

// ---- the micro-kernel: c[r][0 : cols] (= or +=) sum over k < kc of A(r, k) * b[k * ldb + 0 : NV * n] (+ bias[0 :
// cols] when given), r < R; `first` overwrites C, otherwise the block's sum is added to it. A(r, k) is a[r + k * sa]
// (packed, or A transposed in place), or with KROW a[r * sa + k] (A's rows in place).
template <typename T, int R, int NV, bool KROW>
void micro(idx kc, const T* __restrict__ a, idx sa, const T* __restrict__ b, idx ldb, T* c, idx ldc, idx cols,
           bool first, const T* bias) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    V acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NV; ++j) acc[r][j] = V{};
    for (idx k = 0; k < kc; ++k) {
        V bv[NV];
        // B's rows ahead: read in place they may be pages apart and cold (an LSTM's weight between two steps),
        // which the hardware prefetcher does not follow; on a packed panel the lines are already there
        for (int j = 0; j < NV; ++j) __builtin_prefetch(b + (k + kPrefetchRows) * ldb + j * n);
        for (int j = 0; j < NV; ++j) bv[j] = vload(b + k * ldb + j * n);
        for (int r = 0; r < R; ++r) {
            const T s = KROW ? a[r * sa + k] : a[r + k * sa];
            for (int j = 0; j < NV; ++j) acc[r][j] += s * bv[j];
        }
    }
    if (cols == NV * n) {
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < NV; ++j) {
                V v = acc[r][j];
                if (!first) v = vload(c + r * ldc + j * n) + v;
                if (bias) v += vload(bias + j * n);
                vstore(c + r * ldc + j * n, v);
            }
        return;
    }
    for (int r = 0; r < R; ++r) {
        T tmp[NV * n];
        for (int j = 0; j < NV; ++j) vstore(tmp + j * n, acc[r][j]);
        T* dst = c + r * ldc;
        for (idx l = 0; l < cols; ++l) {
            T v = first ? tmp[l] : dst[l] + tmp[l];
            dst[l] = bias ? v + bias[l] : v;
        }
    }
}

template <typename T>
using Micro = void (*)(idx, const T*, idx, const T*, idx, T*, idx, idx, bool, const T*);

template <typename T, int NV, bool KROW, int... R>
constexpr std::array<Micro<T>, sizeof...(R)> micros(std::integer_sequence<int, R...>) {
    return {&micro<T, R + 1, NV, KROW>...};
}

template <typename T, bool KROW>
Micro<T> micro_of(int nv, int r) {
    static constexpr auto t1 = micros<T, 1, KROW>(std::make_integer_sequence<int, kRows[1]>{});
    static constexpr auto t2 = micros<T, 2, KROW>(std::make_integer_sequence<int, kRows[2]>{});
    static constexpr auto t3 = micros<T, 3, KROW>(std::make_integer_sequence<int, kRows[3]>{});
    static constexpr auto t4 = micros<T, 4, KROW>(std::make_integer_sequence<int, kRows[4]>{});
    switch (nv) {
        case 1: return t1[r - 1];
        case 2: return t2[r - 1];
        case 3: return t3[r - 1];
        default: return t4[r - 1];
    }
}

// the kernel of r (1 .. kRows[nv]) rows and nv vectors, A's rows in place (krow) or not
template <typename T>
Micro<T> micro_for(int nv, int r, bool krow) {
    return krow ? micro_of<T, true>(nv, r) : micro_of<T, false>(nv, r);
}

// ---- packing
// rows 0 .. R - 1 of A (any strides), columns 0 .. kc - 1, into ap[k * rs + r] (rs: R rounded up to whole vectors)
template <typename T>
void pack_a(const T* a, idx sam, idx sak, idx R, idx kc, idx rs, T* __restrict__ ap) {
    constexpr int n = Vec64<T>::n;
    if (sak == 1) {
        // rows of A are runs of memory: n rows at a time turned into lanes in registers
        for (idx r0 = 0; r0 < R; r0 += n)
            to_lanes(a + r0 * sam, sam, (int)(R - r0 < n ? R - r0 : n), kc, ap + r0, rs, (const T*)nullptr);
    } else if (sam == 1) {
        for (idx k = 0; k < kc; ++k) std::memcpy(ap + k * rs, a + k * sak, sizeof(T) * R);
    } else {
        for (idx k = 0; k < kc; ++k)
            for (idx r = 0; r < R; ++r) ap[k * rs + r] = a[r * sam + k * sak];
    }
}

// columns 0 .. cols - 1 of B's rows 0 .. kc - 1 (any strides) into one panel bp[k * w + j], zeros past cols
template <typename T>
void pack_b_panel(const T* b, idx sbk, idx sbn, idx kc, idx cols, idx w, T* __restrict__ bp) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    if (sbn == 1) {
        for (idx k = 0; k < kc; ++k) {
            T* dst = bp + k * w;
            const T* src = b + k * sbk;
            idx j = 0;
            for (; j + n <= cols; j += n) vstore(dst + j, vload(src + j));
            for (; j < cols; ++j) dst[j] = src[j];
            for (; j < w; ++j) dst[j] = T(0);
        }
    } else if (sbk == 1) {
        // columns of B are runs of memory (B transposed): n columns at a time turned into lanes
        for (idx j0 = 0; j0 < w; j0 += n) {
            if (j0 >= cols) {
                for (idx k = 0; k < kc; ++k) vstore(bp + k * w + j0, V{});
            } else {
                to_lanes(b + j0 * sbn, sbn, (int)(cols - j0 < n ? cols - j0 : n), kc, bp + j0, w, (const T*)nullptr);
            }
        }
    } else {
        for (idx k = 0; k < kc; ++k)
            for (idx j = 0; j < w; ++j) bp[k * w + j] = j < cols ? b[k * sbk + j * sbn] : T(0);
    }
}

// ---- one piece: rows m0 .. m0 + mc - 1, columns n0 .. n0 + nc - 1 of one batch entry
template <typename T>
void piece(const Geo& g, const T* a, const T* b, const T* bias, T* c, idx mc, idx nc, T* scratch) {
    constexpr idx n = Vec64<T>::n;
    const int nv = (int)g.NV;
    const idx w = nv * n, rmax = kRows[nv], kcmax = g.KC < g.K ? g.KC : (g.K > 0 ? g.K : 1);
    const idx blocks = (mc + rmax - 1) / rmax;
    T* ap = scratch;
    T* bp = scratch + blocks * row_stride<T>(rmax) * kcmax;
    const idx panels = (nc + w - 1) / w, full = g.pack_b ? 0 : nc / w;  // panels read where they are
    const idx kblocks = g.K > 0 ? (g.K + g.KC - 1) / g.KC : 1;
    for (idx kb = 0; kb < kblocks; ++kb) {
        const idx k0 = kb * g.KC, kc = g.K - k0 < g.KC ? g.K - k0 : g.KC;
        const bool first = kb == 0;
        const T* bs = kb == kblocks - 1 ? bias : nullptr;
        for (idx p = full; p < panels; ++p) {
            const idx cols = nc - p * w < w ? nc - p * w : w;
            pack_b_panel(b + k0 * g.sbk + p * w * g.sbn, g.sbk, g.sbn, kc, cols, w, bp + p * w * kc);
        }
        // A's rows in blocks as even as the bound allows, each packed k-major unless read where they are
        idx r0s[kMaxBlocks], rows_of[kMaxBlocks];
        for (idx blk = 0, r0 = 0; blk < blocks; ++blk) {
            const idx rows = mc / blocks + (blk < mc % blocks ? 1 : 0);
            r0s[blk] = r0, rows_of[blk] = rows;
            if (g.pack_a)
                pack_a(a + r0 * g.sam + k0 * g.sak, g.sam, g.sak, rows, kc, row_stride<T>(rows),
                       ap + blk * row_stride<T>(rmax) * kcmax);
            r0 += rows;
        }
        const bool krow = !g.pack_a && g.sam != 1;  // in place: rows (sak == 1) or columns (sam == 1) are runs
        auto tile = [&](idx blk, idx p) {
            const idx rows = rows_of[blk], cols = nc - p * w < w ? nc - p * w : w;
            T* cp = c + r0s[blk] * g.scm + p * w;
            const T* at = g.pack_a ? ap + blk * row_stride<T>(rmax) * kcmax : a + r0s[blk] * g.sam + k0 * g.sak;
            const idx sa = g.pack_a ? row_stride<T>(rows) : (krow ? g.sam : g.sak);
            const T* bsp = bs ? bs + p * w : nullptr;
            const Micro<T> kern = micro_for<T>(nv, (int)rows, krow);
            if (p < full) kern(kc, at, sa, b + k0 * g.sbk + p * w, g.sbk, cp, g.scm, cols, first, bsp);
            else kern(kc, at, sa, bp + p * w * kc, w, cp, g.scm, cols, first, bsp);
        };
        if (g.order == 0) {
            for (idx blk = 0; blk < blocks; ++blk)
                for (idx p = 0; p < panels; ++p) tile(blk, p);
        } else {
            for (idx p = 0; p < panels; ++p)
                for (idx blk = 0; blk < blocks; ++blk) tile(blk, p);
        }
    }
}

template <typename T>
int gemm(const long long* geo, const T* a, const T* b, const T* bias, T* c, T* scratch, idx slot_elems, idx* next,
         idx* slot) {
    Geo g;
    if (!read_geo(geo, &g)) return -1;
    if (slot_elems < scratch_elems<T>(g)) return -2;
    const idx ni = g.M > 0 ? (g.M + g.MC - 1) / g.MC : 0, nj = g.N > 0 ? (g.N + g.NC - 1) / g.NC : 0;
    const idx total = g.batch() * ni * nj;
    T* mine = nullptr;
    for (idx p = take(next); p < total; p = take(next)) {
        if (!mine) {
            mine = scratch + take(slot) * slot_elems;
            // the slot's panels start on a 64-byte line
            mine += (idx)((64 - (uintptr_t)mine % 64) % 64 / sizeof(T));
        }
        const idx j = p % nj, i = p / nj % ni;
        idx e = p / (nj * ni), oa = 0, ob = 0, oc = 0;
        for (int d = (int)g.nb - 1; d >= 0; --d) {
            const idx q = e % g.bd[d];
            e /= g.bd[d];
            oa += q * g.sa[d], ob += q * g.sb[d], oc += q * g.sc[d];
        }
        const idx m0 = i * g.MC, n0 = j * g.NC;
        const idx mc = g.M - m0 < g.MC ? g.M - m0 : g.MC, nc = g.N - n0 < g.NC ? g.N - n0 : g.NC;
        piece<T>(g, a + oa + m0 * g.sam, b + ob + n0 * g.sbn, bias ? bias + n0 : nullptr, c + oc + m0 * g.scm + n0,
                 mc, nc, mine);
    }
    return 0;
}

}  // namespace

// the width of the vectors the micro-kernel's 64-byte arithmetic compiles to here: the decision rule compares it
// with BLAS's (backends/_gemm_native.py)
extern "C" int mt_gemm_vector_bits() {
#if defined(__AVX512F__)
    return 512;
#elif defined(__AVX__) || defined(__ARM_FEATURE_SVE)
    return 256;
#else
    return 128;
#endif
}

extern "C" long long mt_gemm_scratch(int dtype, const long long* geo) {
    Geo g;
    if (!read_geo(geo, &g)) return -1;
    return dtype == 0 ? scratch_elems<float>(g) : dtype == 1 ? scratch_elems<double>(g) : -1;
}

extern "C" int mt_gemm(int dtype, const long long* geo, const void* a, const void* b, const void* bias, void* c,
                       void* scratch, long long slot_elems, long long* next, long long* slot) {
    if (dtype == 0)
        return gemm<float>(geo, (const float*)a, (const float*)b, (const float*)bias, (float*)c, (float*)scratch,
                           slot_elems, next, slot);
    if (dtype == 1)
        return gemm<double>(geo, (const double*)a, (const double*)b, (const double*)bias, (double*)c,
                            (double*)scratch, slot_elems, next, slot);
    return -3;
}

MT_PARALLEL(mt_gemm)
