// rows_cpu.cpp: the row operations of a transformer for the CPU backend, each in one pass over memory: layer norm
// and its backward, softmax / log_softmax over the last dim (with attention's scale and causal, additive or boolean
// mask applied in the same pass) and their backward, and cross-entropy over class indices with the gradient of the
// logits written in the same pass (as kernels/cross_entropy.cu does on the GPU).
//
// NumPy needs five passes for a layer norm forward and about eight for its backward (one per ufunc, each with its
// temporary), and the same again for a masked softmax; a row here is read from memory once and stays in the first
// cache level for the rest of its passes.
//
// Entry points (C ABI, called through ctypes by backends/_rows_native.py, which compiles this file with the host C++
// compiler on first use and caches the library). `dtype` is 0 for float32, 1 for float64; arrays are C-contiguous
// (rows, n) unless said otherwise. Every entry works on pieces of `piece_rows` rows taken from the counter `next`
// (starting at 0) shared by the threads of one call, so results never depend on how many threads ran. Each returns
// 0, or < 0 for arguments it rejects (-1), or a target outside [0, C) (-2). Nothing here allocates or locks. Each
// has a parallel twin `<entry>_parallel` on the worker pool (pool_cpu.h's MT_PARALLEL: a thread count first).
//
//   mt_rows_layer_norm_forward(dtype, rows, n, x, w, b, eps, y, mean, rstd, piece_rows, next)
//     y = (x - mean) * rstd * w + b per row, rstd = 1 / sqrt(var + eps), var the biased variance; the statistics
//     are summed in double (two passes: the mean, then the squares of the centred values) and saved in the dtype;
//     w and b may be null.
//   mt_rows_layer_norm_backward(dtype, rows, n, g, x, w, mean, rstd, dx, dw_part, db_part, piece_rows, next)
//     dx = rstd * (dxhat - xhat * mean(dxhat xhat) - mean(dxhat)), dxhat = g w, xhat = (x - mean) rstd (row means in
//     double); piece p writes sum(g xhat) and sum(g) over its rows to row p of dw_part / db_part ((pieces, n); the
//     caller adds the rows in a fixed order). dx, w, dw_part, db_part may be null.
//   mt_rows_softmax_forward(dtype, log, safe, rows, n, x, scale, causal, mask_kind, mask, mdesc, y, piece_rows, next)
//     softmax (log = 0) or log_softmax (log = 1) of v = x * scale + mask over each row. mask_kind 0: none;
//     1: additive, of x's dtype; 2: boolean (uint8, 1 takes part, 0 gives -inf). The mask is read through
//     mdesc = {nd, size[nd], stride[nd]}: the row index split over the dims `size` (row-major, their product is
//     rows) gives the mask's row at sum(coord * stride) elements; within a row the mask is contiguous. causal > 0:
//     the rows are queries of matrices of `causal` rows, and query q sees keys 0..q only (top-left aligned, as
//     PyTorch's is_causal). safe = 1: a row with no key left (its maximum -inf) gives zeros, attention's safe
//     softmax; else the NaN of exp(-inf - -inf). y may be x.
//   mt_rows_softmax_backward(dtype, log, rows, n, y, g, scale, dx, piece_rows, next)
//     from the output y: dx = (g - sum(g y)) y scale (softmax), (g - exp(y) sum(g)) scale (log_softmax). dx may
//     be g.
//   mt_rows_cross_entropy(dtype, rows, C, x, target, weight, ignore_index, smoothing, loss, rowmax, lse, dlogits,
//                         piece_rows, next)
//     per row i with target t (int64), m = max_j x_j, l = log sum_j exp(x_j - m), w the class weights (ones when
//     weight is null), W = sum w, s = smoothing:
//       loss_i = (1 - s) w_t ((m - x_t) + l) + (s / C) (W l - sum_j w_j (x_j - m)), 0 for t == ignore_index;
//     rowmax_i = m, lse_i = l (what the backward below needs). With dlogits (else null) the same pass writes the
//     gradient of sum_i loss_i: a (p - onehot(t)) + b (p W - w), a = (1 - s) w_t, b = s / C, p = exp((x - m) - l);
//     an ignored row gets zeros.
//   mt_rows_cross_entropy_backward(dtype, rows, C, x, target, weight, ignore_index, smoothing, rowmax, lse, gout,
//                                  gstride, scale, dx, piece_rows, next)
//     that gradient from the saved rowmax and lse, times gout[i * gstride] * scale (gstride 0: one value for all).
//
// The NumPy bodies (backends/_nn.py, backends/_reduce.py) are the reference, and tests compare the two. The sums
// here run in 16 lanes added pairwise at the end (float32 sums of layer norm's statistics in double), so results
// differ from NumPy's in the last bits; exp is glibc's vector exp (MT_LIBMVEC) where the build finds it.
//
// v1: one row per step of a piece, the row's passes in the first-level cache.
// v2: exp's clamp below its range made to stay (a masked softmax 2.4x faster, a causal one 1.2x).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>

#include "cpu_vecmath.h"
#include "pool_cpu.h"

namespace {

using idx = long long;
using mt_vecmath::m_exp;

constexpr int kLanes = 16;  // one 64-byte vector of float32: a row's tail is padded to whole blocks of these
constexpr int kMaxDims = 8;
constexpr idx kChunk = 512;  // elements of stack scratch for exps that are summed but not kept

idx take(idx* next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

// body(p, begin, end) for each piece p (rows [begin, end)) this thread takes from the shared counter
template <typename F> void each_piece(idx rows, idx piece, idx* next, F&& body) {
    for (idx p = take(next); p * piece < rows; p = take(next)) body(p, p * piece, std::min(rows, (p + 1) * piece));
}

template <typename T> inline T neg_inf() { return -std::numeric_limits<T>::infinity(); }

// The reductions below are `omp simd` loops (-fopenmp-simd: the pragma only, no runtime): the vectoriser may keep
// one partial sum per lane and add them at the end, an order fixed by the build, so a row's result never depends
// on the thread count. Without the flag they are plain loops in order, vectorised where the compiler can.

template <typename T> bool any_nan(const T* v, idx n) {
    for (idx j = 0; j < n; ++j)
        if (v[j] != v[j]) return true;
    return false;
}

// the row's maximum; a NaN is passed over (it makes the row's exp sum NaN, which then reaches every output)
template <typename T> T row_max(const T* v, idx n) {
    T m = neg_inf<T>();
#pragma omp simd reduction(max : m)
    for (idx j = 0; j < n; ++j) m = v[j] > m ? v[j] : m;
    return m;
}

template <typename A, typename T> A row_sum(const T* v, idx n) {
    A s = 0;
#pragma omp simd reduction(+ : s)
    for (idx j = 0; j < n; ++j) s += (A)v[j];
    return s;
}

template <typename A, typename T> A row_dot(const T* a, const T* b, idx n) {
    A s = 0;
#pragma omp simd reduction(+ : s)
    for (idx j = 0; j < n; ++j) s += (A)a[j] * (A)b[j];
    return s;
}

// sum((v - c)^2) in A
template <typename A, typename T> A row_centred_squares(const T* v, A c, idx n) {
    A s = 0;
#pragma omp simd reduction(+ : s)
    for (idx j = 0; j < n; ++j) {
        A d = (A)v[j] - c;
        s += d * d;
    }
    return s;
}

// At or below this argument exp gives 0 here (float32: 1e-35, double: 1e-304 and less; nothing a sum of 1 or more
// keeps). NOTE: glibc's vector exp hands every lane outside its range (a masked key's -inf among them) to the
// scalar exp one at a time, which made a masked softmax up to four times as slow as a full one; arguments are
// clamped into the range and the result selected to 0 instead.
template <typename T> inline T exp_floor() { return (T)(sizeof(T) == 4 ? -80.0 : -700.0); }

// out = exp(in - m) over whole blocks of lanes, returning the sum: a loop the vectoriser turns into calls of the
// vector exp. NOTE: kept out of line, so that the one-block call on a padded tail runs the same vector code
// instead of a scalar exp per element (rows of 33 or 65 elements spend most of their time there otherwise)
template <typename T> __attribute__((noinline)) T exp_sum_blocks(const T* in, T m, T* out, idx blocks) {
    const T lo = exp_floor<T>();
    T acc[kLanes] = {};
    for (idx b = 0; b < blocks; ++b) {
        const T* ib = in + b * kLanes;
        T* ob = out + b * kLanes;
        // NOTE: a loop of exactly one block: a vectoriser free to pick its width unrolled a flat loop to two
        // vectors, and a row of one block then ran the scalar remainder loop
        int low = 0;
#pragma omp simd reduction(| : low)
        for (int k = 0; k < kLanes; ++k) low |= ib[k] - m < lo;
        if (!low) {
#pragma omp simd
            for (int k = 0; k < kLanes; ++k) {
                const T e = m_exp(ib[k] - m);  // a NaN goes through
                ob[k] = e;
                acc[k] += e;
            }
            continue;
        }
        // NOTE: the clamped arguments pass through memory the compiler must assume changed: written as one
        // expression, it sees that the clamp only alters lanes the select discards, drops it, and the vector exp
        // gets the -inf (GCC 12 did)
        T c[kLanes];
#pragma omp simd
        for (int k = 0; k < kLanes; ++k) {
            const T a = ib[k] - m;
            c[k] = a < lo ? lo : a;  // a NaN goes through
        }
        asm volatile("" : : "r"(c) : "memory");
#pragma omp simd
        for (int k = 0; k < kLanes; ++k) {
            const T e = c[k] == lo ? (T)0 : m_exp(c[k]);
            ob[k] = e;
            acc[k] += e;
        }
    }
    for (int w = kLanes / 2; w > 0; w /= 2)
        for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
    return acc[0];
}

// out = exp(in - m) (out may be in), returning sum(out); m must be finite or +inf (the tail's padding is -inf, whose
// exp adds 0)
template <typename T> T exp_shifted(const T* in, T m, T* out, idx n) {
    const idx full = n / kLanes;
    T s = exp_sum_blocks(in, m, out, full);
    const idx rest = n - full * kLanes;
    if (rest) {
        T buf[kLanes];
        for (int k = 0; k < kLanes; ++k) buf[k] = k < rest ? in[full * kLanes + k] : neg_inf<T>();
        s += exp_sum_blocks(buf, m, buf, 1);
        std::memcpy(out + full * kLanes, buf, sizeof(T) * rest);
    }
    return s;
}

// sum(exp(v - m)) with the exps written only to a chunk of scratch on the stack
template <typename T> T sum_exp_shifted(const T* v, T m, idx n) {
    T buf[kChunk];
    T s = 0;
    for (idx j0 = 0; j0 < n; j0 += kChunk) s += exp_shifted(v + j0, m, buf, n - j0 < kChunk ? n - j0 : kChunk);
    return s;
}

// ------------------------------------------------------------------------------------------ layer norm
template <typename T>
void ln_forward_row(const T* x, const T* w, const T* b, T* y, idx n, double eps, T* mean_out, T* rstd_out) {
    double mean = row_sum<double>(x, n) / (double)n;
    double var = row_centred_squares<double>(x, mean, n) / (double)n;
    T mf = (T)mean;
    T rf = (T)(1.0 / std::sqrt(var + eps));
    *mean_out = mf;
    *rstd_out = rf;
    if (w && b) {
        for (idx j = 0; j < n; ++j) y[j] = (x[j] - mf) * rf * w[j] + b[j];
    } else if (w) {
        for (idx j = 0; j < n; ++j) y[j] = (x[j] - mf) * rf * w[j];
    } else if (b) {
        for (idx j = 0; j < n; ++j) y[j] = (x[j] - mf) * rf + b[j];
    } else {
        for (idx j = 0; j < n; ++j) y[j] = (x[j] - mf) * rf;
    }
}

template <typename T>
int ln_forward(idx rows, idx n, const T* x, const T* w, const T* b, double eps, T* y, T* mean, T* rstd, idx piece,
               idx* next) {
    each_piece(rows, piece, next, [&](idx, idx begin, idx end) {
        for (idx r = begin; r < end; ++r)
            ln_forward_row(x + r * n, w, b, y + r * n, n, eps, mean + r, rstd + r);
    });
    return 0;
}

template <typename T>
int ln_backward(idx rows, idx n, const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, T* dw,
                T* db, idx piece, idx* next) {
    const double inv_n = 1.0 / (double)n;
    each_piece(rows, piece, next, [&](idx p, idx begin, idx end) {
        T* pw = dw ? dw + p * n : nullptr;
        T* pb = db ? db + p * n : nullptr;
        if (pw) std::memset(pw, 0, sizeof(T) * n);
        if (pb) std::memset(pb, 0, sizeof(T) * n);
        for (idx r = begin; r < end; ++r) {
            const T* gr = g + r * n;
            const T* xr = x + r * n;
            const T mf = mean[r], rf = rstd[r];
            if (pw)
                for (idx j = 0; j < n; ++j) pw[j] += gr[j] * ((xr[j] - mf) * rf);
            if (pb)
                for (idx j = 0; j < n; ++j) pb[j] += gr[j];
            if (!dx) continue;
            // the row sums of dxhat and dxhat * xhat, in double; dxhat and xhat formed again in the second loop
            // (the row is in the first-level cache) rather than kept in a scratch row
            double a1 = 0, a2 = 0;
            if (w) {
#pragma omp simd reduction(+ : a1, a2)
                for (idx j = 0; j < n; ++j) {
                    T d = gr[j] * w[j];
                    a1 += (double)d;
                    a2 += (double)d * (double)((xr[j] - mf) * rf);
                }
            } else {
#pragma omp simd reduction(+ : a1, a2)
                for (idx j = 0; j < n; ++j) {
                    a1 += (double)gr[j];
                    a2 += (double)gr[j] * (double)((xr[j] - mf) * rf);
                }
            }
            const T c1 = (T)(a1 * inv_n), c2 = (T)(a2 * inv_n);
            T* dr = dx + r * n;
            if (w) {
                for (idx i = 0; i < n; ++i) dr[i] = ((gr[i] * w[i] - ((xr[i] - mf) * rf) * c2) - c1) * rf;
            } else {
                for (idx i = 0; i < n; ++i) dr[i] = ((gr[i] - ((xr[i] - mf) * rf) * c2) - c1) * rf;
            }
        }
    });
    return 0;
}

// ------------------------------------------------------------------------------------------ softmax
struct MaskDesc {
    int nd = 0;
    idx size[kMaxDims] = {};
    idx stride[kMaxDims] = {};

    // the element offset of row r's mask
    idx offset(idx r) const {
        idx off = 0;
        for (int d = nd - 1; d >= 0; --d) {
            idx q = r / size[d];
            off += (r - q * size[d]) * stride[d];
            r = q;
        }
        return off;
    }
};

bool read_mask(const idx* desc, idx rows, MaskDesc* m) {
    if (!desc) return false;
    if (desc[0] < 0 || desc[0] > kMaxDims) return false;
    m->nd = (int)desc[0];
    idx total = 1;
    for (int d = 0; d < m->nd; ++d) {
        m->size[d] = desc[1 + d];
        m->stride[d] = desc[1 + m->nd + d];
        if (m->size[d] <= 0) return false;
        total *= m->size[d];
    }
    return total == rows;
}

template <typename T>
void softmax_row(const T* x, T* y, idx n, T scale, idx keys, idx span, int mask_kind, const T* madd,
                 const uint8_t* mbool, bool log, bool safe) {
    // v = x * scale + mask into y over the first `span` keys (-inf from `keys` on: the keys after the query when
    // causal) with its maximum, then exp(v - max) and their sum, and the division by the sum as a product; the keys
    // from `span` on only receive the result of a masked key
    const T* v = y;
    T m = neg_inf<T>();
    const T ninf = neg_inf<T>();
    if (mask_kind == 1) {
#pragma omp simd reduction(max : m)
        for (idx j = 0; j < span; ++j) {
            T t = j < keys ? x[j] * scale + madd[j] : ninf;
            y[j] = t;
            m = t > m ? t : m;
        }
    } else if (mask_kind == 2) {
#pragma omp simd reduction(max : m)
        for (idx j = 0; j < span; ++j) {
            T t = j < keys && mbool[j] ? x[j] * scale : ninf;
            y[j] = t;
            m = t > m ? t : m;
        }
    } else if (scale != (T)1 || span != keys) {
#pragma omp simd reduction(max : m)
        for (idx j = 0; j < span; ++j) {
            T t = j < keys ? x[j] * scale : ninf;
            y[j] = t;
            m = t > m ? t : m;
        }
    } else {
        m = row_max(x, span);
        v = x;
    }
    if (safe && m == ninf && !any_nan(v, span)) {
        // no key takes part: zeros (softmax), -inf (log_softmax); a NaN score still makes the row NaN
        const T fill = log ? ninf : (T)0;
        for (idx j = 0; j < n; ++j) y[j] = fill;
        return;
    }
    if (log) {
        T l = std::log(sum_exp_shifted(v, m, span));
        for (idx j = 0; j < span; ++j) y[j] = (v[j] - m) - l;
        for (idx j = span; j < n; ++j) y[j] = ninf;
        return;
    }
    const T r = (T)1 / exp_shifted(v, m, y, span);
    for (idx j = 0; j < span; ++j) y[j] = y[j] * r;
    for (idx j = span; j < n; ++j) y[j] = (T)0;
}

template <typename T>
int softmax_forward(int log, int safe, idx rows, idx n, const T* x, double scale, idx causal, int mask_kind,
                    const void* mask, const idx* mdesc, T* y, idx piece, idx* next) {
    MaskDesc md;
    if (mask_kind != 0 && (!mask || !read_mask(mdesc, rows, &md))) return -1;
    if (mask_kind < 0 || mask_kind > 2 || causal < 0) return -1;
    const T sc = (T)scale;
    each_piece(rows, piece, next, [&](idx, idx begin, idx end) {
        // the query of the piece's first row (one 64-bit division per piece, not per row)
        idx q = causal ? begin % causal : 0;
        for (idx r = begin; r < end; ++r) {
            idx keys = n;
            if (causal) {
                keys = q + 1 < n ? q + 1 : n;
                q = q + 1 == causal ? 0 : q + 1;
            }
            const idx span = (keys + kLanes - 1) / kLanes * kLanes < n ? (keys + kLanes - 1) / kLanes * kLanes : n;
            const T* madd = nullptr;
            const uint8_t* mbool = nullptr;
            if (mask_kind == 1) madd = (const T*)mask + md.offset(r);
            if (mask_kind == 2) mbool = (const uint8_t*)mask + md.offset(r);
            softmax_row(x + r * n, y + r * n, n, sc, keys, span, mask_kind, madd, mbool, log != 0, safe != 0);
        }
    });
    return 0;
}

template <typename T>
int softmax_backward(int log, idx rows, idx n, const T* y, const T* g, double scale, T* dx, idx piece, idx* next) {
    const T sc = (T)scale;
    each_piece(rows, piece, next, [&](idx, idx begin, idx end) {
        for (idx r = begin; r < end; ++r) {
            const T* yr = y + r * n;
            const T* gr = g + r * n;
            T* dr = dx + r * n;
            if (log) {
                // the sum first (dx may be g), then exp(y) a chunk at a time into scratch on the stack
                const T s = row_sum<T>(gr, n);
                constexpr idx kChunk = 512;
                T buf[kChunk];
                for (idx j0 = 0; j0 < n; j0 += kChunk) {
                    const idx len = n - j0 < kChunk ? n - j0 : kChunk;
                    exp_shifted(yr + j0, (T)0, buf, len);
                    if (sc == (T)1) {
                        for (idx j = 0; j < len; ++j) dr[j0 + j] = gr[j0 + j] - buf[j] * s;
                    } else {
                        for (idx j = 0; j < len; ++j) dr[j0 + j] = (gr[j0 + j] - buf[j] * s) * sc;
                    }
                }
            } else {
                T d = row_dot<T>(gr, yr, n);
                if (sc == (T)1) {
                    for (idx j = 0; j < n; ++j) dr[j] = (gr[j] - d) * yr[j];
                } else {
                    for (idx j = 0; j < n; ++j) dr[j] = (gr[j] - d) * yr[j] * sc;
                }
            }
        }
    });
    return 0;
}

// ------------------------------------------------------------------------------------------ cross-entropy
// d = go (a (p - onehot(t)) + b (p W - w)) for one row, p = exp((x - m) - l)
template <typename T>
void ce_grad_row(const T* xr, idx C, idx t, const T* w, T m, T l, T a, T b, T wall, T go, T* dr) {
    const T ga = go * a, gb = go * b;
    for (idx j = 0; j < C; ++j) dr[j] = xr[j] - m;
    exp_shifted(dr, l, dr, C);
    if (b != (T)0) {
        if (w) {
            for (idx j = 0; j < C; ++j) dr[j] = ga * dr[j] + gb * (dr[j] * wall - w[j]);
        } else {
            for (idx j = 0; j < C; ++j) dr[j] = ga * dr[j] + gb * (dr[j] * wall - (T)1);
        }
    } else {
        for (idx j = 0; j < C; ++j) dr[j] = ga * dr[j];
    }
    dr[t] -= ga;
}

// the per-call constants: smoothing s, the class weights' total W (C without weights), b = s / C
template <typename T> struct CeConsts {
    T s, wall, b;
    CeConsts(const T* w, idx C, double smoothing)
        : s((T)smoothing), wall(w ? row_sum<T>(w, C) : (T)C), b((T)smoothing / (T)C) {}
};

template <typename T>
int cross_entropy(idx rows, idx C, const T* x, const int64_t* target, const T* w, idx ignore, double smoothing,
                  T* loss, T* rowmax, T* lse, T* dlogits, idx piece, idx* next) {
    const CeConsts<T> k(w, C, smoothing);
    const T s = k.s, wall = k.wall, b = k.b;
    int rc = 0;
    each_piece(rows, piece, next, [&](idx, idx begin, idx end) {
        for (idx r = begin; r < end; ++r) {
            const T* xr = x + r * C;
            const idx t = target[r];
            const bool ignored = t == ignore;
            T m = row_max(xr, C);
            T l = std::log(sum_exp_shifted(xr, m, C));
            rowmax[r] = m;
            lse[r] = l;
            if (ignored) {
                loss[r] = (T)0;
                if (dlogits) std::memset(dlogits + r * C, 0, sizeof(T) * C);
                continue;
            }
            if (t < 0 || t >= C) {
                // the functional layer checks the range first: this only keeps memory safe
                rc = -2;
                loss[r] = std::numeric_limits<T>::quiet_NaN();
                if (dlogits) std::memset(dlogits + r * C, 0, sizeof(T) * C);
                continue;
            }
            const T wt = w ? w[t] : (T)1;
            const T a = ((T)1 - s) * wt;
            T out = a * ((m - xr[t]) + l);
            if (s != (T)0) {
                // sum_j w_j (x_j - m) = sum_j w_j x_j - m W
                T wx = w ? row_dot<T>(w, xr, C) : row_sum<T>(xr, C);
                out += b * (wall * l - (wx - m * wall));
            }
            loss[r] = out;
            if (dlogits) ce_grad_row(xr, C, t, w, m, l, a, b, wall, (T)1, dlogits + r * C);
        }
    });
    return rc;
}

template <typename T>
int cross_entropy_backward(idx rows, idx C, const T* x, const int64_t* target, const T* w, idx ignore,
                           double smoothing, const T* rowmax, const T* lse, const T* gout, idx gstride, double scale,
                           T* dx, idx piece, idx* next) {
    const CeConsts<T> k(w, C, smoothing);
    int rc = 0;
    each_piece(rows, piece, next, [&](idx, idx begin, idx end) {
        for (idx r = begin; r < end; ++r) {
            const idx t = target[r];
            T* dr = dx + r * C;
            if (t == ignore || t < 0 || t >= C) {
                if (t != ignore) rc = -2;
                std::memset(dr, 0, sizeof(T) * C);
                continue;
            }
            const T a = ((T)1 - k.s) * (w ? w[t] : (T)1);
            const T go = (T)(gout[r * gstride] * (T)scale);
            ce_grad_row(x + r * C, C, t, w, rowmax[r], lse[r], a, k.b, k.wall, go, dr);
        }
    });
    return rc;
}

}  // namespace

#define MT_DISPATCH(call_f, call_d) \
    if (dtype == 0) return call_f;  \
    if (dtype == 1) return call_d;  \
    return -1

extern "C" int mt_rows_layer_norm_forward(int dtype, idx rows, idx n, const void* x, const void* w, const void* b,
                                          double eps, void* y, void* mean, void* rstd, idx piece, idx* next) {
    if (rows < 0 || n <= 0 || piece <= 0) return -1;
    MT_DISPATCH(ln_forward(rows, n, (const float*)x, (const float*)w, (const float*)b, eps, (float*)y, (float*)mean,
                           (float*)rstd, piece, next),
                ln_forward(rows, n, (const double*)x, (const double*)w, (const double*)b, eps, (double*)y,
                           (double*)mean, (double*)rstd, piece, next));
}

extern "C" int mt_rows_layer_norm_backward(int dtype, idx rows, idx n, const void* g, const void* x, const void* w,
                                           const void* mean, const void* rstd, void* dx, void* dw, void* db,
                                           idx piece, idx* next) {
    if (rows < 0 || n <= 0 || piece <= 0) return -1;
    MT_DISPATCH(ln_backward(rows, n, (const float*)g, (const float*)x, (const float*)w, (const float*)mean,
                            (const float*)rstd, (float*)dx, (float*)dw, (float*)db, piece, next),
                ln_backward(rows, n, (const double*)g, (const double*)x, (const double*)w, (const double*)mean,
                            (const double*)rstd, (double*)dx, (double*)dw, (double*)db, piece, next));
}

extern "C" int mt_rows_softmax_forward(int dtype, int log, int safe, idx rows, idx n, const void* x, double scale,
                                       idx causal, int mask_kind, const void* mask, const idx* mdesc, void* y,
                                       idx piece, idx* next) {
    if (rows < 0 || n <= 0 || piece <= 0) return -1;
    MT_DISPATCH(softmax_forward(log, safe, rows, n, (const float*)x, scale, causal, mask_kind, mask, mdesc, (float*)y,
                                piece, next),
                softmax_forward(log, safe, rows, n, (const double*)x, scale, causal, mask_kind, mask, mdesc,
                                (double*)y, piece, next));
}

extern "C" int mt_rows_softmax_backward(int dtype, int log, idx rows, idx n, const void* y, const void* g,
                                        double scale, void* dx, idx piece, idx* next) {
    if (rows < 0 || n <= 0 || piece <= 0) return -1;
    MT_DISPATCH(softmax_backward(log, rows, n, (const float*)y, (const float*)g, scale, (float*)dx, piece, next),
                softmax_backward(log, rows, n, (const double*)y, (const double*)g, scale, (double*)dx, piece, next));
}

extern "C" int mt_rows_cross_entropy(int dtype, idx rows, idx C, const void* x, const int64_t* target, const void* w,
                                     idx ignore, double smoothing, void* loss, void* rowmax, void* lse, void* dlogits,
                                     idx piece, idx* next) {
    if (rows < 0 || C <= 0 || piece <= 0) return -1;
    MT_DISPATCH(cross_entropy(rows, C, (const float*)x, target, (const float*)w, ignore, smoothing, (float*)loss,
                              (float*)rowmax, (float*)lse, (float*)dlogits, piece, next),
                cross_entropy(rows, C, (const double*)x, target, (const double*)w, ignore, smoothing, (double*)loss,
                              (double*)rowmax, (double*)lse, (double*)dlogits, piece, next));
}

extern "C" int mt_rows_cross_entropy_backward(int dtype, idx rows, idx C, const void* x, const int64_t* target,
                                              const void* w, idx ignore, double smoothing, const void* rowmax,
                                              const void* lse, const void* gout, idx gstride, double scale, void* dx,
                                              idx piece, idx* next) {
    if (rows < 0 || C <= 0 || piece <= 0 || gstride < 0) return -1;
    MT_DISPATCH(cross_entropy_backward(rows, C, (const float*)x, target, (const float*)w, ignore, smoothing,
                                       (const float*)rowmax, (const float*)lse, (const float*)gout, gstride, scale,
                                       (float*)dx, piece, next),
                cross_entropy_backward(rows, C, (const double*)x, target, (const double*)w, ignore, smoothing,
                                       (const double*)rowmax, (const double*)lse, (const double*)gout, gstride,
                                       scale, (double*)dx, piece, next));
}

// the parallel twins (pool_cpu.h)
MT_PARALLEL(mt_rows_layer_norm_forward)
MT_PARALLEL(mt_rows_layer_norm_backward)
MT_PARALLEL(mt_rows_softmax_forward)
MT_PARALLEL(mt_rows_softmax_backward)
MT_PARALLEL(mt_rows_cross_entropy)
MT_PARALLEL(mt_rows_cross_entropy_backward)
