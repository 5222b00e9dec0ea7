// faults.cu: kernels with bugs the simulator must report (kernel name and source line).
// The line numbers are asserted by test_sim.py: keep the marked statements where they are or update the test.
#include <assert.h>
extern "C" __global__ void divergent_barrier(float* x) {
    if (threadIdx.x < 16) {
        __syncthreads();  // line 6
    } else {
        x[threadIdx.x] = 1.0f;
        __syncthreads();  // line 9
    }
}

extern "C" __global__ void exit_before_barrier(float* x, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    x[i] = 1.0f;
    __syncthreads();  // line 17
    x[i] += x[(i + 1) % n] > 0.0f ? 1.0f : 0.0f;  // reads 1 or 2 (neighbours may have updated): race-free result
}

extern "C" __global__ void shuffle_absent_lane(const float* x, float* out) {
    // blockDim.x = 40: warp 1 has lanes 0-7 only, and lane 0 reads lane 16
    float v = x[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);  // line 24
    if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = v;
}

extern "C" __global__ void shuffle_exited_lane(const float* x, float* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    float v = __shfl_xor_sync(0xffffffffu, x[i], 1);  // line 31
    out[i] = v;
}

extern "C" __global__ void shuffle_outside_mask(const int* x, int* out) {
    int v = __shfl_sync(0x0000ffffu, x[threadIdx.x], threadIdx.x + 1);  // line 36
    out[threadIdx.x] = v;
}

extern "C" __global__ void warp_waits_for_barrier(float* x) {
    if (threadIdx.x == 0) {
        __syncthreads();  // line 42
    } else {
        x[threadIdx.x] = __shfl_sync(0xffffffffu, 1.0f, 0);  // line 44
    }
}

extern "C" __global__ void failing_assert(const int* x) {
    assert(x[blockIdx.x * blockDim.x + threadIdx.x] >= 0);  // line 49
}

extern "C" __global__ void trap_on_negative(const int* x) {
    if (x[threadIdx.x] < 0) __trap();  // line 53
}

extern "C" __global__ void mask_without_self(int* out) {
    out[threadIdx.x] = __ballot_sync(0x1u, 1);  // line 57
}

extern "C" __global__ void bad_width(int* out) {
    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0, 12);  // line 61
}
