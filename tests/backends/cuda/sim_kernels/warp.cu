// warp.cu: warp collectives.
//   warp_sum_xor      butterfly sum with __shfl_xor_sync, every lane gets the total (full warps)
//   warp_sum_down     tree sum with __shfl_down_sync, lane 0 gets the total (full warps)
//   row_sum_partial   block of any size (e.g. 40 or 100 threads): partial last warp handled with a mask from
//                     __ballot_sync and clamped source lanes, then a shared-memory combine across warps
//   ballot_positive   __ballot_sync / __any_sync / __all_sync / __activemask
//   inclusive_scan    Hillis-Steele scan with __shfl_up_sync
//   broadcast16       __shfl_sync with width 16: each half-warp broadcasts its first lane
//   match_reduce      __match_any_sync and __reduce_add_sync
//   syncwarp_split    __syncwarp from two different branches (allowed) and a sub-warp mask
//   softmax_rows      one block per row: warp shuffles + shared memory block reductions (max, then sum), the
//                     shape of a real fused kernel; blockDim a multiple of 32
template <typename T>
__device__ __forceinline__ T warp_allreduce(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void warp_sum_xor(const float* x, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = warp_allreduce(x[i]);
    out[i] = v;
}

extern "C" __global__ void warp_sum_down(const double* x, double* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}

extern "C" __global__ void row_sum_partial(const float* x, float* out, int n) {
    __shared__ float warp_sums[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[blockIdx.x * n + i];
    unsigned mask = __ballot_sync(0xffffffffu, 1);  // the lanes this (possibly partial) warp has
    int lanes = __popc(mask);
    for (int o = 16; o > 0; o >>= 1) {
        int src = lane + o < lanes ? lane + o : lane;
        float other = __shfl_sync(mask, v, src);
        if (lane + o < lanes) v += other;
    }
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int w = 0; w < ((int)blockDim.x + 31) / 32; ++w) total += warp_sums[w];
        out[blockIdx.x] = total;
    }
}

extern "C" __global__ void ballot_positive(const float* x, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool p = x[i] > 0.0f;
    unsigned b = __ballot_sync(0xffffffffu, p);
    int any = __any_sync(0xffffffffu, p);
    int all = __all_sync(0xffffffffu, p);
    unsigned active = __activemask();
    if ((threadIdx.x & 31) == 0) {
        int w = i / 32;
        out[4 * w] = b;
        out[4 * w + 1] = any;
        out[4 * w + 2] = all;
        out[4 * w + 3] = active;
    }
}

extern "C" __global__ void inclusive_scan(const int* x, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = x[i];
    for (int o = 1; o < 32; o <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += up;
    }
    out[i] = v;
}

extern "C" __global__ void broadcast16(const long long* x, long long* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __shfl_sync(0xffffffffu, x[i], 0, 16);
}

extern "C" __global__ void match_reduce(const int* x, unsigned* same, int* total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    same[i] = __match_any_sync(0xffffffffu, x[i]);
    total[i] = __reduce_add_sync(0xffffffffu, x[i]);
}

extern "C" __global__ void syncwarp_split(const int* x, int* out) {
    __shared__ int s[32];
    int lane = threadIdx.x & 31;
    s[lane] = x[lane];
    if (lane < 16) {
        __syncwarp();
    } else {
        __syncwarp();
    }
    int v = s[31 - lane];
    if (lane < 8) v += __shfl_xor_sync(0x000000ffu, v, 1);  // a sub-warp collective over lanes 0-7
    out[lane] = v;
}

template <typename Op>
__device__ float block_allreduce(float v, Op op, float identity, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nwarps ? scratch[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();  // scratch is reused by the next reduction
    return v;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, row[i]);
    m = block_allreduce(m, MaxOp(), -INFINITY, scratch);
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s += __expf(row[i] - m);
    s = block_allreduce(s, SumOp(), 0.0f, scratch);
    float inv = 1.0f / s;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[i] = __expf(row[i] - m) * inv;
}
