// helpers.cuh: included through include_dirs, to test dependency tracking of the compile cache.
#pragma once
__device__ __forceinline__ float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }
