// optim_math.cuh: the per-element update of every fused optimizer step, shared by the GPU kernels (optim.cu)
// and the native CPU loops (optim_cpu.cpp), so both compute the same thing by construction.
//
// One struct per optimizer (Adam, Sgd, Rmsprop, Adagrad, Lion) with
//     static void apply(i, p, g, s0, s1, s2, s, t, f)
// updating element i of a parameter p in place from its gradient g and up to three state arrays s0..s2.
//   s  the group's scalars, in T, indexed by the optimizer's <Name>Scalar enum
//   t  the tensor's two scalars (Adam's bias-corrected eps and step size, Adagrad's decayed lr)
//   f  option bits, 1 << <Name>Flag; the CPU loops pass a compile-time constant, so every branch on f
//      folds away and the loop vectorises; the GPU kernels pass it at run time (uniform across a warp).
//
// The Python side (backends/_optim.py) reads the enums below by name, so the scalar order and the flag bits
// cannot drift apart. Each update performs the operations of backends/_optim.py's NumPy bodies one for one,
// in the same order: with floating-point contraction off (the CPU build), results are bit-identical to them.
// Maximize is folded into signs: `gsign` is -1 or 1, and `a + gsign * g` equals `a - g` exactly.
#ifndef MT_OPTIM_MATH_CUH
#define MT_OPTIM_MATH_CUH

#if defined(__CUDACC__) || defined(__device__)
#define MT_OPTIM_FN __device__ __forceinline__
#else
#define MT_OPTIM_FN inline __attribute__((always_inline))
#endif

// group scalars passed to every step (the longest list below has 7)
#define MT_OPTIM_GROUP_SCALARS 8

namespace mt_optim {

typedef long long idx;

MT_OPTIM_FN float root(float x) { return sqrtf(x); }
MT_OPTIM_FN double root(double x) { return sqrt(x); }
// NaN-propagating, like NumPy's maximum
template <typename T> MT_OPTIM_FN T max_nan(T a, T b) { return (a != a || a > b) ? a : b; }
// NumPy's sign: 0 for both zeros, NaN for NaN
template <typename T> MT_OPTIM_FN T sign(T a) { return a > (T)0 ? (T)1 : (a < (T)0 ? (T)-1 : (a == a ? (T)0 : a)); }

// ------------------------------------------------------------------------------------------ Adam / AdamW
// s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq (amsgrad). decay is 1 - lr * wd for AdamW, else 1 (exact);
// coupled is Adam's L2 term g <- p * wd + gsign * g, with g_scale = 1 - beta1 (signed for maximize otherwise).
enum AdamScalar { AS_beta1, AS_beta2, AS_one_minus_beta2, AS_g_scale, AS_weight_decay, AS_decay, AS_gsign };
enum AdamFlag { AF_amsgrad, AF_coupled };

struct Adam {
    template <typename T>
    MT_OPTIM_FN static void apply(idx i, T* p, const T* g, T* s0, T* s1, T* s2, const T* s, const T* t, int f) {
        T pi = p[i] * s[AS_decay], gi = g[i];
        if (f & (1 << AF_coupled)) gi = pi * s[AS_weight_decay] + gi * s[AS_gsign];
        T mi = s0[i] * s[AS_beta1] + gi * s[AS_g_scale];
        T vi = s1[i] * s[AS_beta2] + (gi * gi) * s[AS_one_minus_beta2];
        s0[i] = mi;
        s1[i] = vi;
        if (f & (1 << AF_amsgrad)) {
            vi = max_nan(s2[i], vi);
            s2[i] = vi;
        }
        // t[0] = eps * sqrt(bc2), t[1] = -(lr / bc1) * sqrt(bc2): PyTorch's update with the corrections folded
        p[i] = pi + (mi / (root(vi) + t[0])) * t[1];
    }
};

// ------------------------------------------------------------------------------------------ SGD
// s0 momentum_buffer. `first` is per tensor: a new buffer takes the (decayed) gradient as it is.
enum SgdScalar { SS_lr, SS_weight_decay, SS_momentum, SS_one_minus_dampening, SS_gsign };
enum SgdFlag { SF_weight_decay, SF_momentum, SF_nesterov, SF_first };

struct Sgd {
    template <typename T>
    MT_OPTIM_FN static void apply(idx i, T* p, const T* g, T* s0, T*, T*, const T* s, const T*, int f) {
        T pi = p[i], gi = g[i] * s[SS_gsign];
        if (f & (1 << SF_weight_decay)) gi = pi * s[SS_weight_decay] + gi;
        if (f & (1 << SF_momentum)) {
            T bi = (f & (1 << SF_first)) ? gi : s0[i] * s[SS_momentum] + gi * s[SS_one_minus_dampening];
            s0[i] = bi;
            gi = (f & (1 << SF_nesterov)) ? bi * s[SS_momentum] + gi : bi;
        }
        p[i] = pi - gi * s[SS_lr];
    }
};

// ------------------------------------------------------------------------------------------ RMSprop
// s0 square_avg, s1 grad_avg (centered), s2 momentum_buffer.
enum RmspropScalar { RS_lr, RS_alpha, RS_one_minus_alpha, RS_eps, RS_weight_decay, RS_momentum, RS_gsign };
enum RmspropFlag { RF_weight_decay, RF_centered, RF_momentum };

struct Rmsprop {
    template <typename T>
    MT_OPTIM_FN static void apply(idx i, T* p, const T* g, T* s0, T* s1, T* s2, const T* s, const T*, int f) {
        T pi = p[i], gi = g[i] * s[RS_gsign];
        if (f & (1 << RF_weight_decay)) gi = pi * s[RS_weight_decay] + gi;
        T sq = s0[i] * s[RS_alpha] + (gi * gi) * s[RS_one_minus_alpha];
        s0[i] = sq;
        T avg;
        if (f & (1 << RF_centered)) {
            T ga = s1[i] * s[RS_alpha] + gi * s[RS_one_minus_alpha];
            s1[i] = ga;
            avg = root(sq - ga * ga);
        } else {
            avg = root(sq);
        }
        T d = gi / (avg + s[RS_eps]);
        if (f & (1 << RF_momentum)) {
            d = s2[i] * s[RS_momentum] + d;
            s2[i] = d;
        }
        p[i] = pi - d * s[RS_lr];
    }
};

// ------------------------------------------------------------------------------------------ Adagrad
// s0 state_sum; t[0] = lr / (1 + (step - 1) * lr_decay).
enum AdagradScalar { GS_weight_decay, GS_eps, GS_gsign };
enum AdagradFlag { GF_weight_decay };

struct Adagrad {
    template <typename T>
    MT_OPTIM_FN static void apply(idx i, T* p, const T* g, T* s0, T*, T*, const T* s, const T* t, int f) {
        T pi = p[i], gi = g[i] * s[GS_gsign];
        if (f & (1 << GF_weight_decay)) gi = pi * s[GS_weight_decay] + gi;
        T sum = s0[i] + gi * gi;
        s0[i] = sum;
        p[i] = pi - (gi / (root(sum) + s[GS_eps])) * t[0];
    }
};

// ------------------------------------------------------------------------------------------ Lion
// s0 exp_avg. g1 = gsign (1 - beta1), g2 = gsign (1 - beta2); decay = 1 - lr * wd (1 without decay, exact).
enum LionScalar { LS_beta1, LS_beta2, LS_g1, LS_g2, LS_neg_lr, LS_decay };
enum LionFlag { LF_none };

struct Lion {
    template <typename T>
    MT_OPTIM_FN static void apply(idx i, T* p, const T* g, T* s0, T*, T*, const T* s, const T*, int) {
        T gi = g[i], mi = s0[i];
        T c = sign(mi * s[LS_beta1] + gi * s[LS_g1]);
        p[i] = p[i] * s[LS_decay] + c * s[LS_neg_lr];
        s0[i] = mi * s[LS_beta2] + gi * s[LS_g2];
    }
};

}  // namespace mt_optim

#endif
