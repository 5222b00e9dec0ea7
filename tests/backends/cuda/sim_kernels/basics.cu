// basics.cu: simulator test kernels without barriers or warp collectives.
//   vec_add           grid-stride loop, 64-bit size
//   grid_ids          2-D/3-D grids and blocks: every thread writes its built-ins
//   scalars           one parameter of every scalar type, echoed back as doubles
//   scale_tensors     multi-tensor kernel reading pointer tables from device memory
//   copy_float4       128-bit vector loads/stores with a scalar tail
//   axpy<T>           template exported through name_expressions
//   affine            struct parameter passed by value
//   reverse_dynamic   extern __shared__ buffer sized by the launch
//   reverse_global    extern __shared__ declared at namespace scope
//   helper_noinline   __noinline__ device function
#include "helpers.cuh"

extern "C" __global__ void vec_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                   long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        out[i] = a[i] + b[i];
}

extern "C" __global__ void grid_ids(int* out) {
    // out[linear thread][0..11] = threadIdx, blockIdx, blockDim, gridDim
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int* o = out + 12 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    dim3 bd = blockDim;
    uint3 t = threadIdx;
    o[0] = t.x; o[1] = t.y; o[2] = t.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
    o[6] = bd.x; o[7] = bd.y; o[8] = bd.z;
    o[9] = gridDim.x; o[10] = gridDim.y; o[11] = gridDim.z;
}

extern "C" __global__ void scalars(double* out, bool b, signed char i8, unsigned char u8, short i16,
                                   unsigned short u16, int i32, unsigned int u32, long long i64,
                                   unsigned long long u64, float f32, double f64) {
    out[0] = b; out[1] = i8; out[2] = u8; out[3] = i16; out[4] = u16; out[5] = i32;
    out[6] = u32; out[7] = (double)i64; out[8] = (double)u64; out[9] = f32; out[10] = f64;
}

extern "C" __global__ void scale_tensors(const float* const* srcs, float* const* dsts, const long long* sizes,
                                         int n_tensors, float alpha) {
    // blockIdx.y picks the tensor, a grid-stride loop over x covers it
    int t = blockIdx.y;
    if (t >= n_tensors) return;
    const float* src = srcs[t];
    float* dst = dsts[t];
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < sizes[t]; i += stride)
        dst[i] = alpha * src[i];
}

extern "C" __global__ void copy_float4(const float* __restrict__ x, float* __restrict__ y, int n) {
    int n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += blockDim.x * gridDim.x) {
        float4 v = __ldg(&x4[i]);
        y4[i] = make_float4(v.x * 2.0f, v.y * 2.0f, v.z * 2.0f, v.w * 2.0f);
    }
    for (int i = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = x[i] * 2.0f;
}

template <typename T>
__global__ void axpy(T alpha, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}

struct Affine {
    int n;
    float scale;
    float shift;
};

extern "C" __global__ void affine(Affine p, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = p.scale * x[i] + p.shift;
}

extern "C" __global__ void reverse_dynamic(const float* x, float* y, int n) {
    extern __shared__ __align__(16) float buf[];
    int t = threadIdx.x;
    if (t < n) buf[t] = x[t];
    __syncthreads();
    if (t < n) y[t] = buf[n - 1 - t];
}

extern __shared__ int global_buf[];

extern "C" __global__ void reverse_global(const int* x, int* y) {
    int t = threadIdx.x;
    global_buf[t] = x[blockIdx.x * blockDim.x + t];
    __syncthreads();
    int* p = global_buf;
    y[blockIdx.x * blockDim.x + t] = p[blockDim.x - 1 - t];
}

__device__ __noinline__ float cube(float v) { return v * v * v; }

extern "C" __global__ void helper_noinline(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = cube(x[i]) + clamp01(x[i]);
}
