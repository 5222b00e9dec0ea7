// embedding.cu: scatter-add of rows, the backward of embedding / index_select (index_add along dim 0).
//
// Kernels:
//   embedding_backward<T>         (T = float | double) out[idx[i], :] += grad[i, :] for i < n_idx, rows of `dim`
//                                 contiguous elements; one thread per element of grad, atomicAdd so repeated
//                                 indices all count (the order of the additions, and so the last bits of a sum,
//                                 may vary from run to run on a GPU).
//   embedding_backward_sorted<T>  (T = __half | __nv_bfloat16) the same sum for the 16-bit types, where an atomic
//                                 add would round to 8 or 11 bits at every addition: the launcher sorts the
//                                 (wrapped) indices stably, so the gradient rows of one output row form a
//                                 segment; the thread of a segment's first position and column j accumulates
//                                 out[r, j] and the segment's rows in float, in their original order, and rounds
//                                 once. Deterministic and bit-identical with the CPU's float32 buffer; no atomics
//                                 and no scratch of the table's size. A segment is summed by one thread per
//                                 column, so a row repeated k times costs k serial loads (a batch of tokens
//                                 repeats its most frequent ones a few hundred times at most).
// Negative indices count from the end (NumPy's add.at); indices outside [-rows, rows) set bad[0] and are skipped,
// and the host raises an IndexError at its next synchronisation (the ops layer validates indices before).
//
// @template-types: float double
#include "common.cuh"

template <typename T>
__global__ void embedding_backward(const i64* __restrict__ idx, const T* __restrict__ grad, T* __restrict__ out,
                                   int* __restrict__ bad, i64 n_idx, i64 dim, i64 rows) {
    MT_GRID_STRIDE(e, n_idx * dim) {
        i64 i = e / dim, j = e - i * dim;
        i64 r = idx[i];
        if (r < 0) r += rows;
        if (r < 0 || r >= rows) {
            if (j == 0) atomicExch(bad, 1);
            continue;
        }
        atomicAdd(out + r * dim + j, grad[e]);
    }
}

// key: the indices wrapped into [0, rows) where they were in [-rows, 0), sorted; order: the stable permutation that
// sorts them (gradient row of sorted position s = order[s])
// @types: __half __nv_bfloat16
template <typename T>
__global__ void embedding_backward_sorted(const i64* __restrict__ key, const i64* __restrict__ order,
                                          const T* __restrict__ grad, T* __restrict__ out, int* __restrict__ bad,
                                          i64 n_idx, i64 dim, i64 rows) {
    MT_GRID_STRIDE(e, n_idx * dim) {
        i64 s = e / dim, j = e - s * dim;
        i64 r = key[s];
        if (s > 0 && key[s - 1] == r) continue;  // not the first position of its segment
        if (r < 0 || r >= rows) {
            if (j == 0) atomicExch(bad, 1);
            continue;
        }
        float acc = mt_acc(out[r * dim + j]);
        for (i64 t = s; t < n_idx && key[t] == r; ++t) acc += mt_acc(grad[order[t] * dim + j]);
        out[r * dim + j] = mt_cast<T>(acc);
    }
}
