#pragma once
// What the A/B harnesses (gemm_ab.cu, fp8_ab.cu) share: CUDA error checks that stop the run, and
// timing one launch as nvdet bench does (CUDA events around each launch, after untimed warm-up
// launches), hot (inputs left in L2) or cold (a large write between launches evicts them).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("CUDA %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

__global__ void scrub(float* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = float(i);
}

struct LaunchTimes {
  float median_us, min_us;
};

// `reps` timed runs of `launch` on stream s after `warm` untimed ones; cold: scrub_n floats of
// scrub_buf written before each timed run.
template <class F>
LaunchTimes time_launches(F launch, cudaStream_t s, bool cold, float* scrub_buf, size_t scrub_n,
                          int warm, int reps) {
  for (int i = 0; i < warm; ++i) launch();
  CK(cudaStreamSynchronize(s));
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < reps; ++i) {
    if (cold) scrub<<<1024, 256, 0, s>>>(scrub_buf, scrub_n);
    CK(cudaEventRecord(ev[2 * i], s));
    launch();
    CK(cudaEventRecord(ev[2 * i + 1], s));
  }
  CK(cudaStreamSynchronize(s));
  std::vector<float> us(reps);
  for (int i = 0; i < reps; ++i) {
    float ms;
    CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    us[i] = 1000 * ms;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(us.begin(), us.end());
  return {us[reps / 2], us[0]};
}
