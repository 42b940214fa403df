// Which scale layouts cuBLASLt's block-scaled FP8 modes read on this GPU (a throwaway probe).
#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>
static float dec(uint8_t c) {
  __nv_fp8_e4m3 v;
  v.__x = c;
  return float(v);
}
int run(int m, int n, int k, int amode, int wmode) {
  const int KG = (k + 127) / 128, NB = (n + 127) / 128;
  std::mt19937 rng(m * 7 + n);
  std::vector<uint8_t> a(m * k), w(n * k);
  auto code = [&] {
    uint8_t c;
    do {
      c = rng() & 0xff;
    } while ((c & 0x7f) == 0x7f || (c & 0x7f) > 0x50);
    return c;
  };
  for (auto& x : a) x = code();
  for (auto& x : w) x = code();
  int na = amode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F      ? m * KG
           : amode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F ? m
                                                                 : 1;
  int nw = wmode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F  ? NB * KG
           : wmode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F ? n
           : wmode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F    ? n * KG
                                                                 : 1;
  std::vector<float> sa(na), sw(nw);
  for (auto& s : sa) s = std::ldexp(1.0f + (rng() % 64) / 64.0f, -int(rng() % 6));
  for (auto& s : sw) s = std::ldexp(1.0f + (rng() % 64) / 64.0f, -int(rng() % 6));
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  void *da, *dw, *dd, *dsa, *dsw, *ws;
  cudaMalloc(&da, m * k);
  cudaMalloc(&dw, n * k);
  cudaMalloc(&dd, m * n * 4);
  cudaMalloc(&dsa, na * 4);
  cudaMalloc(&dsw, nw * 4);
  cudaMalloc(&ws, 32 << 20);
  cudaMemcpy(da, a.data(), m * k, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), n * k, cudaMemcpyHostToDevice);
  cudaMemcpy(dsa, sa.data(), na * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dsw, sw.data(), nw * 4, cudaMemcpyHostToDevice);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dsw, sizeof dsw);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dsa, sizeof dsa);
  int32_t wm = wmode, am = amode;
  cublasStatus_t s0 =
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &wm, sizeof wm);
  cublasStatus_t s0b =
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &am, sizeof am);
  cublasLtMatrixLayout_t lw, la, ld;
  cublasLtMatrixLayoutCreate(&lw, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, n, m, n);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  uint64_t mx = 32 << 20;
  cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &mx, sizeof mx);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t s1 = cublasLtMatmulAlgoGetHeuristic(h, desc, lw, la, ld, ld, p, 1, &r, &found);
  float alpha = 1, beta = 0;
  cublasStatus_t s2 = found ? cublasLtMatmul(h, desc, &alpha, dw, lw, da, la, &beta, dd, ld, dd, ld,
                                             &r.algo, ws, 32 << 20, 0)
                            : CUBLAS_STATUS_NOT_SUPPORTED;
  cudaError_t e = cudaDeviceSynchronize();
  std::vector<float> d(m * n);
  cudaMemcpy(d.data(), dd, m * n * 4, cudaMemcpyDeviceToHost);
  printf(
      "m=%d n=%d k=%d amode=%d wmode=%d: setmode %s/%s heuristic %s found %d matmul %s sync %s\n",
      m, n, k, amode, wmode, cublasGetStatusString(s0), cublasGetStatusString(s0b),
      cublasGetStatusString(s1), found, cublasGetStatusString(s2), cudaGetErrorString(e));
  if (!found || s2 != CUBLAS_STATUS_SUCCESS) return 0;
  for (int ha = 0; ha < 2; ++ha)
    for (int hw = 0; hw < 2; ++hw) {
      double worst = 0;
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double acc = 0, mag = 0;
          for (int g = 0; g < KG; ++g) {
            double part = 0, pm = 0;
            for (int kk = g * 128; kk < k && kk < g * 128 + 128; ++kk) {
              double pr = double(dec(a[i * k + kk])) * dec(w[j * k + kk]);
              part += pr;
              pm += std::fabs(pr);
            }
            double s_a = amode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                             ? (ha ? sa[g * m + i] : sa[i * KG + g])
                         : amode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F ? sa[i]
                                                                               : sa[0];
            double s_w = wmode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                             ? (hw ? sw[g * NB + j / 128] : sw[(j / 128) * KG + g])
                         : wmode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F
                             ? (hw ? sw[g * n + j] : sw[j * KG + g])
                         : wmode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F ? sw[j]
                                                                               : sw[0];
            acc += part * s_a * s_w;
            mag += pm * s_a * s_w;
          }
          worst = std::fmax(worst, std::fabs(acc - d[i * n + j]) / (mag + 1e-30));
        }
      printf("   act layout %s, weight layout %s: max err %.3g of sum|a w|\n",
             ha ? "[g][row]" : "[row][g]", hw ? "[g][nb]" : "[nb][g]", worst);
    }
  return 0;
}
int main() {
  const int V = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F,
            B = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
            O = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, S = 0;
  run(256, 384, 512, V, B);
  run(33, 384, 512, V, B);
  run(1, 384, 512, V, B);
  run(256, 320, 448, V, B);
  run(256, 384, 512, V, V);
  run(256, 384, 512, O, O);
  run(33, 384, 512, O, O);
  run(256, 384, 512, O, S);
  run(256, 384, 512, S, O);
  return 0;
}
