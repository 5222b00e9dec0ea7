// cnn_cpu.cpp: the CPU loops of a convolutional network: around the matrix products of a convolution (im2col,
// col2im), convolutions with their own products (direct stride-1 loops, Winograd F(2x2, 3x3), an implicit GEMM
// for strided ones), and the one-pass max pooling and batch norm.
//
// Entry points (C ABI, called through ctypes by backends/_cnn_native.py, which compiles this file with the host
// C++ compiler on first use and caches the library). `dtype` is 0 for float32, 1 for float64. Every entry takes
// a counter `next` shared by the threads working on one call (starting at 0): each call takes pieces from it
// until none are left, so results never depend on how many threads ran or who did which piece. This code
// takes no locks and allocates nothing. Every entry with a counter has a parallel twin `<entry>_parallel`
// (pool_cpu.h's MT_PARALLEL: the same arguments after a thread count) that runs it on the worker pool.
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
//     (w, b may be null). mean, var and rstd in x's dtype. Pieces: blocks of channels (bn_channels_per_piece).
//   mt_cnn_batch_norm_backward(dtype, n, c, s, g, x, w, mean, rstd, dx, dw, db, next) -> 0 | < 0
//     per channel sum(g) and sum(g * (x - mean)) in one pass (sums in double), then
//     dx = (g - sum(g) / m - (x - mean) * rstd^2 * sum(g * (x - mean)) / m) * rstd * w, m = n * s;
//     dw = rstd * sum(g * (x - mean)), db = sum(g). dx, dw, db may each be null. Pieces: blocks of channels.
//
//   mt_cnn_wino_* / mt_cnn_gemm_*: Winograd and the implicit GEMM; their geometry, layouts and entries are
//     described in their sections below. Those that need per-thread scratch take a second counter `slots`
//     from which each thread takes its slot of the caller's scratch (sized by mt_cnn_wino_scratch /
//     mt_cnn_gemm_scratch), and check that the slot is large enough.
//
// `geo` is int64: {C, D, H, W, kD, kH, kW, sD, sH, sW, pD, pH, pW, dD, dH, dW, oD, oH, oW, xs_n, xs_c}: the
// channels handled, the input's spatial size, kernel, stride, low padding, dilation, the output's spatial
// size, then the element strides between samples and between channels of the image (x or dx; each plane is
// contiguous). 1-d and 2-d problems set the missing leading dims to 1 (stride 1, padding 0, dilation 1).
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "pool_cpu.h"
#include "vec64_cpu.h"

namespace {

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

// ------------------------------------------------------------------------------------------- Winograd F(2x2, 3x3)
// A 3x3 convolution at stride 1 computes each 2x2 block of outputs ("tile") from the 4x4 input patch under it
// with 16 products per channel pair instead of 36 (Lavin & Gray): the patch d becomes V = B^T d B, the filter w
// U = G w G^T, their elementwise product summed over input channels is M, and the tile is A^T M A. Summed over
// channels, each of the 16 positions xi of M is a matrix product, M[xi] (tiles x O) = V[xi] (tiles x C) U[xi]
// (C x O), which is where the time goes: a register-blocked kernel runs it on transformed tiles while they are
// in cache. The weight gradient is the adjoint: dw = G^T Z G with Z[xi] (O x C) = sum over tiles of Gt[xi]^T
// V[xi], Gt = A g A^T the 2x2 tile of the output gradient g spread to 4x4 (zeros past the output's edge).
//
// Channels are the vector lanes throughout (every image size vectorises the same way): a band of image rows is
// first transposed into lanes ("staged": [row][column][Cp], zeros in the padding) with in-register transposes,
// so the transforms read and write whole vectors; outputs are staged the same way and transposed back. n = the
// lanes of a 64-byte vector, Cp / Op the channel counts rounded up to n. Layouts: transformed tiles V
// [16][tiles][Cp]; transformed filters U [16][C][Op] in panels of 2n output channels ([16][Op / 2n][C][2n], so
// the kernel streams each panel contiguously); products M [16][tiles][width]; the weight gradient's Z
// [16][O][Cp]. A chunk of tiles is a run of consecutive tiles (sample-major, then row-major); it is processed
// as rectangles of whole tile rows where it can.
//
// Two ways to run the forward product (the caller picks by the size of U): fused, each thread transforming a
// chunk of tiles, multiplying and transforming back while the chunk is in its cache (U small enough to stay
// there too); or phased, all threads transforming a shared chunk, then running the products by (position,
// panel) so that each panel of U is read once, then transforming back.

// B^T d B of a 4x4 patch d (row-major), in place
template <typename V>
inline void wino_input_tile(V* d) {
    for (int k = 0; k < 4; ++k) {
        V a = d[k], b = d[4 + k], c = d[8 + k], e = d[12 + k];
        d[k] = a - c;
        d[4 + k] = b + c;
        d[8 + k] = c - b;
        d[12 + k] = b - e;
    }
    for (int i = 0; i < 16; i += 4) {
        V a = d[i], b = d[i + 1], c = d[i + 2], e = d[i + 3];
        d[i] = a - c;
        d[i + 1] = b + c;
        d[i + 2] = c - b;
        d[i + 3] = b - e;
    }
}

// A^T m A of a 4x4 m: the 2x2 outputs y00, y01, y10, y11
template <typename V>
inline void wino_output_tile(const V* m, V* y) {
    V a[8];
    for (int k = 0; k < 4; ++k) {
        a[k] = m[k] + m[4 + k] + m[8 + k];
        a[4 + k] = m[4 + k] - m[8 + k] - m[12 + k];
    }
    for (int i = 0; i < 2; ++i) {
        y[2 * i] = a[4 * i] + a[4 * i + 1] + a[4 * i + 2];
        y[2 * i + 1] = a[4 * i + 1] - a[4 * i + 2] - a[4 * i + 3];
    }
}

// A g A^T of a 2x2 g (g00, g01, g10, g11): 4x4, row-major
template <typename V>
inline void wino_grad_tile(const V* g, V* out) {
    V b[8];  // A g: 4x2
    for (int j = 0; j < 2; ++j) {
        b[j] = g[j];
        b[2 + j] = g[j] + g[2 + j];
        b[4 + j] = g[j] - g[2 + j];
        b[6 + j] = -g[2 + j];
    }
    for (int i = 0; i < 4; ++i) {
        out[4 * i] = b[2 * i];
        out[4 * i + 1] = b[2 * i] + b[2 * i + 1];
        out[4 * i + 2] = b[2 * i] - b[2 * i + 1];
        out[4 * i + 3] = -b[2 * i + 1];
    }
}

// G w G^T of a 3x3 w: 4x4, row-major
template <typename V>
inline void wino_weight_tile(const V* w, V* out) {
    V a[12];  // G w: 4x3
    for (int k = 0; k < 3; ++k) {
        a[k] = w[k];
        a[3 + k] = (w[k] + w[3 + k] + w[6 + k]) * 0.5;
        a[6 + k] = (w[k] - w[3 + k] + w[6 + k]) * 0.5;
        a[9 + k] = w[6 + k];
    }
    for (int i = 0; i < 4; ++i) {
        out[4 * i] = a[3 * i];
        out[4 * i + 1] = (a[3 * i] + a[3 * i + 1] + a[3 * i + 2]) * 0.5;
        out[4 * i + 2] = (a[3 * i] - a[3 * i + 1] + a[3 * i + 2]) * 0.5;
        out[4 * i + 3] = a[3 * i + 2];
    }
}

// G^T z G of a 4x4 z: 3x3, row-major
template <typename V>
inline void wino_weight_grad_tile(const V* z, V* out) {
    V b[12];  // G^T z: 3x4
    for (int k = 0; k < 4; ++k) {
        b[k] = z[k] + (z[4 + k] + z[8 + k]) * 0.5;
        b[4 + k] = (z[4 + k] - z[8 + k]) * 0.5;
        b[8 + k] = (z[4 + k] + z[8 + k]) * 0.5 + z[12 + k];
    }
    for (int i = 0; i < 3; ++i) {
        out[3 * i] = b[4 * i] + (b[4 * i + 1] + b[4 * i + 2]) * 0.5;
        out[3 * i + 1] = (b[4 * i + 1] - b[4 * i + 2]) * 0.5;
        out[3 * i + 2] = (b[4 * i + 1] + b[4 * i + 2]) * 0.5 + b[4 * i + 3];
    }
}

// ---- the products: c[r][0 : NV * n] (=|+=) sum over k < K of a[r * sar + k * sak] * b[k * ldb + 0 : NV * n],
// r < R: R x NV vector accumulators in registers, one broadcast of a and NV loads of b per step of k
template <typename T, int R, int NV>
void wino_kernel(const T* a, idx sar, idx sak, const T* b, idx ldb, idx K, T* c, idx ldc, bool accumulate) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    V acc[R][NV];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NV; ++j) {
            if (accumulate) acc[r][j] = vload(c + r * ldc + j * n);
            else acc[r][j] = V{};
        }
    for (idx k = 0; k < K; ++k) {
        V bv[NV];
        for (int j = 0; j < NV; ++j) bv[j] = vload(b + k * ldb + j * n);
        const T* ak = a + k * sak;
        for (int r = 0; r < R; ++r) {
            const T s = ak[r * sar];
            for (int j = 0; j < NV; ++j) acc[r][j] += s * bv[j];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < NV; ++j) vstore(c + r * ldc + j * n, acc[r][j]);
}

constexpr int kWinoRows = 12;  // rows of the kernel: 12 x 2 accumulators of the 32 vector registers

template <typename T>
using WinoKernel = void (*)(const T*, idx, idx, const T*, idx, idx, T*, idx, bool);

template <typename T, int NV, int... R>
constexpr std::array<WinoKernel<T>, sizeof...(R)> wino_kernels(std::integer_sequence<int, R...>) {
    return {&wino_kernel<T, R + 1, NV>...};
}

// The product over `rows` rows (any count) and nv (1 or 2) vectors of columns, in blocks of kWinoRows rows.
template <typename T>
void wino_rows(idx rows, int nv, const T* a, idx sar, idx sak, const T* b, idx ldb, idx K, T* c, idx ldc,
               bool accumulate) {
    static constexpr auto one = wino_kernels<T, 1>(std::make_integer_sequence<int, kWinoRows>{});
    static constexpr auto two = wino_kernels<T, 2>(std::make_integer_sequence<int, kWinoRows>{});
    for (idx r0 = 0; r0 < rows; r0 += kWinoRows) {
        const idx r = rows - r0 < kWinoRows ? rows - r0 : kWinoRows;
        (nv == 2 ? two : one)[r - 1](a + r0 * sar, sar, sak, b, ldb, K, c + r0 * ldc, ldc, accumulate);
    }
}

// ---- geometry
// {N, C, H, W, O, oH, oW, pH, pW, Cp, Op, tc, xsn, ysn}: the input (N, C, H, W) with sample stride xsn, the
// output (N, O, oH, oW) with sample stride ysn (planes contiguous in both), the low padding, the padded channel
// counts, the tiles of a chunk.
struct WinoGeo {
    idx N, C, H, W, O, oH, oW, pH, pW, Cp, Op, tc, xsn, ysn;
    idx th() const { return (oH + 1) / 2; }
    idx tw() const { return (oW + 1) / 2; }
    idx tiles() const { return N * th() * tw(); }
};
constexpr int kWinoArgs = 14;
// the tiles of a piece of the phased transforms
constexpr idx kWinoPiece = 32;

template <typename T>
bool read_wino(const long long* a, WinoGeo* g) {
    constexpr idx n = Vec64<T>::n;
    *g = WinoGeo{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]};
    return g->N >= 0 && g->C > 0 && g->H > 0 && g->W > 0 && g->O > 0 && g->oH > 0 && g->oW > 0 && g->tc > 0 &&
           g->Cp >= g->C && g->Cp % n == 0 && g->Op >= g->O && g->Op % n == 0 && g->xsn >= g->C * g->H * g->W &&
           g->ysn >= g->O * g->oH * g->oW;
}

inline idx clampi(idx v, idx lo, idx hi) { return v < lo ? lo : (v > hi ? hi : v); }

// A rectangle of tiles of sample s: tile rows [ya, yb), columns [xa, xb); t: the chunk-relative index of its
// first tile (the others follow row by row).
struct Rect {
    idx s, ya, yb, xa, xb, t;
};

// f(rect) for the rectangles that make up tiles t0 .. t0 + cnt - 1 of samples of th x tw tiles: whole tile rows
// together where they can be
template <class F>
void for_rects(idx th, idx tw, idx t0, idx cnt, F f) {
    const idx end = t0 + cnt;
    for (idx t = t0; t < end;) {
        const idx s = t / (th * tw), ty = t / tw % th, tx = t % tw;
        Rect r{s, ty, ty + 1, tx, tx + 1, t - t0};
        if (tx == 0 && end - t >= tw) {
            r.yb = ty + (((end - t) / tw < th - ty) ? (end - t) / tw : th - ty);
            r.xb = tw;
        } else {
            r.xb = tw < tx + (end - t) ? tw : tx + (end - t);
        }
        f(r);
        t += (r.yb - r.ya) * (r.xb - r.xa);
    }
}

// the largest rectangle of a run of `tiles` tiles of samples of th x tw: (tile rows, tile columns)
inline void rect_bound(idx th, idx tw, idx tiles, idx* rows, idx* cols) {
    *rows = tiles >= tw ? (tiles / tw < th ? tiles / tw : th) : 1;
    *cols = tiles < tw ? tiles : tw;
}

// staging elements for runs of `tiles` tiles: input bands, output-gradient bands, output bands of `width` lanes
inline idx stage_elems(const WinoGeo& g, idx tiles, idx width) {
    idx rows, cols;
    rect_bound(g.th(), g.tw(), tiles, &rows, &cols);
    idx in = (2 * rows + 2) * (2 * cols + 2) * g.Cp, grad = 4 * rows * cols * g.Op, out = 4 * rows * cols * width;
    idx m = in > grad ? in : grad;
    return m > out ? m : out;
}

// ---- transforms of tiles through staged bands
// Buffers of transformed tiles hold the 16 positions xs elements apart: an odd number of 64-byte lines, so that
// the 16 stores (or loads) of one tile never fall a multiple of 4 KiB apart, where a load would wait on an
// unrelated store that matches its low address bits.
inline idx xi_stride(idx rows, idx width, idx n) {
    const idx s = rows * width;
    return (s / n) % 2 ? s : s + n;
}

// Input rows ir0 .. ir0 + R - 1 and columns ic0 .. ic0 + Q - 1 of sample s (C planes H x W, samples xsn
// apart; zeros outside) staged channels-last: stage[i][q][0 : Cp]. `end`: the end of the input.
template <typename T>
void stage_band(const T* x, idx s, idx xsn, idx C, idx H, idx W, idx Cp, idx ir0, idx R, idx ic0, idx Q, T* stage,
                const T* end) {
    constexpr int n = Vec64<T>::n;
    const idx HW = H * W, qa = clampi(-ic0, 0, Q), qb = clampi(W - ic0, qa, Q);
    const idx ia = clampi(-ir0, 0, R), ib = clampi(H - ir0, ia, R);
    for (idx i = 0; i < R; ++i) {
        T* row = stage + i * Q * Cp;
        if (i < ia || i >= ib || qa == qb) {
            std::memset(row, 0, sizeof(T) * Q * Cp);
        } else {
            std::memset(row, 0, sizeof(T) * qa * Cp);
            std::memset(row + qb * Cp, 0, sizeof(T) * (Q - qb) * Cp);
        }
    }
    // a group of channels at a time down the band: each plane is read as one run (the rows are consecutive)
    if (qa < qb)
        for (idx c0 = 0; c0 < Cp; c0 += n)
            for (idx i = ia; i < ib; ++i)
                to_lanes(x + s * xsn + c0 * HW + (ir0 + i) * W + ic0 + qa, HW, (int)clampi(C - c0, 0, n), qb - qa,
                         stage + (i * Q + qa) * Cp + c0, Cp, end);
}

// The transformed input tiles of rectangle r (their patches at (2 ty - pH, 2 tx - pW), zeros outside the
// input): position xi of tile r.t + i at v + xi * xs + (r.t + i) * Cp. stage: the band, (2 rows + 2) x (2
// cols + 2) x Cp.
template <typename T>
void input_rect(const WinoGeo& g, const T* x, const Rect& r, T* v, idx xs, T* stage) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    const idx Q = 2 * (r.xb - r.xa) + 2, Cp = g.Cp;
    stage_band(x, r.s, g.xsn, g.C, g.H, g.W, Cp, 2 * r.ya - g.pH, 2 * (r.yb - r.ya) + 2, 2 * r.xa - g.pW, Q, stage,
               x + (g.N - 1) * g.xsn + g.C * g.H * g.W);
    const idx wr = r.xb - r.xa, rs = Q * Cp;
    for (idx ty = r.ya; ty < r.yb; ++ty)
        for (idx tx = r.xa; tx < r.xb; ++tx) {
            const idx tl = r.t + (ty - r.ya) * wr + tx - r.xa;
            const T* p = stage + (2 * (ty - r.ya) * Q + 2 * (tx - r.xa)) * Cp;
            T* vt = v + tl * Cp;
            for (idx c0 = 0; c0 < Cp; c0 += n) {
                V d[16];
                const T* q = p + c0;
                for (int i = 0; i < 4; ++i, q += rs)
                    for (int j = 0; j < 4; ++j) d[4 * i + j] = vload(q + j * Cp);
                wino_input_tile(d);
                T* dst = vt + c0;
                for (int xi = 0; xi < 16; ++xi, dst += xs) vstore(dst, d[xi]);
            }
        }
}

// The output gradient's tiles of rectangle r spread to 4x4 (zeros past the output's edge): position xi of
// tile r.t + i at gt + xi * xs + (r.t + i) * Op. stage: 2 rows x 2 cols x Op.
template <typename T>
void grad_rect(const WinoGeo& g, const T* gy, const Rect& r, T* gt, idx xs, T* stage) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    const idx R = 2 * (r.yb - r.ya), Q = 2 * (r.xb - r.xa), Op = g.Op, plane = g.oH * g.oW;
    const idx qb = clampi(g.oW - 2 * r.xa, 0, Q);
    const T* gs = gy + r.s * g.ysn;
    const T* end = gy + (g.N - 1) * g.ysn + g.O * plane;
    const idx rb = clampi(g.oH - 2 * r.ya, 0, R);
    for (idx i = 0; i < R; ++i) {
        T* row = stage + i * Q * Op;
        if (i >= rb) std::memset(row, 0, sizeof(T) * Q * Op);
        else std::memset(row + qb * Op, 0, sizeof(T) * (Q - qb) * Op);
    }
    for (idx o0 = 0; o0 < Op; o0 += n)
        for (idx i = 0; i < rb; ++i)
            to_lanes(gs + o0 * plane + (2 * r.ya + i) * g.oW + 2 * r.xa, plane, (int)clampi(g.O - o0, 0, n), qb,
                     stage + i * Q * Op + o0, Op, end);
    const idx wr = r.xb - r.xa;
    for (idx ty = r.ya; ty < r.yb; ++ty)
        for (idx tx = r.xa; tx < r.xb; ++tx) {
            const idx tl = r.t + (ty - r.ya) * wr + tx - r.xa;
            const T* p = stage + (2 * (ty - r.ya) * Q + 2 * (tx - r.xa)) * Op;
            T* gtt = gt + tl * Op;
            for (idx o0 = 0; o0 < Op; o0 += n) {
                V q[4], out[16];
                q[0] = vload(p + o0);
                q[1] = vload(p + Op + o0);
                q[2] = vload(p + Q * Op + o0);
                q[3] = vload(p + (Q + 1) * Op + o0);
                wino_grad_tile(q, out);
                T* dst = gtt + o0;
                for (int xi = 0; xi < 16; ++xi, dst += xs) vstore(dst, out[xi]);
            }
        }
}

// The output tiles of rectangle r for channels o0 .. o0 + nv n - 1 from their products (position xi, tile
// r.t + i, vector j at m + xi * mxs + (r.t + i) * mts + j * n), plus bias, into y; what falls past O or the
// output's edge is dropped. stage: 2 rows x 2 cols x nv n.
template <typename T>
void output_rect(const WinoGeo& g, const T* m, idx mxs, idx mts, const Rect& r, idx o0, int nv, const T* bias,
                 T* y, T* stage) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    const idx R = 2 * (r.yb - r.ya), Q = 2 * (r.xb - r.xa), wd = nv * n, plane = g.oH * g.oW;
    V bv[2] = {};
    for (int j = 0; j < nv; ++j) {
        T bl[n];
        for (int l = 0; l < n; ++l) bl[l] = (bias && o0 + j * n + l < g.O) ? bias[o0 + j * n + l] : T(0);
        bv[j] = vload(bl);
    }
    const idx wr = r.xb - r.xa;
    for (idx ty = r.ya; ty < r.yb; ++ty)
        for (idx tx = r.xa; tx < r.xb; ++tx) {
            const idx tl = r.t + (ty - r.ya) * wr + tx - r.xa;
            T* p = stage + (2 * (ty - r.ya) * Q + 2 * (tx - r.xa)) * wd;
            for (int j = 0; j < nv; ++j) {
                V mv[16], out[4];
                const T* src = m + tl * mts + j * n;
                for (int xi = 0; xi < 16; ++xi, src += mxs) mv[xi] = vload(src);
                wino_output_tile(mv, out);
                vstore(p + j * n, out[0] + bv[j]);
                vstore(p + wd + j * n, out[1] + bv[j]);
                vstore(p + Q * wd + j * n, out[2] + bv[j]);
                vstore(p + (Q + 1) * wd + j * n, out[3] + bv[j]);
            }
        }
    const idx cols = clampi(g.oW - 2 * r.xa, 0, Q), rb = clampi(g.oH - 2 * r.ya, 0, R);
    T* ys = y + r.s * g.ysn;
    for (int j = 0; j < nv; ++j) {
        const idx oj = o0 + j * n;
        if (oj >= g.O) break;
        for (idx i = 0; i < rb; ++i)
            from_lanes(stage + i * Q * wd + j * n, wd, (int)clampi(g.O - oj, 0, n), cols,
                       ys + oj * plane + (2 * r.ya + i) * g.oW + 2 * r.xa, plane);
    }
}

template <typename T>
void wino_input_tiles(const WinoGeo& g, const T* x, idx t0, idx cnt, T* v, idx xs, T* stage) {
    for_rects(g.th(), g.tw(), t0, cnt, [&](const Rect& r) { input_rect(g, x, r, v, xs, stage); });
}

template <typename T>
void wino_grad_tiles(const WinoGeo& g, const T* gy, idx t0, idx cnt, T* gt, idx xs, T* stage) {
    for_rects(g.th(), g.tw(), t0, cnt, [&](const Rect& r) { grad_rect(g, gy, r, gt, xs, stage); });
}

template <typename T>
void wino_output_tiles(const WinoGeo& g, const T* m, idx mxs, idx mts, idx t0, idx cnt, idx o0, int nv,
                       const T* bias, T* y, T* stage) {
    for_rects(g.th(), g.tw(), t0, cnt, [&](const Rect& r) { output_rect(g, m, mxs, mts, r, o0, nv, bias, y, stage); });
}

// ---- scratch: the elements one thread's slot needs, by entry: 0 wino_conv, 1 wino_tiles and wino_untile, 2
// wino_wgrad_parts; each part of a slot starts on a 64-byte line
inline idx line_up(idx e, idx n) { return (e + n - 1) / n * n; }

template <typename T>
idx wino_scratch(const WinoGeo& g, int kind) {
    constexpr idx n = Vec64<T>::n;
    const idx stage = line_up(stage_elems(g, kind == 1 ? (g.tc < kWinoPiece ? g.tc : kWinoPiece) : g.tc, 2 * n), n);
    if (kind == 0) return 16 * (xi_stride(g.tc, g.Cp, n) + xi_stride(g.tc, 2 * n, n)) + stage + n;
    if (kind == 1) return stage + n;
    return 16 * (xi_stride(g.tc, g.Cp, n) + xi_stride(g.tc, g.Op, n)) + stage + n;
}

// the start of a thread's slot, on a 64-byte line
template <typename T>
T* slot_start(T* scratch, idx slot_elems, idx* slots) {
    T* p = scratch + take(slots) * slot_elems;
    return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t(63));
}

// the width of U's panel that starts at output channel o0
inline idx panel(idx ldu, idx o0, idx n) { return ldu - o0 < 2 * n ? ldu - o0 : 2 * n; }

// The fused forward convolution (and, with the flipped and transposed filters, the input gradient). Pieces:
// chunks of tc tiles; each transforms its tiles into its slot of scratch, then per panel of 2n output channels
// runs the 16 products and the output transform while they are in cache.
template <typename T>
int wino_conv(const long long* a, const T* x, const T* u, const T* bias, T* y, T* scratch, idx slot_elems,
              idx* next, idx* slots) {
    constexpr int n = Vec64<T>::n;
    WinoGeo g;
    if (!read_wino<T>(a, &g)) return -1;
    if (slot_elems < wino_scratch<T>(g, 0)) return -2;
    const idx tiles = g.tiles(), chunks = (tiles + g.tc - 1) / g.tc;
    const idx vxs = xi_stride(g.tc, g.Cp, n);
    T* v = slot_start(scratch, slot_elems, slots);
    T* m = v + 16 * vxs;
    T* stage = m + 16 * xi_stride(g.tc, 2 * n, n);
    for (;;) {
        const idx piece = take(next);
        if (piece >= chunks) return 0;
        const idx t0 = piece * g.tc, cnt = tiles - t0 < g.tc ? tiles - t0 : g.tc;
        wino_input_tiles(g, x, t0, cnt, v, vxs, stage);
        for (idx o0 = 0; o0 < g.Op; o0 += 2 * n) {
            const idx wd = panel(g.Op, o0, n), mxs = xi_stride(g.tc, wd, n);
            for (int xi = 0; xi < 16; ++xi)
                wino_rows<T>(cnt, (int)(wd / n), v + xi * vxs, g.Cp, 1, u + xi * g.C * g.Op + o0 * g.C, wd, g.C,
                             m + xi * mxs, wd, false);
            wino_output_tiles(g, m, mxs, wd, t0, cnt, o0, (int)(wd / n), bias, y, stage);
        }
    }
}

// The phased transforms of a shared chunk, tiles t0 .. t0 + cnt - 1 (cnt <= tc). Pieces: kWinoPiece tiles.
// which 0: the input x into v (position stride xi_stride(tc, Cp)); 1: the output gradient (xi_stride(tc,
// Op)).
template <typename T>
int wino_tiles(const long long* a, int which, const T* src, T* dst, idx t0, idx cnt, T* scratch, idx slot_elems,
               idx* next, idx* slots) {
    constexpr int n = Vec64<T>::n;
    WinoGeo g;
    if (!read_wino<T>(a, &g) || cnt > g.tc || t0 < 0 || t0 + cnt > g.tiles() || (which != 0 && which != 1))
        return -1;
    if (slot_elems < wino_scratch<T>(g, 1)) return -2;
    T* stage = slot_start(scratch, slot_elems, slots);
    const idx width = which == 0 ? g.Cp : g.Op, xs = xi_stride(g.tc, width, n);
    for (;;) {
        const idx q = take(next) * kWinoPiece;
        if (q >= cnt) return 0;
        const idx k = cnt - q < kWinoPiece ? cnt - q : kWinoPiece;
        if (which == 0) wino_input_tiles(g, src, t0 + q, k, dst + q * width, xs, stage);
        else wino_grad_tiles(g, src, t0 + q, k, dst + q * width, xs, stage);
    }
}

// The phased output transform: tiles t0 .. t0 + cnt - 1 from the products m (position stride xi_stride(tc,
// Op)), plus bias, into y. Pieces: kWinoPiece tiles.
template <typename T>
int wino_untile(const long long* a, const T* m, const T* bias, T* y, idx t0, idx cnt, T* scratch, idx slot_elems,
                idx* next, idx* slots) {
    constexpr int n = Vec64<T>::n;
    WinoGeo g;
    if (!read_wino<T>(a, &g) || cnt > g.tc || t0 < 0 || t0 + cnt > g.tiles()) return -1;
    if (slot_elems < wino_scratch<T>(g, 1)) return -2;
    T* stage = slot_start(scratch, slot_elems, slots);
    const idx mxs = xi_stride(g.tc, g.Op, n);
    for (;;) {
        const idx q = take(next) * kWinoPiece;
        if (q >= cnt) return 0;
        const idx k = cnt - q < kWinoPiece ? cnt - q : kWinoPiece;
        for (idx o0 = 0; o0 < g.Op; o0 += 2 * n)
            wino_output_tiles(g, m + q * g.Op + o0, mxs, g.Op, t0 + q, k, o0, (int)(panel(g.Op, o0, n) / n), bias,
                              y, stage);
    }
}

// z[xi] (O x Cp, ld Cp) (=|+=) gt[xi]^T v[xi] over cnt tiles (position strides vxs, gxs), rows o0 .. o0 +
// rows - 1
template <typename T>
void wino_weight_products(const WinoGeo& g, const T* v, idx vxs, const T* gt, idx gxs, idx cnt, int xi, idx o0,
                          idx rows, T* z, bool accumulate) {
    constexpr int n = Vec64<T>::n;
    for (idx c0 = 0; c0 < g.Cp; c0 += 2 * n) {
        const int nv = g.Cp - c0 >= 2 * n ? 2 : 1;
        wino_rows<T>(rows, nv, gt + xi * gxs + o0, 1, g.Op, v + xi * vxs + c0, g.Cp, cnt,
                     z + (xi * g.O + o0) * g.Cp + c0, g.Cp, accumulate);
    }
}

// The phased products of cnt tiles of a shared chunk. which 0: m = v u (v, m with the position strides of
// wino_tiles and wino_untile); pieces (position, panel), position-major so that consecutive pieces share a
// position's tiles. which 1: the weight gradient's z (=|+=) gt^T v (pa: v, pb: gt); pieces (position, 4
// kWinoRows rows of z).
template <typename T>
int wino_products(const long long* a, int which, const T* pa, const T* pb, T* out, idx cnt, int accumulate,
                  idx* next) {
    constexpr int n = Vec64<T>::n;
    WinoGeo g;
    if (!read_wino<T>(a, &g) || cnt > g.tc || (which != 0 && which != 1)) return -1;
    constexpr idx rows = 4 * kWinoRows;
    const idx blocks = which == 0 ? (g.Op + 2 * n - 1) / (2 * n) : (g.O + rows - 1) / rows;
    const idx vxs = xi_stride(g.tc, g.Cp, n), oxs = xi_stride(g.tc, g.Op, n);
    for (;;) {
        const idx piece = take(next);
        if (piece >= 16 * blocks) return 0;
        const int xi = (int)(piece / blocks);
        if (which == 0) {
            const idx o0 = piece % blocks * 2 * n, wd = panel(g.Op, o0, n);
            wino_rows<T>(cnt, (int)(wd / n), pa + xi * vxs, g.Cp, 1, pb + xi * g.C * g.Op + o0 * g.C, wd, g.C,
                         out + xi * oxs + o0, g.Op, false);
        } else {
            const idx o0 = piece % blocks * rows;
            wino_weight_products(g, pa, vxs, pb, oxs, cnt, xi, o0, g.O - o0 < rows ? g.O - o0 : rows, out,
                                 accumulate != 0);
        }
    }
}

// The transformed filters into u [16][rows][ldu] in panels of 2n columns (zeros past cols), of the filters at
// w + k * rs + c * cs (9 taps each, reversed when flip), k < rows, c < cols. Pieces: panels, each down all rows
// (its filters read as sequential streams, its rows of the panel written whole).
template <typename T>
int wino_weight(const long long* a, const T* w, T* u, idx* next) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    const idx rows = a[0], cols = a[1], rs = a[2], cs = a[3], flip = a[4], ldu = a[5];
    if (rows < 0 || cols < 0 || ldu < cols || ldu % n) return -1;
    const T* end = w + (rows - 1) * rs + (cols - 1) * cs + 9;
    for (;;) {
        const idx p0 = take(next) * 2 * n;
        if (p0 >= ldu) return 0;
        const idx wd = panel(ldu, p0, n);
        for (idx k = 0; k < rows; ++k)
            for (idx c0 = p0; c0 < p0 + wd; c0 += n) {
                T taps[9][n];
                to_lanes(w + k * rs + c0 * cs, cs, (int)clampi(cols - c0, 0, n), 9, &taps[0][0], n, end);
                V f[9], out[16];
                for (int tap = 0; tap < 9; ++tap) f[tap] = vload(taps[flip ? 8 - tap : tap]);
                wino_weight_tile(f, out);
                T* dst = u + p0 * rows + k * wd + c0 - p0;
                for (int xi = 0; xi < 16; ++xi, dst += rows * ldu) vstore(dst, out[xi]);
            }
    }
}

// The weight gradient's Z in parts: part p sums the tiles p * per_part .. (p + 1) * per_part - 1 (chunks of
// tc in its slot of scratch) into z + p * 16 O Cp. The parts are fixed by the caller, not by the threads, so
// the sums do not depend on how many threads ran. Pieces: parts.
template <typename T>
int wino_wgrad_parts(const long long* a, idx per_part, const T* x, const T* gy, T* z, T* scratch, idx slot_elems,
                     idx* next, idx* slots) {
    WinoGeo g;
    if (!read_wino<T>(a, &g) || per_part < 1) return -1;
    if (slot_elems < wino_scratch<T>(g, 2)) return -2;
    constexpr int n = Vec64<T>::n;
    const idx tiles = g.tiles(), parts = (tiles + per_part - 1) / per_part;
    const idx vxs = xi_stride(g.tc, g.Cp, n), gxs = xi_stride(g.tc, g.Op, n);
    T* v = slot_start(scratch, slot_elems, slots);
    T* gt = v + 16 * vxs;
    T* stage = gt + 16 * gxs;
    for (;;) {
        const idx p = take(next);
        if (p >= parts) return 0;
        T* zp = z + p * 16 * g.O * g.Cp;
        const idx end = (p + 1) * per_part < tiles ? (p + 1) * per_part : tiles;
        for (idx t0 = p * per_part; t0 < end; t0 += g.tc) {
            const idx cnt = end - t0 < g.tc ? end - t0 : g.tc;
            wino_input_tiles(g, x, t0, cnt, v, vxs, stage);
            wino_grad_tiles(g, gy, t0, cnt, gt, gxs, stage);
            for (int xi = 0; xi < 16; ++xi)
                wino_weight_products(g, v, vxs, gt, gxs, cnt, xi, 0, g.O, zp, t0 > p * per_part);
        }
    }
}

// dw (O, C, 3, 3) = G^T (the parts of z summed in order) G. Pieces: output channels.
template <typename T>
int wino_wgrad_finish(const long long* a, const T* z, idx parts, T* dw, idx* next) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    WinoGeo g;
    if (!read_wino<T>(a, &g) || parts < 1) return -1;
    const idx part = 16 * g.O * g.Cp;
    for (;;) {
        const idx o = take(next);
        if (o >= g.O) return 0;
        for (idx c0 = 0; c0 < g.C; c0 += n) {
            V zs[16], out[9];
            for (int xi = 0; xi < 16; ++xi) {
                zs[xi] = vload(z + (xi * g.O + o) * g.Cp + c0);
                for (idx p = 1; p < parts; ++p) {
                    V more;
                    more = vload(z + p * part + (xi * g.O + o) * g.Cp + c0);
                    zs[xi] += more;
                }
            }
            wino_weight_grad_tile(zs, out);
            // 9 taps of n channels back to (channel, tap): the lanes of 9 vectors into rows of 9
            from_lanes(reinterpret_cast<const T*>(out), n, (int)clampi(g.C - c0, 0, n), 9, dw + (o * g.C + c0) * 9,
                       9);
        }
    }
}

// ------------------------------------------------------------------------------------------- implicit GEMM
// A 2-d convolution at any stride, padding and dilation as products on channels-last rows: for a run of output
// positions, the input band under them is staged channels-last (as Winograd does), each position's row of A
// gathers its kH kW taps' channel vectors (A [positions][kH kW Cp]), and the kernel above multiplies A by the
// filters packed as B [kH kW Cp][Op] in panels of 2n output channels ([Op / 2n][kH kW Cp][2n]). The weight
// gradient is Z [O][kH kW Cp] = G^T A over positions (G [positions][Op] the output gradient channels-last), in
// parts fixed by the shape like Winograd's. Where the convolution is strided this beats im2col + BLAS: the rows
// are built in cache and the kernel runs faster than the library's on these shapes.
//
// geo: {N, C, H, W, O, oH, oW, kH, kW, sH, sW, dH, dW, pH, pW, Cp, Op, tc, xsn, ysn}: input and output shapes,
// kernel, stride, dilation, low padding, the padded channel counts, positions per chunk, sample strides.
struct GemmGeo {
    idx N, C, H, W, O, oH, oW, kH, kW, sH, sW, dH, dW, pH, pW, Cp, Op, tc, xsn, ysn;
    idx K() const { return kH * kW * Cp; }
    idx positions() const { return N * oH * oW; }
};

template <typename T>
bool read_gemm(const long long* a, GemmGeo* g) {
    constexpr idx n = Vec64<T>::n;
    *g = GemmGeo{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14],
                 a[15], a[16], a[17], a[18], a[19]};
    return g->N >= 0 && g->C > 0 && g->H > 0 && g->W > 0 && g->O > 0 && g->oH > 0 && g->oW > 0 && g->kH > 0 &&
           g->kW > 0 && g->sH > 0 && g->sW > 0 && g->dH > 0 && g->dW > 0 && g->tc > 0 && g->Cp >= g->C &&
           g->Cp % n == 0 && g->Op >= g->O && g->Op % n == 0 && g->xsn >= g->C * g->H * g->W &&
           g->ysn >= g->O * g->oH * g->oW;
}

// scratch of one thread's slot: 0 gemm_conv (A, a product block, the band), 1 gemm_wgrad_parts (A, G, band)
template <typename T>
idx gemm_scratch(const GemmGeo& g, int kind) {
    constexpr idx n = Vec64<T>::n;
    idx rows, cols;
    rect_bound(g.oH, g.oW, g.tc, &rows, &cols);
    const idx band = line_up(((rows - 1) * g.sH + (g.kH - 1) * g.dH + 1) * ((cols - 1) * g.sW + (g.kW - 1) * g.dW + 1) *
                             g.Cp, n);
    const idx a = line_up(g.tc * g.K(), n);
    return a + band + (kind == 0 ? g.tc * 2 * n : g.tc * g.Op) + n;
}

// The rows of A for rectangle r of output positions (r.t: the chunk-relative index of its first)
template <typename T>
void gemm_rows_of_rect(const GemmGeo& g, const T* x, const Rect& r, T* A, T* stage) {
    constexpr int n = Vec64<T>::n;
    const idx R = (r.yb - r.ya - 1) * g.sH + (g.kH - 1) * g.dH + 1;
    const idx Q = (r.xb - r.xa - 1) * g.sW + (g.kW - 1) * g.dW + 1, Cp = g.Cp, K = g.K(), wr = r.xb - r.xa;
    stage_band(x, r.s, g.xsn, g.C, g.H, g.W, Cp, r.ya * g.sH - g.pH, R, r.xa * g.sW - g.pW, Q, stage,
               x + (g.N - 1) * g.xsn + g.C * g.H * g.W);
    for (idx oy = r.ya; oy < r.yb; ++oy)
        for (idx ox = r.xa; ox < r.xb; ++ox) {
            T* dst = A + (r.t + (oy - r.ya) * wr + ox - r.xa) * K;
            for (idx ky = 0; ky < g.kH; ++ky)
                for (idx kx = 0; kx < g.kW; ++kx, dst += Cp) {
                    const T* src = stage + (((oy - r.ya) * g.sH + ky * g.dH) * Q + (ox - r.xa) * g.sW + kx * g.dW) * Cp;
                    for (idx c0 = 0; c0 < Cp; c0 += n) vstore(dst + c0, vload(src + c0));
                }
        }
}

// The filters w (O, C, kH, kW) packed into b (zeros past O and C, which the caller provides): panel of
// channels o0 .. o0 + wd - 1 at b + o0 K, row (tap Cp + c). Pieces: panels, each down all input channels.
template <typename T>
int gemm_weight(const long long* a, const T* w, T* b, idx* next) {
    constexpr int n = Vec64<T>::n;
    const idx O = a[0], C = a[1], taps = a[2], Cp = a[3], Op = a[4];
    if (O < 1 || C < 1 || taps < 1 || Cp < C || Cp % n || Op < O || Op % n) return -1;
    const idx K = taps * Cp;
    const T* end = w + O * C * taps;
    for (;;) {
        const idx p0 = take(next) * 2 * n;
        if (p0 >= O) return 0;
        const idx wd = panel(Op, p0, n);
        for (idx c = 0; c < C; ++c)
            for (idx o0 = p0; o0 < p0 + wd && o0 < O; o0 += n)
                to_lanes(w + (o0 * C + c) * taps, C * taps, (int)clampi(O - o0, 0, n), taps,
                         b + p0 * K + c * wd + o0 - p0, Cp * wd, end);
    }
}

// The convolution y = A b (+ bias). Pieces: chunks of tc positions, in each worker's slot of scratch.
template <typename T>
int gemm_conv(const long long* a, const T* x, const T* b, const T* bias, T* y, T* scratch, idx slot_elems,
              idx* next, idx* slots) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    GemmGeo g;
    if (!read_gemm<T>(a, &g)) return -1;
    if (slot_elems < gemm_scratch<T>(g, 0)) return -2;
    const idx total = g.positions(), chunks = (total + g.tc - 1) / g.tc, K = g.K(), plane = g.oH * g.oW;
    T* A = slot_start(scratch, slot_elems, slots);
    T* m = A + line_up(g.tc * K, n);
    T* stage = m + g.tc * 2 * n;
    for (;;) {
        const idx piece = take(next);
        if (piece >= chunks) return 0;
        const idx t0 = piece * g.tc, cnt = total - t0 < g.tc ? total - t0 : g.tc;
        for_rects(g.oH, g.oW, t0, cnt, [&](const Rect& r) { gemm_rows_of_rect(g, x, r, A, stage); });
        for (idx o0 = 0; o0 < g.Op; o0 += 2 * n) {
            const idx wd = panel(g.Op, o0, n);
            const int nv = (int)(wd / n);
            wino_rows<T>(cnt, nv, A, K, 1, b + o0 * K, wd, K, m, wd, false);
            if (bias) {
                V bv[2] = {};
                for (int j = 0; j < nv; ++j)
                    for (int l = 0; l < n; ++l) bv[j][l] = o0 + j * n + l < g.O ? bias[o0 + j * n + l] : T(0);
                for (idx i = 0; i < cnt; ++i)
                    for (int j = 0; j < nv; ++j) vstore(m + i * wd + j * n, vload(m + i * wd + j * n) + bv[j]);
            }
            for_rects(g.oH, g.oW, t0, cnt, [&](const Rect& r) {
                const idx wr = r.xb - r.xa;
                for (idx oy = r.ya; oy < r.yb; ++oy)
                    for (int j = 0; j < nv && o0 + j * n < g.O; ++j)
                        from_lanes(m + (r.t + (oy - r.ya) * wr) * wd + j * n, wd, (int)clampi(g.O - o0 - j * n, 0, n),
                                   wr, y + r.s * g.ysn + (o0 + j * n) * plane + oy * g.oW + r.xa, plane);
            });
        }
    }
}

// The weight gradient's Z in parts (as wino_wgrad_parts): part p sums positions p * per_part .. into z + p O K.
template <typename T>
int gemm_wgrad_parts(const long long* a, idx per_part, const T* x, const T* gy, T* z, T* scratch, idx slot_elems,
                     idx* next, idx* slots) {
    constexpr int n = Vec64<T>::n;
    GemmGeo g;
    if (!read_gemm<T>(a, &g) || per_part < 1) return -1;
    if (slot_elems < gemm_scratch<T>(g, 1)) return -2;
    const idx total = g.positions(), parts = (total + per_part - 1) / per_part, K = g.K(), plane = g.oH * g.oW;
    const T* gend = gy + (g.N - 1) * g.ysn + g.O * plane;
    T* A = slot_start(scratch, slot_elems, slots);
    T* G = A + line_up(g.tc * K, n);
    T* stage = G + g.tc * g.Op;
    for (;;) {
        const idx p = take(next);
        if (p >= parts) return 0;
        T* zp = z + p * g.O * K;
        const idx end = (p + 1) * per_part < total ? (p + 1) * per_part : total;
        for (idx t0 = p * per_part; t0 < end; t0 += g.tc) {
            const idx cnt = end - t0 < g.tc ? end - t0 : g.tc;
            for_rects(g.oH, g.oW, t0, cnt, [&](const Rect& r) {
                gemm_rows_of_rect(g, x, r, A, stage);
                const idx wr = r.xb - r.xa;
                for (idx oy = r.ya; oy < r.yb; ++oy)
                    for (idx o0 = 0; o0 < g.Op; o0 += n)
                        to_lanes(gy + r.s * g.ysn + o0 * plane + oy * g.oW + r.xa, plane, (int)clampi(g.O - o0, 0, n),
                                 wr, G + (r.t + (oy - r.ya) * wr) * g.Op + o0, g.Op, gend);
            });
            for (idx c0 = 0; c0 < K; c0 += 2 * n) {
                const int nv = K - c0 >= 2 * n ? 2 : 1;
                wino_rows<T>(g.O, nv, G, 1, g.Op, A + c0, K, cnt, zp + c0, K, t0 > p * per_part);
            }
        }
    }
}

// dw (O, C, kH, kW) = the parts of z summed in order, rows (tap Cp + c) back to (c, tap). Pieces: output channels.
template <typename T>
int gemm_wgrad_finish(const long long* a, const T* z, idx parts, T* dw, idx* next) {
    typedef typename Vec64<T>::type V;
    constexpr int n = Vec64<T>::n;
    GemmGeo g;
    if (!read_gemm<T>(a, &g) || parts < 1) return -1;
    const idx K = g.K(), taps = g.kH * g.kW, part = g.O * K;
    for (;;) {
        const idx o = take(next);
        if (o >= g.O) return 0;
        for (idx c0 = 0; c0 < g.C; c0 += n)
            for (idx t0 = 0; t0 < taps; t0 += n) {
                const idx tn = taps - t0 < n ? taps - t0 : n;
                V zs[n];
                for (idx t = 0; t < tn; ++t) {
                    zs[t] = vload(z + o * K + (t0 + t) * g.Cp + c0);
                    for (idx q = 1; q < parts; ++q) zs[t] += vload(z + q * part + o * K + (t0 + t) * g.Cp + c0);
                }
                from_lanes(reinterpret_cast<const T*>(zs), n, (int)clampi(g.C - c0, 0, n), tn,
                           dw + (o * g.C + c0) * taps + t0, taps);
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
// Sums over a channel's n runs of s elements in kLanes independent double accumulators: element j of a run
// goes to lane j % kLanes, and the lanes are added in a fixed order at the end, so the result does not depend
// on the thread that computes it. The terms are generic lambdas `f(L, p)` of a loader L and an element offset
// p: L.t(ptr) reads one T (Scalar) or 8 (Eight) and L.d widens what it read to double, so one expression
// serves the vector body and the scalar tail (GCC left the element-wise form scalar inside the channel loop).
constexpr int kLanes = 16;
typedef double DVec __attribute__((vector_size(64)));

template <typename T> struct Scalar {
    T t(const T* p) const { return *p; }
    double d(T v) const { return (double)v; }
};

template <typename T> struct Eight {
    typedef T value __attribute__((vector_size(8 * sizeof(T))));
    typedef T unaligned __attribute__((vector_size(8 * sizeof(T)), aligned(sizeof(T)), may_alias));
    value t(const T* p) const { return *reinterpret_cast<const unaligned*>(p); }
    DVec d(value v) const { return __builtin_convertvector(v, DVec); }
};

// (sum of f, sum of h) over the runs (run i starts stride elements after run i - 1); h may be NullTerm{}
struct NullTerm {};

template <typename T, class F, class H>
void lane_sums(idx n, idx s, idx stride, F f, H h, double* sf, double* sh) {
    constexpr bool two = !std::is_same<H, NullTerm>::value;
    DVec a[2] = {}, b[2] = {};
    const Eight<T> v8;
    const Scalar<T> v1;
    for (idx i = 0; i < n; ++i) {
        const idx row = i * stride;
        idx j = 0;
        for (; j + kLanes <= s; j += kLanes)
            for (int half = 0; half < 2; ++half) {
                a[half] += f(v8, row + j + 8 * half);
                if constexpr (two) b[half] += h(v8, row + j + 8 * half);
            }
        for (; j < s; ++j) {
            const int l = (int)(j % kLanes);
            a[l / 8][l % 8] += f(v1, row + j);
            if constexpr (two) b[l / 8][l % 8] += h(v1, row + j);
        }
    }
    *sf = 0;
    for (int l = 0; l < kLanes; ++l) *sf += a[l / 8][l % 8];
    if constexpr (two) {
        *sh = 0;
        for (int l = 0; l < kLanes; ++l) *sh += b[l / 8][l % 8];
    }
}

template <typename T, class F>
double lane_sum(idx n, idx s, idx stride, F f) {
    double total = 0;
    lane_sums<T>(n, s, stride, f, NullTerm{}, &total, nullptr);
    return total;
}

// Channels per piece: the per-channel outputs (mean, var, rstd; dw, db) of neighbouring channels share cache
// lines, and so do the ends of their rows, and a line written by two threads moves between their cores on each
// write; a block of channels per piece keeps that to the blocks' edges. Blocks of at least kBnPieceElems
// elements, but at least 8 pieces while there are 8 channels (the threads' shares stay even).
constexpr idx kBnPieceElems = 1 << 14;
inline idx bn_channels_per_piece(idx n, idx c, idx s) {
    const idx per_channel = n * s > 0 ? n * s : 1;
    idx per = (kBnPieceElems + per_channel - 1) / per_channel;
    const idx most = c / 8 > 1 ? c / 8 : 1;
    return per < most ? per : most;
}

template <typename T>
int batch_norm_forward(idx n, idx c, idx s, const T* x, const T* w, const T* b, double eps, T* y, T* mean,
                       T* var, T* rstd, idx* next) {
    const idx stride = c * s;
    const double m = (double)(n * s);
    const idx per = bn_channels_per_piece(n, c, s);
    for (;;) {
        const idx ch0 = take(next) * per;
        if (ch0 >= c) return 0;
        for (idx ch = ch0; ch < c && ch < ch0 + per; ++ch) {
            const T* xc = x + ch * s;
            double mu = lane_sum<T>(n, s, stride, [=](auto L, idx p) { return L.d(L.t(xc + p)); }) / m;
            double v = lane_sum<T>(n, s, stride, [=](auto L, idx p) {
                auto d = L.d(L.t(xc + p)) - mu;
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
}

template <typename T>
int batch_norm_backward(idx n, idx c, idx s, const T* g, const T* x, const T* w, const T* mean, const T* rstd,
                        T* dx, T* dw, T* db, idx* next) {
    const idx stride = c * s;
    const double m = (double)(n * s);
    const idx per = bn_channels_per_piece(n, c, s);
    for (;;) {
        const idx ch0 = take(next) * per;
        if (ch0 >= c) return 0;
        for (idx ch = ch0; ch < c && ch < ch0 + per; ++ch) {
            const T* gc = g + ch * s;
            const T* xc = x + ch * s;
            const T mu = mean[ch];
            double sum_g, sum_gx;
            lane_sums<T>(
                n, s, stride, [=](auto L, idx p) { return L.d(L.t(gc + p)); },
                [=](auto L, idx p) { return L.d(L.t(gc + p)) * L.d(L.t(xc + p) - mu); }, &sum_g, &sum_gx);
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

extern "C" long long mt_cnn_wino_scratch(int dtype, const long long* args, int kind) {
    WinoGeo g;
    if (dtype == 0) return read_wino<float>(args, &g) ? wino_scratch<float>(g, kind) : -1;
    if (dtype == 1) return read_wino<double>(args, &g) ? wino_scratch<double>(g, kind) : -1;
    return -1;
}

extern "C" int mt_cnn_wino_weight(int dtype, const long long* args, const void* w, void* u, long long* next) {
    if (dtype == 0) return wino_weight(args, (const float*)w, (float*)u, next);
    if (dtype == 1) return wino_weight(args, (const double*)w, (double*)u, next);
    return -1;
}

extern "C" int mt_cnn_wino_conv(int dtype, const long long* args, const void* x, const void* u, const void* bias,
                                void* y, void* scratch, long long slot_elems, long long* next, long long* slots) {
    if (dtype == 0)
        return wino_conv(args, (const float*)x, (const float*)u, (const float*)bias, (float*)y, (float*)scratch,
                         slot_elems, next, slots);
    if (dtype == 1)
        return wino_conv(args, (const double*)x, (const double*)u, (const double*)bias, (double*)y,
                         (double*)scratch, slot_elems, next, slots);
    return -1;
}

extern "C" int mt_cnn_wino_tiles(int dtype, const long long* args, int which, const void* src, void* dst,
                                 long long t0, long long cnt, void* scratch, long long slot_elems, long long* next,
                                 long long* slots) {
    if (dtype == 0)
        return wino_tiles(args, which, (const float*)src, (float*)dst, t0, cnt, (float*)scratch, slot_elems, next,
                          slots);
    if (dtype == 1)
        return wino_tiles(args, which, (const double*)src, (double*)dst, t0, cnt, (double*)scratch, slot_elems,
                          next, slots);
    return -1;
}

extern "C" int mt_cnn_wino_untile(int dtype, const long long* args, const void* m, const void* bias, void* y,
                                  long long t0, long long cnt, void* scratch, long long slot_elems, long long* next,
                                  long long* slots) {
    if (dtype == 0)
        return wino_untile(args, (const float*)m, (const float*)bias, (float*)y, t0, cnt, (float*)scratch,
                           slot_elems, next, slots);
    if (dtype == 1)
        return wino_untile(args, (const double*)m, (const double*)bias, (double*)y, t0, cnt, (double*)scratch,
                           slot_elems, next, slots);
    return -1;
}

extern "C" int mt_cnn_wino_products(int dtype, const long long* args, int which, const void* a, const void* b,
                                    void* out, long long cnt, int accumulate, long long* next) {
    if (dtype == 0)
        return wino_products(args, which, (const float*)a, (const float*)b, (float*)out, cnt, accumulate, next);
    if (dtype == 1)
        return wino_products(args, which, (const double*)a, (const double*)b, (double*)out, cnt, accumulate, next);
    return -1;
}

extern "C" int mt_cnn_wino_wgrad_parts(int dtype, const long long* args, long long per_part, const void* x,
                                       const void* g, void* z, void* scratch, long long slot_elems, long long* next,
                                       long long* slots) {
    if (dtype == 0)
        return wino_wgrad_parts(args, per_part, (const float*)x, (const float*)g, (float*)z, (float*)scratch,
                                slot_elems, next, slots);
    if (dtype == 1)
        return wino_wgrad_parts(args, per_part, (const double*)x, (const double*)g, (double*)z, (double*)scratch,
                                slot_elems, next, slots);
    return -1;
}

extern "C" int mt_cnn_wino_wgrad_finish(int dtype, const long long* args, const void* z, long long parts, void* dw,
                                        long long* next) {
    if (dtype == 0) return wino_wgrad_finish(args, (const float*)z, parts, (float*)dw, next);
    if (dtype == 1) return wino_wgrad_finish(args, (const double*)z, parts, (double*)dw, next);
    return -1;
}

extern "C" long long mt_cnn_gemm_scratch(int dtype, const long long* args, int kind) {
    GemmGeo g;
    if (dtype == 0) return read_gemm<float>(args, &g) ? gemm_scratch<float>(g, kind) : -1;
    if (dtype == 1) return read_gemm<double>(args, &g) ? gemm_scratch<double>(g, kind) : -1;
    return -1;
}

extern "C" int mt_cnn_gemm_weight(int dtype, const long long* args, const void* w, void* b, long long* next) {
    if (dtype == 0) return gemm_weight(args, (const float*)w, (float*)b, next);
    if (dtype == 1) return gemm_weight(args, (const double*)w, (double*)b, next);
    return -1;
}

extern "C" int mt_cnn_gemm_conv(int dtype, const long long* args, const void* x, const void* b, const void* bias,
                                void* y, void* scratch, long long slot_elems, long long* next, long long* slots) {
    if (dtype == 0)
        return gemm_conv(args, (const float*)x, (const float*)b, (const float*)bias, (float*)y, (float*)scratch,
                         slot_elems, next, slots);
    if (dtype == 1)
        return gemm_conv(args, (const double*)x, (const double*)b, (const double*)bias, (double*)y,
                         (double*)scratch, slot_elems, next, slots);
    return -1;
}

extern "C" int mt_cnn_gemm_wgrad_parts(int dtype, const long long* args, long long per_part, const void* x,
                                       const void* g, void* z, void* scratch, long long slot_elems, long long* next,
                                       long long* slots) {
    if (dtype == 0)
        return gemm_wgrad_parts(args, per_part, (const float*)x, (const float*)g, (float*)z, (float*)scratch,
                                slot_elems, next, slots);
    if (dtype == 1)
        return gemm_wgrad_parts(args, per_part, (const double*)x, (const double*)g, (double*)z, (double*)scratch,
                                slot_elems, next, slots);
    return -1;
}

extern "C" int mt_cnn_gemm_wgrad_finish(int dtype, const long long* args, const void* z, long long parts, void* dw,
                                        long long* next) {
    if (dtype == 0) return gemm_wgrad_finish(args, (const float*)z, parts, (float*)dw, next);
    if (dtype == 1) return gemm_wgrad_finish(args, (const double*)z, parts, (double*)dw, next);
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

// the parallel twins (pool_cpu.h)
MT_PARALLEL(mt_cnn_im2col)
MT_PARALLEL(mt_cnn_col2im)
MT_PARALLEL(mt_cnn_direct_conv)
MT_PARALLEL(mt_cnn_direct_conv_weight_grad)
MT_PARALLEL(mt_cnn_wino_weight)
MT_PARALLEL(mt_cnn_wino_conv)
MT_PARALLEL(mt_cnn_wino_tiles)
MT_PARALLEL(mt_cnn_wino_untile)
MT_PARALLEL(mt_cnn_wino_products)
MT_PARALLEL(mt_cnn_wino_wgrad_parts)
MT_PARALLEL(mt_cnn_wino_wgrad_finish)
MT_PARALLEL(mt_cnn_gemm_weight)
MT_PARALLEL(mt_cnn_gemm_conv)
MT_PARALLEL(mt_cnn_gemm_wgrad_parts)
MT_PARALLEL(mt_cnn_gemm_wgrad_finish)
MT_PARALLEL(mt_cnn_max_pool_forward)
MT_PARALLEL(mt_cnn_max_pool_backward)
MT_PARALLEL(mt_cnn_batch_norm_forward)
MT_PARALLEL(mt_cnn_batch_norm_backward)
