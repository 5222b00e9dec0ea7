// rnn.cu: the pointwise half of one recurrent step (LSTM and GRU cells), fused into one pass per step.
//
// The matrix products of a step are GEMMs of their own (matmul.cu): the input projection of every time step at
// once, gi = x W_ih^T + b_ih, and the hidden projection of this step, gh = h W_hh^T + b_hh. What is left is
// elementwise over the (B, H) state, and without fusion it would be about a dozen launches per step (one per gate
// nonlinearity, product and sum). Each thread owns one (row, unit) pair and reads that unit's gate columns; the
// gates are PyTorch's, in its order and layout (B, 4H: i, f, g, o; B, 3H: r, z, n).
//
// Kernels (T = float | double; one thread per element of the (B, H) state, grid-stride loops):
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
#include "common.cuh"

template <typename T> __device__ __forceinline__ T rnn_sigmoid(T x) { return (T)1 / ((T)1 + mt_exp(-x)); }

// the activated gates of state element e = (b, j) and the offset of its first gate column, b * gates * H + j
template <typename T> struct LstmGates { T i, f, g, o; i64 row; };
template <typename T> struct GruGates { T r, z, n; i64 row; };

template <typename T>
__device__ __forceinline__ LstmGates<T> lstm_gates(const T* __restrict__ gi, const T* __restrict__ gh, i64 e, i64 H) {
    const i64 b = e / H;
    const i64 row = b * 4 * H + (e - b * H);
    return {rnn_sigmoid(gi[row] + gh[row]), rnn_sigmoid(gi[row + H] + gh[row + H]),
            mt_tanh(gi[row + 2 * H] + gh[row + 2 * H]), rnn_sigmoid(gi[row + 3 * H] + gh[row + 3 * H]), row};
}

template <typename T>
__device__ __forceinline__ GruGates<T> gru_gates(const T* __restrict__ gi, const T* __restrict__ gh, i64 e, i64 H) {
    const i64 b = e / H;
    const i64 row = b * 3 * H + (e - b * H);
    const T r = rnn_sigmoid(gi[row] + gh[row]);
    return {r, rnn_sigmoid(gi[row + H] + gh[row + H]), mt_tanh(gi[row + 2 * H] + r * gh[row + 2 * H]), row};
}

// ------------------------------------------------------------------------------------------ LSTM
template <typename T>
__global__ void lstm_cell_forward(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                                  T* __restrict__ h_out, T* __restrict__ c_out, i64 B, i64 H) {
    MT_GRID_STRIDE(e, B * H) {
        const LstmGates<T> a = lstm_gates(gi, gh, e, H);
        const T cn = a.f * c[e] + a.i * a.g;
        c_out[e] = cn;
        h_out[e] = a.o * mt_tanh(cn);
    }
}

template <typename T>
__global__ void lstm_cell_backward(const T* __restrict__ dh, const T* __restrict__ dc_next,
                                   const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ c,
                                   T* __restrict__ dgates, T* __restrict__ dc, i64 B, i64 H, int has_dh,
                                   int has_dc) {
    MT_GRID_STRIDE(e, B * H) {
        const LstmGates<T> a = lstm_gates(gi, gh, e, H);
        const T i = a.i, f = a.f, g = a.g, o = a.o;
        const T cp = c[e];
        const T tc = mt_tanh(f * cp + i * g);
        const T dh_ = has_dh ? dh[e] : (T)0;
        // c' reaches the loss through h' = o tanh(c') and through the next step's c
        const T gc = (has_dc ? dc_next[e] : (T)0) + dh_ * o * ((T)1 - tc * tc);
        T* d = dgates + a.row;
        d[0] = gc * g * i * ((T)1 - i);
        d[H] = gc * cp * f * ((T)1 - f);
        d[2 * H] = gc * i * ((T)1 - g * g);
        d[3 * H] = dh_ * tc * o * ((T)1 - o);
        dc[e] = gc * f;
    }
}

// ------------------------------------------------------------------------------------------ GRU
template <typename T>
__global__ void gru_cell_forward(const T* __restrict__ gi, const T* __restrict__ gh, const T* __restrict__ h,
                                 T* __restrict__ h_out, i64 B, i64 H) {
    MT_GRID_STRIDE(e, B * H) {
        const GruGates<T> a = gru_gates(gi, gh, e, H);
        h_out[e] = a.n + a.z * (h[e] - a.n);
    }
}

template <typename T>
__global__ void gru_cell_backward(const T* __restrict__ dh_next, const T* __restrict__ gi,
                                  const T* __restrict__ gh, const T* __restrict__ h, T* __restrict__ dgi,
                                  T* __restrict__ dgh, T* __restrict__ dh, i64 B, i64 H) {
    MT_GRID_STRIDE(e, B * H) {
        const GruGates<T> a = gru_gates(gi, gh, e, H);
        const T r = a.r, z = a.z, n = a.n;
        const T g = dh_next[e];
        const T gn = g * ((T)1 - z) * ((T)1 - n * n);  // through tanh: the gradient of gi_n + r gh_n
        const T gr = gn * gh[a.row + 2 * H] * r * ((T)1 - r);
        const T gz = g * (h[e] - n) * z * ((T)1 - z);
        dgi[a.row] = gr;
        dgi[a.row + H] = gz;
        dgi[a.row + 2 * H] = gn;
        dgh[a.row] = gr;
        dgh[a.row + H] = gz;
        dgh[a.row + 2 * H] = gn * r;
        dh[e] = g * z;
    }
}
