// shared.cu: __shared__ tiles and block barriers.
//   transpose       32x33 padded tile, 32x8 threads, any matrix shape
//   sgemm_tiled     C = A @ B with TILE x TILE shared tiles (TILE from -DTILE, default 16)
//   block_sum       shared-memory tree reduction, one partial sum per block
//   count_positive  __syncthreads_count / _and / _or
#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(long long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                       int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

extern "C" __global__ void block_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
    __shared__ float s[1024];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
    s[threadIdx.x] = v;
    __syncthreads();
    // blockDim.x need not be a power of 2: fold the tail onto the largest power of 2 below it first
    int p = 1;
    while (p * 2 <= (int)blockDim.x) p *= 2;
    if ((int)threadIdx.x < (int)blockDim.x - p) s[threadIdx.x] += s[threadIdx.x + p];
    __syncthreads();
    for (int stride = p / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

extern "C" __global__ void count_positive(const float* x, int* out) {
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    int count = __syncthreads_count(v > 0.0f);
    int all = __syncthreads_and(v > 0.0f);
    int any = __syncthreads_or(v > 0.0f);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = count;
        out[3 * blockIdx.x + 1] = all;
        out[3 * blockIdx.x + 2] = any;
    }
}
