// Micro-benchmark of log-softmax rows-kernel variants (block size, shared-memory stage, streaming
// stores). Build from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90a --fmad=true --expt-relaxed-constexpr -I. \
//     reports/h200/experiments/log-softmax-variants.cu -o log-softmax-variants
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/log_softmax.cu"

using namespace nvdet::kernels;
using BF = __nv_bfloat16;

__global__ void fill(BF* x, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    x[i] = __float2bfloat16((float(h & 0xffffff) / 16777216.0f - 0.5f) * 12.0f);
  }
}

template <bool S>
void launch(const BF* x, float* out, int rows, int64_t v, int threads, size_t stage) {
  auto k = log_softmax_rows_kernel<BF, float, 8, S>;
  int64_t staged = stage / 16;
  size_t smem = staged * 16;
  if (smem) cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  k<<<rows, threads, smem>>>(x, out, v, staged);
}

template <class F>
double time_us(F f) {
  for (int i = 0; i < 5; ++i) f();
  cudaDeviceSynchronize();
  std::vector<float> ms(20);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (auto& m : ms) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&m, a, b);
  }
  std::sort(ms.begin(), ms.end());
  return ms[10] * 1000.0;
}

int main() {
  const int64_t v = 151936;
  const int max_rows = 1024;
  BF* x;
  float* out;
  cudaMalloc(&x, size_t(max_rows) * v * 2);
  cudaMalloc(&out, size_t(max_rows) * v * 4);
  fill<<<1024, 256>>>(x, size_t(max_rows) * v, 1234);
  size_t cb = size_t(256) << 20;
  void *c0, *c1;
  cudaMalloc(&c0, cb);
  cudaMalloc(&c1, cb);
  cudaMemset(c1, 1, cb);
  const double copy_us = time_us([&] { cudaMemcpyAsync(c0, c1, cb, cudaMemcpyDeviceToDevice); });
  const double copy_gbps = 2.0 * cb / copy_us / 1e3;
  printf("copy 256 MiB D2D: %.1f us, %.0f GB/s\n", copy_us, copy_gbps);
  int dev = 0, per_sm = 0, reserved = 0, optin = 0;
  cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  printf("smem per SM %d, reserved %d, optin %d; product stage 512 thr: %zu, 1024 thr: %zu\n",
         per_sm, reserved, optin,
         log_softmax_stage_bytes(nvdet::DType::kBF16, nvdet::DType::kFP32, v, 512),
         log_softmax_stage_bytes(nvdet::DType::kBF16, nvdet::DType::kFP32, v, 1024));
  const size_t full1 = size_t(optin) - 1024;  // one block per SM
  const size_t half = (size_t(per_sm) / 2 - reserved - 512) / 16 * 16;
  const size_t quarter = (size_t(per_sm) / 4 - reserved - 512) / 16 * 16;
  struct Var {
    const char* name;
    int threads;
    size_t stage;
    bool stream;
  };
  const Var vars[] = {
      {"t512 s0 plain (old)", 512, 0, false},      {"t512 s0 stream", 512, 0, true},
      {"t512 half plain", 512, half, false},       {"t512 half stream", 512, half, true},
      {"t512 full stream", 512, full1, true},      {"t1024 s0 stream", 1024, 0, true},
      {"t1024 full plain", 1024, full1, false},    {"t1024 full stream", 1024, full1, true},
      {"t256 quarter stream", 256, quarter, true}, {"t256 half stream", 256, half, true},
  };
  std::vector<float> ref_by_threads[1025];
  for (int rows : {1024, 264, 128}) {
    const double bytes = double(rows) * v * (2 + 4);
    for (const Var& var : vars) {
      auto f = [&] {
        if (var.stream) launch<true>(x, out, rows, v, var.threads, var.stage);
        else launch<false>(x, out, rows, v, var.threads, var.stage);
      };
      const double us = time_us(f);
      cudaError_t e = cudaDeviceSynchronize();
      // bits: same block size must give the same output whatever the stage / store hint
      std::vector<float> h(size_t(rows) * v);
      cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost);
      const char* same = "-";
      auto& ref = ref_by_threads[var.threads];
      if (rows == 1024) {
        if (ref.empty()) ref = h;
        else
          same = memcmp(ref.data(), h.data(), h.size() * 4) == 0 ? "same bits" : "DIFFERENT BITS";
      }
      printf("rows %4d  %-22s stage %6zu  %8.1f us  %6.0f GB/s  %4.0f%% of copy  %s %s\n", rows,
             var.name, var.stage, us, bytes / us / 1e3, 100.0 * bytes / us / 1e3 / copy_gbps, same,
             e == cudaSuccess ? "" : cudaGetErrorString(e));
    }
  }
  return 0;
}
