// embedding.cu: scatter-add of rows, the backward of embedding / index_select (index_add along dim 0).
//
// Kernels (T = float | double):
//   embedding_backward<T>  out[idx[i], :] += grad[i, :] for i < n_idx, rows of `dim` contiguous elements;
//                          one thread per element of grad, atomicAdd so repeated indices all count
//                          (the order of the additions, and so the last bits of a sum, may vary from run
//                          to run on a GPU). Negative indices count from the end (NumPy's add.at);
//                          indices outside [-rows, rows) set bad[0] and are skipped, and the host raises
//                          an IndexError (the ops layer validates indices before it gets here).
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
