// A/B timing of the invariant FP8 GEMM across commits, beside cuBLASLt's FP8 matmul in the same
// process: built against one tree's kernels/ by build.sh (HARNESS=fp8), times fp8_gemm_launch and
// cublasLtMatmul (e4m3 in, bf16 out, one scale per operand, fast accumulation off) like nvdet
// bench (events around each launch, median after warm-up), hot (operands left in L2) and cold (a
// 256 MiB write between launches). cuBLASLt writes bf16 itself, as the `cublas` backend calls it
// without a bias: its time is the matmul kernel's alone.
// Each line ends with a hash of nvdet's output bytes, so that builds can be checked for equal bits.
//
// Usage: fp8_ab [config=N] [ctas=N] [group|block] [fast] [nolt] m,n,k ...
//   group: scales per 128-wide K group (group_128 activations, a weight scale per column and
//   group); block: group_128 activations and block_128x128 weights (one weight scale per 128
//   columns and group, w_scale_blocks_of_128: the promotion's per-row form); fast: fast
//   accumulation (one scale per operand only).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ab_timing.cuh"
#include "kernels/gemm_fp8.cuh"

namespace k = nvdet::kernels;

#define LT(x)                                                                    \
  do {                                                                           \
    cublasStatus_t s_ = (x);                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                           \
      std::printf("cuBLASLt status %d at %s:%d\n", int(s_), __FILE__, __LINE__); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

__device__ unsigned mix(unsigned x) {
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return x;
}
// e4m3 codes with magnitudes up to 0x7d (never the NaN codes 0x7f / 0xff), random signs.
__global__ void fill_codes(uint8_t* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const unsigned x = mix(unsigned(i) * 2654435761u ^ seed);
    p[i] = static_cast<uint8_t>((x % 0x7e) | ((x >> 16) & 0x80));
  }
}
// block_128x128 weight scales laid out per column (w_scale[g * n + j]): one value per 128 columns.
__global__ void fill_block_scales(float* p, int n, int groups, unsigned seed) {
  const size_t total = size_t(n) * groups;
  const int blocks = (n + 127) / 128;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const unsigned g = unsigned(i / n), j = unsigned(i % n);
    p[i] = 0.001f + (mix((g * blocks + j / 128) ^ seed) % 1000) * 1e-5f;
  }
}
__global__ void fill_scales(float* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = 0.001f + (mix(unsigned(i) ^ seed) % 1000) * 1e-5f;
}
// The entry's cluster size; trees from before the cluster entries have no cluster_m.
template <class Config>
int cluster_of(const Config& c) {
  if constexpr (requires { c.cluster_m; }) {
    return c.cluster_m;
  } else {
    return 1;
  }
}

uint64_t fnv1a(const std::vector<uint8_t>& b) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t c : b) h = (h ^ c) * 1099511628211ull;
  return h;
}

int main(int argc, char** argv) {
  int config = -1, ctas = 0;
  bool group = false, block = false, fast = false, lt = true;
  std::vector<const char*> shapes;
  for (int a = 1; a < argc; ++a) {
    if (std::strncmp(argv[a], "config=", 7) == 0) {
      config = std::atoi(argv[a] + 7);
    } else if (std::strncmp(argv[a], "ctas=", 5) == 0) {
      ctas = std::atoi(argv[a] + 5);
    } else if (std::strcmp(argv[a], "group") == 0) {
      group = true;
    } else if (std::strcmp(argv[a], "block") == 0) {
      group = block = true;
    } else if (std::strcmp(argv[a], "fast") == 0) {
      fast = true;
    } else if (std::strcmp(argv[a], "nolt") == 0) {
      lt = false;
    } else {
      shapes.push_back(argv[a]);
    }
  }
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t scrub_n = size_t(64) << 20;
  float* scrub_buf;
  CK(cudaMalloc(&scrub_buf, scrub_n * 4));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cublasLtHandle_t handle;
  LT(cublasLtCreate(&handle));
  const size_t ws_bytes = size_t(32) << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  for (const char* shape : shapes) {
    int m, n, kk;
    if (std::sscanf(shape, "%d,%d,%d", &m, &n, &kk) != 3) continue;
    const int groups = (kk + 127) / 128;
    uint8_t *A, *W;
    float *sa, *sw;
    void* O;
    void* O_lt;
    CK(cudaMalloc(&A, size_t(m) * kk));
    CK(cudaMalloc(&W, size_t(n) * kk));
    CK(cudaMalloc(&sa, size_t(m) * groups * 4));
    CK(cudaMalloc(&sw, size_t(n) * groups * 4));
    CK(cudaMalloc(&O, size_t(m) * n * 2));
    CK(cudaMalloc(&O_lt, size_t(m) * n * 2));
    fill_codes<<<1024, 256>>>(A, size_t(m) * kk, 1);
    fill_codes<<<1024, 256>>>(W, size_t(n) * kk, 2);
    fill_scales<<<1024, 256>>>(sa, size_t(m) * groups, 3);
    if (block) {
      fill_block_scales<<<1024, 256>>>(sw, n, groups, 4);
    } else {
      fill_scales<<<1024, 256>>>(sw, size_t(n) * groups, 4);
    }
    k::Fp8GemmProblem p;
    p.a = A;
    p.w = W;
    p.a_scale = sa;
    p.w_scale = sw;
    p.out = O;
    p.out_type = k::ElemType::kBF16;
    p.m = m, p.n = n, p.k = kk, p.lda = kk, p.ldw = kk, p.ldo = n;
    p.per_group = group;
    p.w_scale_blocks_of_128 = block;
    p.promoted = !fast;
    if (const char* why = k::fp8_gemm_unsupported(p)) {
      std::printf("%s: %s\n", shape, why);
      continue;
    }
    const k::Fp8GemmPlan plan = k::fp8_gemm_plan(p, prop.multiProcessorCount, config, ctas);
    auto run_nvdet = [&] { CK(k::fp8_gemm_launch(p, plan, s)); };

    // cuBLASLt: D^T[n, m] = W[n, k] . A[m, k]^T in column-major terms (TN, as FP8 requires).
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulHeuristicResult_t heur{};
    bool lt_ok = lt && !group;
    if (lt_ok) {
      LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
      // One scale per operand: the first element of each scale array.
      const void* scale_w = sw;
      const void* scale_a = sa;
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_w,
                                        sizeof(scale_w)));
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a,
                                        sizeof(scale_a)));
      const int8_t fast_accum = fast ? 1 : 0;
      LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                        sizeof(fast_accum)));
      LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, kk, n, kk));
      LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, kk, m, kk));
      LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
      cublasLtMatmulPreference_t pref;
      LT(cublasLtMatmulPreferenceCreate(&pref));
      LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &ws_bytes, sizeof(ws_bytes)));
      int found = 0;
      if (cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, pref, 1, &heur, &found) !=
              CUBLAS_STATUS_SUCCESS ||
          found == 0) {
        std::printf("%s: cuBLASLt has no FP8 kernel writing bf16\n", shape);
        lt_ok = false;
      }
      cublasLtMatmulPreferenceDestroy(pref);
    }
    const float alpha = 1.0f, beta = 0.0f;
    auto run_lt = [&] {
      LT(cublasLtMatmul(handle, desc, &alpha, W, la, A, lb, &beta, O_lt, ld, O_lt, ld, &heur.algo,
                        ws, ws_bytes, s));
    };

    run_nvdet();
    CK(cudaStreamSynchronize(s));
    std::vector<uint8_t> bytes(size_t(m) * n * 2);
    CK(cudaMemcpy(bytes.data(), O, bytes.size(), cudaMemcpyDeviceToHost));
    const uint64_t hash = fnv1a(bytes);
    const k::Fp8GemmConfig& c = k::kFp8GemmConfigs[plan.config];
    const int cluster = cluster_of(c);
    for (int cold = 0; cold < 2; ++cold) {
      const LaunchTimes t = time_launches(run_nvdet, s, cold, scrub_buf, scrub_n, 10, 50);
      const LaunchTimes l =
          lt_ok ? time_launches(run_lt, s, cold, scrub_buf, scrub_n, 10, 50) : LaunchTimes{0, 0};
      const float med = t.median_us, lo = t.min_us, lt_med = l.median_us, lt_lo = l.min_us;
      const double tflops = 2.0 * m * n * kk / (med * 1e-6) / 1e12;
      std::printf(
          "m=%d n=%d k=%d %s%s config=%d tile=%dx%d cluster=%d ctas=%d %s nvdet %.2f us (min "
          "%.2f, %.0f TFLOP/s) cublasLt %.2f us (min %.2f) time ratio %.3f hash %016llx\n",
          m, n, kk,
          block   ? "block "
          : group ? "group "
                  : "",
          fast ? "fast" : "promoted", plan.config, c.tile_m, c.tile_n, cluster, plan.ctas,
          cold ? "cold" : "hot ", med, lo, tflops, lt_med, lt_lo, lt_ok ? med / lt_med : 0.0,
          static_cast<unsigned long long>(hash));
    }
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    cudaFree(A);
    cudaFree(W);
    cudaFree(sa);
    cudaFree(sw);
    cudaFree(O);
    cudaFree(O_lt);
  }
  return 0;
}
