// atomics.cu: atomic operations on global and shared memory.
//   histogram      per-block shared histogram (atomicAdd int), merged into global with atomicAdd unsigned
//   float_sums     atomicAdd float and double into one cell per bucket
//   extremes       atomicMax / atomicMin int, atomicMax unsigned long long
//   cas_max_float  a float maximum built on atomicCAS (the classic pattern)
//   ticket         atomicInc wrapping counter and atomicExch
extern "C" __global__ void histogram(const int* __restrict__ x, unsigned* __restrict__ bins, int n, int nbins) {
    extern __shared__ int local[];
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&local[x[i]], 1);
    __syncthreads();
    for (int b = threadIdx.x; b < nbins; b += blockDim.x) atomicAdd(&bins[b], (unsigned)local[b]);
}

extern "C" __global__ void float_sums(const float* x, const int* bucket, float* sums, double* dsums, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&sums[bucket[i]], x[i]);
        atomicAdd(&dsums[bucket[i]], (double)x[i]);
    }
}

extern "C" __global__ void extremes(const int* x, int* mx, int* mn, unsigned long long* umx, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicMax(mx, x[i]);
        atomicMin(mn, x[i]);
        atomicMax(umx, (unsigned long long)(long long)x[i] * 3ull);
    }
}

__device__ float atomic_max_float(float* addr, float v) {
    int* p = reinterpret_cast<int*>(addr);
    int old = *p, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS(p, assumed, __float_as_int(v));
    } while (assumed != old);
    return __int_as_float(old);
}

extern "C" __global__ void cas_max_float(const float* x, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomic_max_float(out, x[i]);
}

extern "C" __global__ void ticket(unsigned* counter, int* last, int* seen) {
    unsigned t = atomicInc(counter, 9u);  // wraps to 0 after 9
    atomicAdd(&seen[t], 1);
    atomicExch(last, 1);
}
