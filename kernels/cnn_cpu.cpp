// cnn_cpu.cpp: the CPU loops around the matrix products of a convolution, and the one-pass max pooling and
// batch norm of a convolutional network.
//
// Entry points (C ABI, called through ctypes by backends/_cnn_native.py, which compiles this file with the host
// C++ compiler on first use and caches the library). `dtype` is 0 for float32, 1 for float64. Every entry takes
// a counter `next` shared by the threads working on one call (starting at 0): each call takes pieces from it
// until none are left, so results never depend on how many threads ran or who did which piece. This code
// takes no locks and allocates nothing.
//
//   mt_cnn_im2col(dtype, geo, x, batch, cols, next) -> 0 | < 0
//     the columns of `batch` samples, (C * kD * kH * kW, batch * oD * oH * oW) row-major: row
//     ((c * kD + kd) * kH + kh) * kW + kw holds, for every sample b and output position o, the input element
//     under kernel tap (kd, kh, kw) of channel c (0 in the padding). Pieces: channels.
//   mt_cnn_col2im(dtype, geo, cols, batch, dx, next) -> 0 | < 0
//     the adjoint: every (sample, channel) plane of dx is zeroed, then each column entry is added to the
//     input element it was read from, kernel taps in ascending order (the order of the NumPy fallback, so
//     both give identical sums). Pieces: (sample, channel) planes.
//   mt_cnn_max_pool_forward(dtype, geo, x, planes, y, indices, next) -> 0 | < 0
//     max and flat in-plane index (int64) of every window of `planes` contiguous planes; PyTorch's rules: a
//     NaN wins (the last NaN of a window, as PyTorch's CPU loop takes it), ties go to the first element, and a
//     window with no finite maximum reports its first element inside the input. Pieces: 64 planes.
//   mt_cnn_max_pool_backward(dtype, geo, g, indices, planes, dx, next) -> 0 | < 0
//     dx zeroed, then every output gradient added at its index, in output order. Pieces: 64 planes.
//   mt_cnn_batch_norm_forward(dtype, n, c, s, x, w, b, eps, y, mean, var, rstd, next) -> 0 | < 0
//     training batch norm of x (n, c, s): per channel the mean, then the biased variance of the centred values
//     (two passes, sums in double), y = x * scale + shift with scale = rstd * w, shift = b - mean * scale
//     (w, b may be null). mean, var and rstd in x's dtype. Pieces: channels.
//   mt_cnn_batch_norm_backward(dtype, n, c, s, g, x, w, mean, rstd, dx, dw, db, next) -> 0 | < 0
//     per channel sum(g) and sum(g * (x - mean)) in one pass (sums in double), then
//     dx = (g - sum(g) / m - (x - mean) * rstd^2 * sum(g * (x - mean)) / m) * rstd * w, m = n * s;
//     dw = rstd * sum(g * (x - mean)), db = sum(g). dx, dw, db may each be null. Pieces: channels.
//
// `geo` is int64: {C, D, H, W, kD, kH, kW, sD, sH, sW, pD, pH, pW, dD, dH, dW, oD, oH, oW, xs_n, xs_c}: the
// channels handled, the input's spatial size, kernel, stride, low padding, dilation, the output's spatial
// size, then the element strides between samples and between channels of the image (x or dx; each plane is
// contiguous). 1-d and 2-d problems set the missing leading dims to 1 (stride 1, padding 0, dilation 1).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

typedef long long idx;

struct Geo {
    idx C, D, H, W, kD, kH, kW, sD, sH, sW, pD, pH, pW, dD, dH, dW, oD, oH, oW, xsn, xsc;
    idx S() const { return D * H * W; }
    idx L() const { return oD * oH * oW; }
    idx K() const { return kD * kH * kW; }
};

constexpr int kGeo = 21;

bool read_geo(const long long* g, Geo* out) {
    for (int i = 0; i < kGeo; ++i)
        if (g[i] < (i >= 13 && i <= 15 ? 1 : 0)) return false;
    *out = Geo{g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
               g[13], g[14], g[15], g[16], g[17], g[18], g[19], g[20]};
    return out->sD > 0 && out->sH > 0 && out->sW > 0;
}

idx take(idx* next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

// The output positions ow in [lo, hi) whose input column ow * s + off lies in [0, n).
void valid_range(idx o, idx s, idx off, idx n, idx* lo, idx* hi) {
    idx a = off >= 0 ? 0 : (-off + s - 1) / s;
    idx b = n - off <= 0 ? 0 : (n - off + s - 1) / s;
    if (a > o) a = o;
    if (b > o) b = o;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

// ------------------------------------------------------------------------------------------- im2col / col2im
template <typename T>
void im2col_channel(const Geo& g, const T* x, idx batch, T* cols, idx c) {
    const idx L = g.L(), ld = batch * L;
    for (idx kd = 0; kd < g.kD; ++kd)
        for (idx kh = 0; kh < g.kH; ++kh)
            for (idx kw = 0; kw < g.kW; ++kw) {
                T* row = cols + (((c * g.kD + kd) * g.kH + kh) * g.kW + kw) * ld;
                idx off_w = kw * g.dW - g.pW, lo, hi;
                valid_range(g.oW, g.sW, off_w, g.W, &lo, &hi);
                for (idx b = 0; b < batch; ++b) {
                    const T* plane = x + b * g.xsn + c * g.xsc;
                    T* dst = row + b * L;
                    for (idx od = 0; od < g.oD; ++od) {
                        idx id = od * g.sD - g.pD + kd * g.dD;
                        for (idx oh = 0; oh < g.oH; ++oh, dst += g.oW) {
                            idx ih = oh * g.sH - g.pH + kh * g.dH;
                            if (id < 0 || id >= g.D || ih < 0 || ih >= g.H) {
                                std::memset(dst, 0, sizeof(T) * g.oW);
                                continue;
                            }
                            const T* src = plane + (id * g.H + ih) * g.W + off_w;
                            for (idx ow = 0; ow < lo; ++ow) dst[ow] = T(0);
                            if (g.sW == 1) {
                                std::memcpy(dst + lo, src + lo, sizeof(T) * (hi - lo));
                            } else {
                                for (idx ow = lo; ow < hi; ++ow) dst[ow] = src[ow * g.sW];
                            }
                            for (idx ow = hi; ow < g.oW; ++ow) dst[ow] = T(0);
                        }
                    }
                }
            }
}

template <typename T>
void col2im_plane(const Geo& g, const T* cols, idx batch, T* dx, idx p) {
    const idx L = g.L(), ld = batch * L;
    const idx b = p / g.C, c = p % g.C;
    T* plane = dx + b * g.xsn + c * g.xsc;
    std::memset(plane, 0, sizeof(T) * g.S());
    for (idx kd = 0; kd < g.kD; ++kd)
        for (idx kh = 0; kh < g.kH; ++kh)
            for (idx kw = 0; kw < g.kW; ++kw) {
                const T* src = cols + (((c * g.kD + kd) * g.kH + kh) * g.kW + kw) * ld + b * L;
                idx off_w = kw * g.dW - g.pW, lo, hi;
                valid_range(g.oW, g.sW, off_w, g.W, &lo, &hi);
                for (idx od = 0; od < g.oD; ++od) {
                    idx id = od * g.sD - g.pD + kd * g.dD;
                    for (idx oh = 0; oh < g.oH; ++oh, src += g.oW) {
                        idx ih = oh * g.sH - g.pH + kh * g.dH;
                        if (id < 0 || id >= g.D || ih < 0 || ih >= g.H) continue;
                        T* dst = plane + (id * g.H + ih) * g.W + off_w;
                        if (g.sW == 1) {
                            for (idx ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
                        } else {
                            for (idx ow = lo; ow < hi; ++ow) dst[ow * g.sW] += src[ow];
                        }
                    }
                }
            }
}

// ------------------------------------------------------------------------------------------- direct convolution
// A 2-d convolution at stride 1 on an input padded beforehand (so every tap of every output is inside it):
// outputs in tiles of kOutCh channels x kTiles * kVec positions of one row, accumulated in registers over the
// input channels and taps with fused multiply-adds; the position loops are fixed-size, so they vectorise.
constexpr int kOutCh = 8;

// 64 bytes of T (16 floats, 8 doubles): one AVX-512 register, two AVX ones; GCC and Clang lower the arithmetic
// to whatever the target has
template <typename T> struct Vec64 {
    typedef T type __attribute__((vector_size(64)));
    static constexpr int n = 64 / sizeof(T);
};

template <typename T, int NT>
void direct_tile(const T* xp, idx C, idx Hp, idx Wp, const T* w, idx kH, idx kW, idx dH, idx dW, idx oc,
                 const T* bias, idx oh, idx ow0, idx width, T* y, idx ystride, idx oW) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    V acc[kOutCh][NT];
    for (int o = 0; o < kOutCh; ++o)
        for (int t = 0; t < NT; ++t) acc[o][t] = V{} + ((bias && o < oc) ? bias[o] : T(0));
    const idx K = kH * kW;
    for (idx c = 0; c < C; ++c) {
        const T* plane = xp + c * Hp * Wp;
        const T* wc = w + c * K * kOutCh;
        for (idx kh = 0; kh < kH; ++kh) {
            const T* row = plane + (oh + kh * dH) * Wp + ow0;
            for (idx kw = 0; kw < kW; ++kw) {
                V in[NT];
                for (int t = 0; t < NT; ++t) std::memcpy(&in[t], row + kw * dW + t * n, sizeof(V));
                const T* wk = wc + (kh * kW + kw) * kOutCh;
                for (int o = 0; o < kOutCh; ++o) {
                    const T wv = wk[o];
                    for (int t = 0; t < NT; ++t) acc[o][t] += wv * in[t];
                }
            }
        }
    }
    for (int o = 0; o < oc; ++o) {
        T* dst = y + o * ystride + oh * oW + ow0;
        if (width == NT * n) {
            std::memcpy(dst, &acc[o][0], sizeof(acc[o]));
        } else {
            T tmp[NT * n];
            std::memcpy(tmp, &acc[o][0], sizeof(tmp));
            for (idx l = 0; l < width; ++l) dst[l] = tmp[l];
        }
    }
}

// Pieces: (sample, block of kOutCh output channels). args: {batch, C, Hp, Wp, O, kH, kW, dH, dW, oH, oW, sample
// stride of xp, sample stride of y}. xp: the padded input's first channel of this group, (C, Hp, Wp) per sample,
// read for ow up to the next multiple of the vector width past oW (the caller pads the rows that far); w: the
// group's weight packed as (ceil(O / kOutCh), C, kH, kW, kOutCh), zeros past O; bias (O) or null; y: the
// output's first channel of this group, (O, oH, oW) per sample.
template <typename T>
int direct_conv(const long long* a, const T* xp, const T* w, const T* bias, T* y, idx* next) {
    const idx batch = a[0], C = a[1], Hp = a[2], Wp = a[3], O = a[4], kH = a[5], kW = a[6], dH = a[7], dW = a[8],
              oH = a[9], oW = a[10], xsn = a[11], ysn = a[12];
    constexpr int n = Vec64<T>::n;
    if (batch < 0 || C < 0 || O < 0 || kH < 1 || kW < 1 || dH < 1 || dW < 1 || oH < 0 || oW < 0) return -1;
    if (oH + (kH - 1) * dH > Hp || (oW + n - 1) / n * n + (kW - 1) * dW > Wp) return -2;
    const idx blocks = (O + kOutCh - 1) / kOutCh, K = kH * kW;
    for (;;) {
        idx piece = take(next);
        if (piece >= batch * blocks) return 0;
        const idx s = piece / blocks, o0 = piece % blocks * kOutCh;
        const idx oc = O - o0 < kOutCh ? O - o0 : kOutCh;
        const T* xs = xp + s * xsn;
        T* ys = y + s * ysn + o0 * oH * oW;
        const T* b = bias ? bias + o0 : nullptr;
        const T* wo = w + o0 * C * K;  // the block's packed weights: kOutCh per tap
        for (idx oh = 0; oh < oH; ++oh) {
            idx ow = 0;
            for (; ow + 2 * n <= oW; ow += 2 * n)
                direct_tile<T, 2>(xs, C, Hp, Wp, wo, kH, kW, dH, dW, oc, b, oh, ow, 2 * n, ys, oH * oW, oW);
            for (; ow < oW; ow += n)
                direct_tile<T, 1>(xs, C, Hp, Wp, wo, kH, kW, dH, dW, oc, b, oh, ow, oW - ow < n ? oW - ow : n, ys,
                                  oH * oW, oW);
        }
    }
}

// The weight gradient of the same convolution: dw[o, c, tap] = sum over samples and output positions of
// g[o, position] * xp[c, position + tap offset]. Pieces: (block of kGradOut output channels, input channel,
// group of up to kGradTaps taps); each keeps kGradOut x kGradTaps vector accumulators across every sample and
// row, and adds their lanes at the end (a fixed order: the result does not depend on the threads).
constexpr int kGradOut = 3;
constexpr int kGradTaps = 9;

template <typename T>
int direct_conv_weight_grad(const long long* a, const T* xp, const T* g, T* dw, idx* next) {
    // {batch, C, Hp, Wp, O, kH, kW, dH, dW, oH, oW, sample stride of xp, sample stride of g}; g: the output
    // gradient's first channel of this group, (O, oH, oW) per sample; dw: (O, C, kH, kW) of this group. Whole
    // vectors of a row first, its last oW % n positions one by one (padding them with zeros would multiply
    // zeros by the input there, and 0 * inf is NaN where PyTorch has no product at all).
    const idx batch = a[0], C = a[1], Hp = a[2], Wp = a[3], O = a[4], kH = a[5], kW = a[6], dH = a[7], dW = a[8],
              oH = a[9], oW = a[10], xsn = a[11], gsn = a[12];
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    if (batch < 0 || C < 0 || O < 0 || kH < 1 || kW < 1 || dH < 1 || dW < 1 || oH < 0 || oW < 0) return -1;
    if (oH + (kH - 1) * dH > Hp || oW + (kW - 1) * dW > Wp) return -2;
    const idx K = kH * kW, oblocks = (O + kGradOut - 1) / kGradOut, tgroups = (K + kGradTaps - 1) / kGradTaps;
    const idx full = oW / n * n;
    for (;;) {
        idx piece = take(next);
        if (piece >= oblocks * C * tgroups) return 0;
        const idx o0 = piece / (C * tgroups) * kGradOut, c = piece / tgroups % C, t0 = piece % tgroups * kGradTaps;
        const int oc = (int)(O - o0 < kGradOut ? O - o0 : kGradOut);
        const int tc = (int)(K - t0 < kGradTaps ? K - t0 : kGradTaps);
        idx off[kGradTaps];
        for (int t = 0; t < tc; ++t) off[t] = (t0 + t) / kW * dH * Wp + (t0 + t) % kW * dW;
        V acc[kGradOut][kGradTaps];
        T tail[kGradOut][kGradTaps];
        for (int o = 0; o < kGradOut; ++o)
            for (int t = 0; t < kGradTaps; ++t) {
                acc[o][t] = V{};
                tail[o][t] = T(0);
            }
        for (idx s = 0; s < batch; ++s) {
            const T* xs = xp + s * xsn + c * Hp * Wp;
            const T* gs = g + s * gsn + o0 * oH * oW;
            for (idx oh = 0; oh < oH; ++oh) {
                const T* xr = xs + oh * Wp;
                for (idx ow = 0; ow < full; ow += n) {
                    V gv[kGradOut];
                    for (int o = 0; o < kGradOut; ++o) {
                        if (o < oc) std::memcpy(&gv[o], gs + (o * oH + oh) * oW + ow, sizeof(V));
                        else gv[o] = V{};
                    }
                    for (int t = 0; t < kGradTaps; ++t) {
                        if (t >= tc) break;
                        V xv;
                        std::memcpy(&xv, xr + off[t] + ow, sizeof(V));
                        for (int o = 0; o < kGradOut; ++o) acc[o][t] += gv[o] * xv;
                    }
                }
                for (idx ow = full; ow < oW; ++ow)
                    for (int o = 0; o < oc; ++o) {
                        const T gs1 = gs[(o * oH + oh) * oW + ow];
                        for (int t = 0; t < tc; ++t) tail[o][t] += gs1 * xr[off[t] + ow];
                    }
            }
        }
        for (int o = 0; o < oc; ++o)
            for (int t = 0; t < tc; ++t) {
                T lanes[n], sum = 0;
                std::memcpy(lanes, &acc[o][t], sizeof(lanes));
                for (int l = 0; l < n; ++l) sum += lanes[l];
                dw[((o0 + o) * C + c) * K + t0 + t] = sum + tail[o][t];
            }
    }
}

// ------------------------------------------------------------------------------------------- max pooling
constexpr idx kPlanesPerPiece = 64;

// One output row at a time, kernel taps in the outer loops and the row's outputs in the inner one (which the
// compiler vectorises); each output still sees its taps in raster order, as PyTorch's loop does.
template <typename T>
void max_pool_plane(const Geo& g, const T* x, T* y, int64_t* ind) {
    for (idx od = 0; od < g.oD; ++od) {
        idx d0 = od * g.sD - g.pD, fd = d0;
        while (fd < 0) fd += g.dD;
        for (idx oh = 0; oh < g.oH; ++oh, y += g.oW, ind += g.oW) {
            idx h0 = oh * g.sH - g.pH, fh = h0;
            while (fh < 0) fh += g.dH;
            // nothing beats -inf: the index reported is the window's first tap inside the input
            for (idx ow = 0; ow < g.oW; ++ow) {
                idx fw = ow * g.sW - g.pW;
                while (fw < 0) fw += g.dW;
                y[ow] = -std::numeric_limits<T>::infinity();
                ind[ow] = (fd * g.H + fh) * g.W + fw;
            }
            for (idx kd = 0; kd < g.kD; ++kd) {
                idx id = d0 + kd * g.dD;
                if (id < 0 || id >= g.D) continue;
                for (idx kh = 0; kh < g.kH; ++kh) {
                    idx ih = h0 + kh * g.dH;
                    if (ih < 0 || ih >= g.H) continue;
                    const idx row = (id * g.H + ih) * g.W;
                    for (idx kw = 0; kw < g.kW; ++kw) {
                        idx off = kw * g.dW - g.pW, lo, hi;
                        valid_range(g.oW, g.sW, off, g.W, &lo, &hi);
                        const T* src = x + row + off;
                        for (idx ow = lo; ow < hi; ++ow) {
                            T v = src[ow * g.sW];
                            if (v > y[ow] || v != v) {
                                y[ow] = v;
                                ind[ow] = row + off + ow * g.sW;
                            }
                        }
                    }
                }
            }
        }
    }
}

template <typename T>
int max_pool_forward(const Geo& g, const T* x, idx planes, T* y, int64_t* ind, idx* next) {
    const idx S = g.S(), L = g.L();
    for (;;) {
        idx p0 = take(next) * kPlanesPerPiece;
        if (p0 >= planes) return 0;
        idx p1 = p0 + kPlanesPerPiece < planes ? p0 + kPlanesPerPiece : planes;
        for (idx p = p0; p < p1; ++p) max_pool_plane(g, x + p * S, y + p * L, ind + p * L);
    }
}

template <typename T>
int max_pool_backward(const Geo& g, const T* gy, const int64_t* ind, idx planes, T* dx, idx* next) {
    const idx S = g.S(), L = g.L();
    for (;;) {
        idx p0 = take(next) * kPlanesPerPiece;
        if (p0 >= planes) return 0;
        idx p1 = p0 + kPlanesPerPiece < planes ? p0 + kPlanesPerPiece : planes;
        for (idx p = p0; p < p1; ++p) {
            T* plane = dx + p * S;
            std::memset(plane, 0, sizeof(T) * S);
            const T* src = gy + p * L;
            const int64_t* at = ind + p * L;
            for (idx o = 0; o < L; ++o) {
                if (at[o] < 0 || at[o] >= S) return -3;
                plane[at[o]] += src[o];
            }
        }
    }
}

// ------------------------------------------------------------------------------------------- batch norm
// Sums over a channel's n runs of s elements (f(i, j): the term of element j of run i) in kLanes independent
// double accumulators: the compiler vectorises independent lanes (never a single running sum, whose order it
// must keep), and the lanes are added in a fixed order at the end, so the result does not depend on the
// thread that computes it.
constexpr int kLanes = 16;

template <class F>
double lane_sum(idx n, idx s, F f) {
    double acc[kLanes] = {0};
    for (idx i = 0; i < n; ++i) {
        idx j = 0;
        for (; j + kLanes <= s; j += kLanes)
            for (int l = 0; l < kLanes; ++l) acc[l] += f(i, j + l);
        for (; j < s; ++j) acc[j % kLanes] += f(i, j);
    }
    double total = 0;
    for (int l = 0; l < kLanes; ++l) total += acc[l];
    return total;
}

// Two such sums in one pass: (sum of f, sum of h).
template <class F, class H>
void lane_sums(idx n, idx s, F f, H h, double* sf, double* sh) {
    double a[kLanes] = {0}, b[kLanes] = {0};
    for (idx i = 0; i < n; ++i) {
        idx j = 0;
        for (; j + kLanes <= s; j += kLanes)
            for (int l = 0; l < kLanes; ++l) {
                a[l] += f(i, j + l);
                b[l] += h(i, j + l);
            }
        for (; j < s; ++j) {
            a[j % kLanes] += f(i, j);
            b[j % kLanes] += h(i, j);
        }
    }
    *sf = *sh = 0;
    for (int l = 0; l < kLanes; ++l) {
        *sf += a[l];
        *sh += b[l];
    }
}

template <typename T>
int batch_norm_forward(idx n, idx c, idx s, const T* x, const T* w, const T* b, double eps, T* y, T* mean,
                       T* var, T* rstd, idx* next) {
    const idx stride = c * s;
    const double m = (double)(n * s);
    for (;;) {
        idx ch = take(next);
        if (ch >= c) return 0;
        const T* xc = x + ch * s;
        double mu = lane_sum(n, s, [=](idx i, idx j) { return (double)xc[i * stride + j]; }) / m;
        double v = lane_sum(n, s, [=](idx i, idx j) {
            double d = (double)xc[i * stride + j] - mu;
            return d * d;
        }) / m;
        double r = 1.0 / std::sqrt(v + eps);
        mean[ch] = (T)mu;
        var[ch] = (T)v;
        rstd[ch] = (T)r;
        double sc = w ? r * (double)w[ch] : r;
        T scale = (T)sc, shift = (T)((b ? (double)b[ch] : 0.0) - mu * sc);
        for (idx i = 0; i < n; ++i) {
            const T* src = xc + i * stride;
            T* dst = y + ch * s + i * stride;
            for (idx j = 0; j < s; ++j) dst[j] = src[j] * scale + shift;
        }
    }
}

template <typename T>
int batch_norm_backward(idx n, idx c, idx s, const T* g, const T* x, const T* w, const T* mean, const T* rstd,
                        T* dx, T* dw, T* db, idx* next) {
    const idx stride = c * s;
    const double m = (double)(n * s);
    for (;;) {
        idx ch = take(next);
        if (ch >= c) return 0;
        const T* gc = g + ch * s;
        const T* xc = x + ch * s;
        const T mu = mean[ch];
        double sum_g, sum_gx;
        lane_sums(
            n, s, [=](idx i, idx j) { return (double)gc[i * stride + j]; },
            [=](idx i, idx j) { return (double)gc[i * stride + j] * (double)(xc[i * stride + j] - mu); }, &sum_g,
            &sum_gx);
        double r = (double)rstd[ch];
        if (dw) dw[ch] = (T)(sum_gx * r);
        if (db) db[ch] = (T)sum_g;
        if (!dx) continue;
        double scale = w ? r * (double)w[ch] : r;
        T k = (T)(sum_gx * r * r / m), mean_g = (T)(sum_g / m), sc = (T)scale;
        for (idx i = 0; i < n; ++i) {
            const T* gr = gc + i * stride;
            const T* xr = xc + i * stride;
            T* dr = dx + ch * s + i * stride;
            for (idx j = 0; j < s; ++j) dr[j] = (gr[j] - mean_g - (xr[j] - mu) * k) * sc;
        }
    }
}

}  // namespace

extern "C" int mt_cnn_im2col(int dtype, const long long* geo, const void* x, long long batch, void* cols,
                             long long* next) {
    Geo g;
    if (!read_geo(geo, &g) || batch < 0 || (dtype != 0 && dtype != 1)) return -1;
    for (;;) {
        idx c = take(next);
        if (c >= g.C) return 0;
        if (dtype == 0) im2col_channel(g, (const float*)x, batch, (float*)cols, c);
        else im2col_channel(g, (const double*)x, batch, (double*)cols, c);
    }
}

extern "C" int mt_cnn_col2im(int dtype, const long long* geo, const void* cols, long long batch, void* dx,
                             long long* next) {
    Geo g;
    if (!read_geo(geo, &g) || batch < 0 || (dtype != 0 && dtype != 1)) return -1;
    for (;;) {
        idx p = take(next);
        if (p >= batch * g.C) return 0;
        if (dtype == 0) col2im_plane(g, (const float*)cols, batch, (float*)dx, p);
        else col2im_plane(g, (const double*)cols, batch, (double*)dx, p);
    }
}

extern "C" int mt_cnn_direct_conv(int dtype, const long long* args, const void* xp, const void* w, const void* bias,
                                  void* y, long long* next) {
    if (dtype == 0) return direct_conv(args, (const float*)xp, (const float*)w, (const float*)bias, (float*)y, next);
    if (dtype == 1)
        return direct_conv(args, (const double*)xp, (const double*)w, (const double*)bias, (double*)y, next);
    return -1;
}

extern "C" int mt_cnn_direct_conv_weight_grad(int dtype, const long long* args, const void* xp, const void* g,
                                              void* dw, long long* next) {
    if (dtype == 0) return direct_conv_weight_grad(args, (const float*)xp, (const float*)g, (float*)dw, next);
    if (dtype == 1) return direct_conv_weight_grad(args, (const double*)xp, (const double*)g, (double*)dw, next);
    return -1;
}

extern "C" int mt_cnn_max_pool_forward(int dtype, const long long* geo, const void* x, long long planes, void* y,
                                       int64_t* indices, long long* next) {
    Geo g;
    if (!read_geo(geo, &g) || planes < 0) return -1;
    if (dtype == 0) return max_pool_forward(g, (const float*)x, planes, (float*)y, indices, next);
    if (dtype == 1) return max_pool_forward(g, (const double*)x, planes, (double*)y, indices, next);
    return -1;
}

extern "C" int mt_cnn_max_pool_backward(int dtype, const long long* geo, const void* gy, const int64_t* indices,
                                        long long planes, void* dx, long long* next) {
    Geo g;
    if (!read_geo(geo, &g) || planes < 0) return -1;
    if (dtype == 0) return max_pool_backward(g, (const float*)gy, indices, planes, (float*)dx, next);
    if (dtype == 1) return max_pool_backward(g, (const double*)gy, indices, planes, (double*)dx, next);
    return -1;
}

extern "C" int mt_cnn_batch_norm_forward(int dtype, long long n, long long c, long long s, const void* x,
                                         const void* w, const void* b, double eps, void* y, void* mean, void* var,
                                         void* rstd, long long* next) {
    if (n < 0 || c < 0 || s < 0) return -1;
    if (dtype == 0)
        return batch_norm_forward(n, c, s, (const float*)x, (const float*)w, (const float*)b, eps, (float*)y,
                                  (float*)mean, (float*)var, (float*)rstd, next);
    if (dtype == 1)
        return batch_norm_forward(n, c, s, (const double*)x, (const double*)w, (const double*)b, eps, (double*)y,
                                  (double*)mean, (double*)var, (double*)rstd, next);
    return -1;
}

extern "C" int mt_cnn_batch_norm_backward(int dtype, long long n, long long c, long long s, const void* g,
                                          const void* x, const void* w, const void* mean, const void* rstd,
                                          void* dx, void* dw, void* db, long long* next) {
    if (n < 0 || c < 0 || s < 0) return -1;
    if (dtype == 0)
        return batch_norm_backward(n, c, s, (const float*)g, (const float*)x, (const float*)w, (const float*)mean,
                                   (const float*)rstd, (float*)dx, (float*)dw, (float*)db, next);
    if (dtype == 1)
        return batch_norm_backward(n, c, s, (const double*)g, (const double*)x, (const double*)w,
                                   (const double*)mean, (const double*)rstd, (double*)dx, (double*)dw, (double*)db,
                                   next);
    return -1;
}
