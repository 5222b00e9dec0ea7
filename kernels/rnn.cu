// rnn.cu: the pointwise half of one recurrent step (LSTM and GRU cells), fused into one pass per step.
//
// The matrix products of a step are GEMMs of their own (matmul.cu): the input projection of every time step at
// once, gi = x W_ih^T + b_ih, and the hidden projection of this step, gh = h W_hh^T + b_hh. What is left is
// elementwise over the (B, H) state, and without fusion it would be about a dozen launches per step (one per gate
// nonlinearity, product and sum). Each thread owns one (row, unit) pair and reads that unit's gate columns; the
// gates are PyTorch's, in its order and layout (B, 4H: i, f, g, o; B, 3H: r, z, n).
//
// Kernels (T = float | double | __half | __nv_bfloat16; one thread per element of the (B, H) state, grid-stride
// loops; the 16-bit types compute in float, as PyTorch's fused CUDA cells do, and round each stored value once):
//   lstm_cell_forward<T>   i, f, o = sigmoid(gi + gh), g = tanh(gi + gh); c' = f c + i g, h' = o tanh(c')
//   lstm_cell_backward<T>  from dh' and dc' (either absent: a zero gradient) and the forward's own inputs (the
//                          gates and c' are recomputed, so the forward saves nothing of its own): the gradient of
//                          the pre-activation gates (B, 4H; gi's and gh's alike) and dc
//   gru_cell_forward<T>    r, z = sigmoid(gi + gh), n = tanh(gi_n + r gh_n) (gh_n holds b_hn, as in PyTorch),
//                          h' = n + z (h - n)
//   gru_cell_backward<T>   from dh' and the forward's inputs: d gi (B, 3H), d gh (B, 3H) and dh
//
// Every array is C-contiguous (the launcher copies any that is not). Sigmoid is 1 / (1 + exp(-x)): exp overflows
// to inf for very negative x and the quotient is the correct 0, with no NaN.
//
// @template-types: float double __half __nv_bfloat16
#include "common.cuh"

template <typename A> __device__ __forceinline__ A rnn_sigmoid(A x) { return (A)1 / ((A)1 + mt_exp(-x)); }

// the activated gates of state element e = (b, j), in the arithmetic type, and the offset of its first gate
// column, b * gates * H + j
template <typename A> struct LstmGates { A i, f, g, o; i64 row; };
template <typename A> struct GruGates { A r, z, n; i64 row; };

// gi[k] + gh[k] in the arithmetic type
template <typename T>
__device__ __forceinline__ acc_t<T> rnn_pre(const T* __restrict__ gi, const T* __restrict__ gh, i64 k) {
    return mt_acc(gi[k]) + mt_acc(gh[k]);
}

template <typename T>
__device__ __forceinline__ LstmGates<acc_t<T>> lstm_gates(const T* __restrict__ gi, const T* __restrict__ gh, i64 e,
                                                          i64 H) {
    const i64 b = e / H;
    const i64 row = b * 4 * H + (e - b * H);
    return {rnn_sigmoid(rnn_pre(gi, gh, row)), rnn_sigmoid(rnn_pre(gi, gh, row + H)),
            mt_tanh(rnn_pre(gi, gh, row + 2 * H)), rnn_sigmoid(rnn_pre(gi, gh, row + 3 * H)), row};
}

template <typename T>
__device__ __forceinline__ GruGates<acc_t<T>> gru_gates(const T* __restrict__ gi, const T* __restrict__ gh, i64 e,
                                                        i64 H) {
    typedef acc_t<T> A;
    const i64 b = e / H;
    const i64 row = b * 3 * H + (e - b * H);
    const A r = rnn_sigmoid(rnn_pre(gi, gh, row));
    return {r, rnn_sigmoid(rnn_pre(gi, gh, row + H)),
            mt_tanh(mt_acc(gi[row + 2 * H]) + r * mt_acc(gh[row + 2 * H])), row};
}

// ------------------------------------------------------------------------------------------ LSTM
template <typename T>
__global__ void lstm_cell_forward(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                                  T* __restrict__ h_out, T* __restrict__ c_out, i64 B, i64 H) {
    typedef acc_t<T> A;
    MT_GRID_STRIDE(e, B * H) {
        const LstmGates<A> a = lstm_gates(gi, gh, e, H);
        const A cn = a.f * mt_acc(c[e]) + a.i * a.g;
        c_out[e] = mt_cast<T>(cn);
        // h' from the float c', not the rounded one (PyTorch's fused cell)
        h_out[e] = mt_cast<T>(a.o * mt_tanh(cn));
    }
}

template <typename T>
__global__ void lstm_cell_backward(const T* __restrict__ dh, const T* __restrict__ dc_next,
                                   const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                                   T* __restrict__ dgates, T* __restrict__ dc, i64 B, i64 H, int has_dh,
                                   int has_dc) {
    typedef acc_t<T> A;
    MT_GRID_STRIDE(e, B * H) {
        const LstmGates<A> a = lstm_gates(gi, gh, e, H);
        const A i = a.i, f = a.f, g = a.g, o = a.o;
        const A cp = mt_acc(c[e]);
        const A tc = mt_tanh(f * cp + i * g);
        const A dh_ = has_dh ? mt_acc(dh[e]) : (A)0;
        // c' reaches the loss through h' = o tanh(c') and through the next step's c
        const A gc = (has_dc ? mt_acc(dc_next[e]) : (A)0) + dh_ * o * ((A)1 - tc * tc);
        T* d = dgates + a.row;
        d[0] = mt_cast<T>(gc * g * i * ((A)1 - i));
        d[H] = mt_cast<T>(gc * cp * f * ((A)1 - f));
        d[2 * H] = mt_cast<T>(gc * i * ((A)1 - g * g));
        d[3 * H] = mt_cast<T>(dh_ * tc * o * ((A)1 - o));
        dc[e] = mt_cast<T>(gc * f);
    }
}

// ------------------------------------------------------------------------------------------ GRU
template <typename T>
__global__ void gru_cell_forward(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ h,
                                 T* __restrict__ h_out, i64 B, i64 H) {
    typedef acc_t<T> A;
    MT_GRID_STRIDE(e, B * H) {
        const GruGates<A> a = gru_gates(gi, gh, e, H);
        h_out[e] = mt_cast<T>(a.n + a.z * (mt_acc(h[e]) - a.n));
    }
}

template <typename T>
__global__ void gru_cell_backward(const T* __restrict__ dh_next, const T* __restrict__ gi,
                                  const T* __restrict__ gh, const T* __restrict__ h, T* __restrict__ dgi,
                                  T* __restrict__ dgh, T* __restrict__ dh, i64 B, i64 H) {
    typedef acc_t<T> A;
    MT_GRID_STRIDE(e, B * H) {
        const GruGates<A> a = gru_gates(gi, gh, e, H);
        const A r = a.r, z = a.z, n = a.n;
        const A g = mt_acc(dh_next[e]);
        const A gn = g * ((A)1 - z) * ((A)1 - n * n);  // through tanh: the gradient of gi_n + r gh_n
        const A gr = gn * mt_acc(gh[a.row + 2 * H]) * r * ((A)1 - r);
        const A gz = g * (mt_acc(h[e]) - n) * z * ((A)1 - z);
        dgi[a.row] = mt_cast<T>(gr);
        dgi[a.row + H] = mt_cast<T>(gz);
        dgi[a.row + 2 * H] = mt_cast<T>(gn);
        dgh[a.row] = mt_cast<T>(gr);
        dgh[a.row + H] = mt_cast<T>(gz);
        dgh[a.row + 2 * H] = mt_cast<T>(gn * r);
        dh[e] = mt_cast<T>(g * z);
    }
}
