// GPU GEMM backends: every one against the CPU reference with a stated tolerance, and the
// cuda-invariant backend bitwise batch-invariant: a probe row placed first, in the middle or last
// of batches of every size 1..512 and powers of two up to 8192, over repeats, for bf16, fp16 and
// fp32, odd shapes, bias and every output type, and with heavy cuBLAS work running concurrently.
// The invariant kernels' choices are also forced through the kernel API and compared bitwise: every
// wgmma tile configuration and persistent CTA count, the mma.sync path's schedules (split-chunks,
// in-CTA), and the portable mma.sync path on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/gemm_invariant.cuh"
#include "kernels/tensor_map.cuh"
#endif

namespace nvdet {
namespace {

#define REQUIRE_GPU() \
  if (!nvdet::testing::gpu_available()) GTEST_SKIP() << "no GPU"

constexpr uint64_t kSeed = 20261130;

// The wgmma table's entries (none without the CUDA build, where every GPU test skips).
#ifdef NVDET_WITH_CUDA
constexpr int kWgmmaConfigs = kernels::kGemmWgmmaConfigCount;
#else
constexpr int kWgmmaConfigs = 0;
#endif

// Seeded rows: row i of the result is stream first_stream + i, so a row's data depends only on
// its stream, never on the batch it is put in.
HostTensor seeded_rows(DType t, int64_t rows, int64_t cols, uint64_t first_stream,
                       float stddev = 1.0f) {
  HostTensor out(t, {rows, cols});
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    fill_normal(row, kSeed, first_stream + static_cast<uint64_t>(r), stddev);
    for (int64_t c = 0; c < cols; ++c) out.set(r * cols + c, row[static_cast<size_t>(c)]);
  }
  return out;
}

HostTensor seeded_vector(DType t, int64_t n, uint64_t stream) {
  HostTensor out(t, {n});
  fill_normal(out, kSeed, stream);
  return out;
}

std::vector<uint8_t> row_bits(const HostTensor& t, int64_t row) {
  const size_t bytes = static_cast<size_t>(t.row_elems()) * dtype_size(t.dtype());
  const auto* p = reinterpret_cast<const uint8_t*>(t.data()) + static_cast<size_t>(row) * bytes;
  return {p, p + bytes};
}

// The weights of one shape, reused across a sweep (same object: uploaded once).
struct GemmShape {
  DType dtype;
  int64_t n, k;
  HostTensor w, bias;
  GemmShape(DType t, int64_t n_, int64_t k_) : dtype(t), n(n_), k(k_) {
    w = seeded_rows(t, n, k, 1u << 20, 0.05f);
    bias = seeded_vector(t, n, 1u << 21);
  }
};

// Tolerance against the double-accumulating CPU reference, per element:
//   |gpu - ref| <= 2^(1-p) |ref| + 2e-5 * sum_k |a_k w_k| + 1e-30
// where p is the output type's significand precision (8 bf16, 11 fp16, 24 fp32). The first term
// is one unit in the last place of the output: the exact sum and the GPU's fp32 sum may fall on
// either side of a rounding boundary, so the two outputs may be neighbours (seen on the H200 for
// every backend, cuBLAS included). The second bounds fp32 accumulation over K <= 16384. A wrong
// tile, layout or chunk would miss by O(|ref|), far outside both.
void expect_close_to_reference(const HostTensor& got, const HostTensor& ref, const HostTensor& a,
                               const HostTensor& w, const HostTensor* bias,
                               const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  const int64_t m = a.dim(0), k = a.dim(1), n = w.dim(0);
  const double rel = got.dtype() == DType::kBF16   ? std::ldexp(1.0, -7)
                     : got.dtype() == DType::kFP16 ? std::ldexp(1.0, -10)
                                                   : std::ldexp(1.0, -23);
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double mag = bias ? std::fabs(bias->get(j)) : 0.0;
      for (int64_t q = 0; q < k; ++q) mag += std::fabs(double(a.get(i * k + q)) * w.get(j * k + q));
      const double r = ref.get(i * n + j), g = got.get(i * n + j);
      // With a bias, cuBLASLt's epilogue may round the product to the 16-bit output type before
      // adding the bias (seen on the H200: fp16 output, m=5 n=1000 k=1001, off by 0.00082 where
      // the product is ~2), so allow one output ulp of the product as well.
      const double pre_bias = bias ? rel * std::fabs(r - bias->get(j)) : 0.0;
      const double tol = rel * std::fabs(r) + pre_bias + 2e-5 * mag + 1e-30;
      if (!(std::fabs(g - r) <= tol) && ++bad <= 3) {
        ADD_FAILURE() << what << ": element [" << i << ", " << j << "] is " << g << ", reference "
                      << r << " (tolerance " << tol << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << what << ": elements outside the tolerance";
}

std::string describe(DType in, DType out, int64_t m, int64_t n, int64_t k, bool bias) {
  return std::string(dtype_name(in)) + "->" + std::string(dtype_name(out)) +
         " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
         (bias ? " +bias" : "");
}

// ---- correctness -------------------------------------------------------------------------------

struct Case {
  DType in, out;
  int64_t m, n, k;
  bool bias;
};

TEST(GpuGemm, EveryBackendMatchesTheCpuReference) {
  REQUIRE_GPU();
  const std::vector<Case> cases = {
      {DType::kBF16, DType::kBF16, 8, 4096, 4096, true},
      {DType::kBF16, DType::kFP32, 7, 4095, 4100, false},
      {DType::kBF16, DType::kFP16, 33, 4097, 1000, true},
      {DType::kFP16, DType::kFP16, 5, 1000, 1001, true},
      {DType::kFP16, DType::kFP32, 16, 512, 2048, false},
      {DType::kFP16, DType::kBF16, 3, 256, 3000, true},
      {DType::kFP32, DType::kFP32, 9, 1000, 1500, true},
      {DType::kFP32, DType::kBF16, 3, 300, 700, true},
  };
  auto reference = make_backend("cpu-reference");
  // cublaslt-ws1k too: a split-K that dropped the K tail would show here (K = 4100, 1001, 3000).
  const std::vector<std::string> gpu_backends = {"cublas", "cublaslt-nosplit", "cublaslt-ws1k",
                                                 "cuda-vendor-policy", "cuda-invariant"};
  std::map<std::string, std::unique_ptr<Backend>> backends;
  for (const auto& name : gpu_backends) backends[name] = make_backend(name);
  for (const Case& c : cases) {
    const HostTensor a = seeded_rows(c.in, c.m, c.k, 0);
    const HostTensor w = seeded_rows(c.in, c.n, c.k, 1u << 20, 0.05f);
    const HostTensor bias = seeded_vector(c.in, c.n, 1u << 21);
    const GemmArgs args{&a, &w, c.bias ? &bias : nullptr, c.out, false};
    const HostTensor ref = reference->run(args, nullptr);
    for (const auto& name : gpu_backends) {
      const HostTensor got = backends[name]->run(args, nullptr);
      expect_close_to_reference(got, ref, a, w, c.bias ? &bias : nullptr,
                                name + " " + describe(c.in, c.out, c.m, c.n, c.k, c.bias));
    }
  }
}

TEST(GpuGemm, VendorNotesNameTheChosenAlgorithm) {
  REQUIRE_GPU();
  const HostTensor a = seeded_rows(DType::kBF16, 4, 4096, 0);
  const HostTensor w = seeded_rows(DType::kBF16, 4096, 4096, 1u << 20, 0.05f);
  for (const std::string name : {"cublas", "cublaslt-nosplit"}) {
    RunNotes notes;
    make_backend(name)->run(GemmArgs{&a, &w, nullptr, DType::kBF16, false}, &notes);
    for (const char* key :
         {"kernel", "algo_id", "tile", "stages", "split_k", "reduction_scheme", "cta_swizzling"}) {
      EXPECT_TRUE(notes.count(key)) << name << " notes lack " << key;
    }
    EXPECT_EQ(notes["kernel"], "cublasLt");
    if (name == "cublaslt-nosplit") EXPECT_EQ(notes["reduction_scheme"], "none");
  }
}

TEST(GpuGemm, InvariantNotesDescribeThePlan) {
  REQUIRE_GPU();
  const HostTensor a = seeded_rows(DType::kBF16, 3, 4100, 0);
  const HostTensor w = seeded_rows(DType::kBF16, 64, 4100, 1u << 20, 0.05f);
  RunNotes notes;
  make_backend("cuda-invariant")->run(GemmArgs{&a, &w, nullptr, DType::kFP32, false}, &notes);
  for (const char* key : {"kernel", "chunk_k", "chunks", "schedule", "tile"}) {
    EXPECT_TRUE(notes.count(key)) << "notes lack " << key;
  }
  const int64_t chunk = std::stoll(notes["chunk_k"]);
  ASSERT_GT(chunk, 0);
  EXPECT_EQ(std::stoll(notes["chunks"]), (4100 + chunk - 1) / chunk);
}

// ---- invariance --------------------------------------------------------------------------------

// Runs the probe row (its own stream) at positions first, middle and last of batches of each
// size, the other rows being seeded fillers; returns the distinct probe results with the first
// batch that produced each.
class ProbeSweep {
 public:
  ProbeSweep(Backend& backend, const GemmShape& shape, DType out, bool with_bias, int64_t max_m)
      : backend_(backend), shape_(shape), out_(out), with_bias_(with_bias) {
    fillers_ = seeded_rows(shape.dtype, max_m, shape.k, 1);
    probe_ = seeded_rows(shape.dtype, 1, shape.k, 1u << 30);
  }

  void run(int64_t m, int repeats = 1) {
    const std::set<int64_t> positions = {0, m / 2, m - 1};
    for (int64_t pos : positions) {
      HostTensor a = fillers_.slice_rows(0, m);
      copy_rows(probe_, a, pos);
      const GemmArgs args{&a, &shape_.w, with_bias_ ? &shape_.bias : nullptr, out_, false};
      for (int r = 0; r < repeats; ++r) {
        const HostTensor out = backend_.run(args, nullptr);
        const auto bits = row_bits(out, pos);
        if (!results_.count(bits)) {
          results_[bits] = "m=" + std::to_string(m) + " position=" + std::to_string(pos);
        }
        ++runs_;
      }
    }
  }

  size_t distinct() const { return results_.size(); }
  int runs() const { return runs_; }
  std::string contexts() const {
    std::string s;
    for (const auto& [bits, where] : results_) s += where + "; ";
    return s;
  }

 private:
  Backend& backend_;
  const GemmShape& shape_;
  DType out_;
  bool with_bias_;
  HostTensor fillers_, probe_;
  std::map<std::vector<uint8_t>, std::string> results_;
  int runs_ = 0;
};

TEST(GpuGemmInvariant, Bf16ProbeRowIsIdenticalForEveryBatchFrom1To512AndPowersOfTwo) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  const GemmShape shape(DType::kBF16, 4096, 4096);
  ProbeSweep sweep(*backend, shape, DType::kBF16, true, 8192);
  for (int64_t m = 1; m <= 512; ++m) sweep.run(m, (m == 1 || m == 64 || m == 512) ? 2 : 1);
  for (int64_t m = 1024; m <= 8192; m *= 2) sweep.run(m, m == 8192 ? 2 : 1);
  EXPECT_EQ(sweep.distinct(), 1u) << "distinct results first seen at: " << sweep.contexts();
  EXPECT_GT(sweep.runs(), 1500);
}

TEST(GpuGemmInvariant, Bf16LongReductionIsBatchInvariant) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  const GemmShape shape(DType::kBF16, 4096, 14336);
  ProbeSweep sweep(*backend, shape, DType::kFP32, false, 1024);
  for (int64_t m : {1, 2, 5, 16, 17, 32, 33, 64, 65, 100, 128, 255, 256, 512, 1024}) sweep.run(m);
  EXPECT_EQ(sweep.distinct(), 1u) << "distinct results first seen at: " << sweep.contexts();
}

TEST(GpuGemmInvariant, Fp16AndFp32AreBatchInvariant) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  {
    const GemmShape shape(DType::kFP16, 4096, 4096);
    ProbeSweep sweep(*backend, shape, DType::kFP16, true, 2048);
    for (int64_t m : {1, 2, 3, 7, 16, 17, 33, 64, 65, 128, 129, 256, 512, 1024, 2048}) sweep.run(m);
    EXPECT_EQ(sweep.distinct(), 1u) << "fp16: " << sweep.contexts();
  }
  {
    const GemmShape shape(DType::kFP32, 1024, 3000);
    ProbeSweep sweep(*backend, shape, DType::kFP32, true, 1024);
    for (int64_t m : {1, 5, 17, 64, 65, 200, 512, 1024}) sweep.run(m, 2);
    EXPECT_EQ(sweep.distinct(), 1u) << "fp32: " << sweep.contexts();
  }
}

TEST(GpuGemmInvariant, OddShapesAreBatchInvariant) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  struct Odd {
    int64_t n, k;
  };
  for (const Odd o : {Odd{4095, 4100}, Odd{4097, 1000}, Odd{300, 1001}, Odd{130, 72}}) {
    const GemmShape shape(DType::kBF16, o.n, o.k);
    ProbeSweep sweep(*backend, shape, DType::kBF16, true, 1024);
    for (int64_t m : {1, 3, 16, 17, 64, 100, 333, 512, 1024}) sweep.run(m);
    EXPECT_EQ(sweep.distinct(), 1u)
        << "n=" << o.n << " k=" << o.k << ": distinct results at: " << sweep.contexts();
  }
}

// Odd shapes stage W into 16-byte rows; the staged copy of a weight is kept (keyed by its uid)
// and reused by later calls. Reused, made afresh for an equal copy of W, or made for W after a
// change: the results are those of the weight's current values.
TEST(GpuGemmInvariant, AKeptStagedWeightGivesTheBitsOfAFreshOneAndFollowsAChange) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  GemmShape shape(DType::kBF16, 4097, 4100);
  const HostTensor a = seeded_rows(DType::kBF16, 17, shape.k, 7);
  const auto run = [&](const HostTensor& w, RunNotes* notes) {
    return backend->run(GemmArgs{&a, &w, nullptr, DType::kBF16, false}, notes);
  };
  RunNotes notes;
  const HostTensor first = run(shape.w, &notes);
  const HostTensor again = run(shape.w, nullptr);
  HostTensor copy(shape.w.dtype(), shape.w.shape());
  std::memcpy(copy.mutable_data(), shape.w.data(), shape.w.nbytes());
  const HostTensor fresh = run(copy, nullptr);
  if (notes.at("kernel") != "wgmma-m64nNk16-tma") GTEST_SKIP() << "no wgmma path on this device";
  EXPECT_NE(notes.at("operands").find("made once and reused"), std::string::npos)
      << notes.at("operands");
  for (int64_t r = 0; r < 17; ++r) {
    EXPECT_EQ(row_bits(again, r), row_bits(first, r)) << r;
    EXPECT_EQ(row_bits(fresh, r), row_bits(first, r)) << r;
  }
  // A change gives the tensor a new uid: its next call stages the new values.
  shape.w.set(0, shape.w.get(0) + 1.0f);
  const HostTensor changed = run(shape.w, nullptr);
  HostTensor changed_copy(shape.w.dtype(), shape.w.shape());
  std::memcpy(changed_copy.mutable_data(), shape.w.data(), shape.w.nbytes());
  const HostTensor changed_fresh = run(changed_copy, nullptr);
  bool column0_moved = false;
  for (int64_t r = 0; r < 17; ++r) {
    EXPECT_EQ(row_bits(changed, r), row_bits(changed_fresh, r)) << r;
    column0_moved = column0_moved || changed.get(r * 4097) != first.get(r * 4097);
  }
  EXPECT_TRUE(column0_moved);
}

// NVDET_GEMM_WGMMA_CONFIG and NVDET_GEMM_CTAS pin the backend's launch shape (for bisecting):
// every pinned shape gives the automatic choice's bits, aligned and odd shapes alike.
TEST(GpuGemmInvariant, EveryPinnedLaunchShapeGivesTheSameBits) {
  REQUIRE_GPU();
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{5, 4096, 4096}, Shape{300, 1000, 1001}}) {
    const GemmShape shape(DType::kBF16, s.n, s.k);
    const HostTensor a = seeded_rows(DType::kBF16, s.m, s.k, 11);
    const GemmArgs args{&a, &shape.w, &shape.bias, DType::kBF16, false};
    RunNotes notes;
    const HostTensor want = make_backend("cuda-invariant")->run(args, &notes);
    if (notes.at("kernel") != "wgmma-m64nNk16-tma") GTEST_SKIP() << "no wgmma path here";
    for (int config = 0; config < kWgmmaConfigs; ++config) {
      for (const char* ctas : {"1", "7", "auto"}) {
        setenv("NVDET_GEMM_WGMMA_CONFIG", std::to_string(config).c_str(), 1);
        setenv("NVDET_GEMM_CTAS", ctas, 1);
        const HostTensor got = make_backend("cuda-invariant")->run(args, nullptr);
        for (int64_t r = 0; r < s.m; ++r) {
          ASSERT_EQ(row_bits(got, r), row_bits(want, r))
              << "n " << s.n << " config " << config << " ctas " << ctas << " row " << r;
        }
      }
    }
  }
  unsetenv("NVDET_GEMM_WGMMA_CONFIG");
  unsetenv("NVDET_GEMM_CTAS");
}

TEST(GpuGemmInvariant, EveryOutputTypeWithAndWithoutBias) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  auto reference = make_backend("cpu-reference");
  for (DType in : {DType::kBF16, DType::kFP16, DType::kFP32}) {
    const GemmShape shape(in, 200, 1536);
    for (DType out : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      for (bool bias : {false, true}) {
        ProbeSweep sweep(*backend, shape, out, bias, 300);
        for (int64_t m : {1, 37, 300}) sweep.run(m);
        EXPECT_EQ(sweep.distinct(), 1u) << describe(in, out, 0, shape.n, shape.k, bias);
        const HostTensor a = seeded_rows(in, 5, shape.k, 7);
        const GemmArgs args{&a, &shape.w, bias ? &shape.bias : nullptr, out, false};
        expect_close_to_reference(backend->run(args, nullptr), reference->run(args, nullptr), a,
                                  shape.w, bias ? &shape.bias : nullptr,
                                  "cuda-invariant " + describe(in, out, 5, shape.n, shape.k, bias));
      }
    }
  }
}

#ifdef NVDET_WITH_CUDA

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

TEST(GpuGemmInvariant, ConcurrentCublasWorkOnAnotherStreamChangesNothing) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  const GemmShape shape(DType::kBF16, 4096, 4096);
  const HostTensor a = seeded_rows(DType::kBF16, 300, 4096, 1);
  const std::vector<int64_t> batches = {1, 17, 64, 300};
  auto run_one = [&](int64_t m) {
    const HostTensor am = a.slice_rows(0, m);
    return backend->run(GemmArgs{&am, &shape.w, &shape.bias, DType::kBF16}, nullptr);
  };
  std::vector<HostTensor> quiet;
  for (int64_t m : batches) quiet.push_back(run_one(m));

  // Heavy bf16 GEMMs on a stream of their own, enqueued before each probe so that the probe's
  // kernels share the GPU with them (a run ends with a device-wide cudaFree, which waits for
  // the background work; hence a fresh batch of it per probe).
  const int dim = 8192;
  void *x = nullptr, *y = nullptr, *z = nullptr;
  CUDA_OK(cudaMalloc(&x, size_t(dim) * dim * 2));
  CUDA_OK(cudaMalloc(&y, size_t(dim) * dim * 2));
  CUDA_OK(cudaMalloc(&z, size_t(dim) * dim * 4));
  CUDA_OK(cudaMemset(x, 0x3c, size_t(dim) * dim * 2));
  CUDA_OK(cudaMemset(y, 0x3c, size_t(dim) * dim * 2));
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(handle, stream), CUBLAS_STATUS_SUCCESS);
  CUDA_OK(cudaDeviceSynchronize());
  const float alpha = 1.0f, beta = 0.0f;
  std::vector<HostTensor> busy;
  for (int64_t m : batches) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_EQ(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, dim, dim, dim, &alpha, x,
                             CUDA_R_16BF, dim, y, CUDA_R_16BF, dim, &beta, z, CUDA_R_32F, dim,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                CUBLAS_STATUS_SUCCESS);
    }
    busy.push_back(run_one(m));
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  cudaFree(x);
  cudaFree(y);
  cudaFree(z);

  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(std::memcmp(quiet[i].data(), busy[i].data(), quiet[i].nbytes()), 0)
        << "m=" << batches[i] << " changed under concurrent cuBLAS work";
  }
}

// Kernel-level checks: every schedule and the portable path, forced, on this device.
class InvariantKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nvdet::testing::gpu_available()) GTEST_SKIP() << "no GPU";
    cudaDeviceProp props{};
    ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
    device_ = {props.major, props.minor, props.multiProcessorCount};
  }
  void TearDown() override {
    for (void* p : buffers_) cudaFree(p);
  }
  void* upload(const HostTensor& t) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(t.nbytes(), 16)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, t.data(), t.nbytes(), cudaMemcpyHostToDevice), cudaSuccess);
    buffers_.push_back(p);
    return p;
  }
  void* scratch(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    buffers_.push_back(p);
    return p;
  }
  // Output rows of a[first : first + m] · w^T under the given forcing, as bytes.
  std::vector<uint8_t> run(const void* a, const void* w, const void* bias, int first, int m, int n,
                           int k, nvdet::kernels::GemmSchedule schedule,
                           nvdet::kernels::GemmPath path, nvdet::kernels::GemmPlan* plan_out,
                           nvdet::kernels::GemmType in_type = nvdet::kernels::GemmType::kBF16,
                           int force_config = -1, int force_ctas = 0, bool stage_boxes = true) {
    nvdet::kernels::GemmProblem p;
    p.a = static_cast<const uint16_t*>(a) + size_t(first) * k;
    p.w = w;
    p.bias = bias;
    p.m = m, p.n = n, p.k = k, p.lda = k, p.ldw = k, p.ldo = n;
    p.in_type = in_type;
    p.out_type = nvdet::kernels::GemmType::kFP32;
    void* out = scratch(size_t(m) * n * 4);
    EXPECT_EQ(cudaMemset(out, 0xff, size_t(m) * n * 4), cudaSuccess);  // NaN: unwritten shows
    p.out = out;
    nvdet::kernels::GemmPlan plan =
        nvdet::kernels::gemm_invariant_plan(p, device_, schedule, path, force_config, force_ctas);
    plan.stage_boxes = stage_boxes;
    if (plan_out) *plan_out = plan;
    void* ws = plan.workspace_bytes ? scratch(plan.workspace_bytes) : nullptr;
    EXPECT_EQ(nvdet::kernels::gemm_invariant_launch(p, plan, ws, plan.workspace_bytes, nullptr),
              cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> bytes(size_t(m) * n * 4);
    EXPECT_EQ(cudaMemcpy(bytes.data(), out, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return bytes;
  }
  // A shape of the kernel-level tests: the input type in the kernels' and the host's spelling.
  struct KernelShape {
    nvdet::kernels::GemmType type;
    DType dtype;
    int n, k;
  };
  nvdet::kernels::GemmDevice device_;
  std::vector<void*> buffers_;
};

TEST_F(InvariantKernels, ForcedSchedulesGiveIdenticalBitsOnThePortablePath) {
  const int n = 1000, k = 3136, rows = 1100;
  const HostTensor a = seeded_rows(DType::kBF16, rows, k, 1);
  const HostTensor w = seeded_rows(DType::kBF16, n, k, 1u << 20, 0.05f);
  const HostTensor bias = seeded_vector(DType::kBF16, n, 1u << 21);
  void* da = upload(a);
  void* dw = upload(w);
  void* db = upload(bias);
  using nvdet::kernels::GemmPath;
  using nvdet::kernels::GemmSchedule;
  for (GemmPath path : {GemmPath::kMmaSync}) {
    std::set<std::string> schedules_seen;
    for (int m : {1, 16, 17, 64, 200, 1000}) {
      std::vector<uint8_t> first;
      for (GemmSchedule s :
           {GemmSchedule::kAuto, GemmSchedule::kSplitChunks, GemmSchedule::kInCta}) {
        nvdet::kernels::GemmPlan plan;
        const auto bits = run(da, dw, db, 0, m, n, k, s, path, &plan);
        schedules_seen.insert(std::string(nvdet::kernels::gemm_schedule_name(plan.schedule)) + "/" +
                              std::to_string(plan.tile_m));
        if (first.empty()) {
          first = bits;
        } else {
          EXPECT_TRUE(bits == first)
              << nvdet::kernels::gemm_path_name(plan.path) << " m=" << m << ": schedule "
              << nvdet::kernels::gemm_schedule_name(plan.schedule)
              << " differs from the automatic one";
        }
      }
    }
    EXPECT_GE(schedules_seen.size(), 2u);
  }
}

TEST_F(InvariantKernels, PortablePathIsBatchInvariantOnThisDevice) {
  // On sm_90 the automatic path is wgmma; the mma.sync path must be invariant here too.
  const int n = 2048, k = 4096, rows = 1024;
  const HostTensor a = seeded_rows(DType::kBF16, rows + 1, k, 1);
  const HostTensor w = seeded_rows(DType::kBF16, n, k, 1u << 20, 0.05f);
  void* da = upload(a);
  void* dw = upload(w);
  const int probe = rows;  // the last row of `a`; each batch is a window that ends or starts at it
  std::vector<uint8_t> ref;
  for (int m : {1, 2, 15, 16, 17, 63, 64, 65, 128, 300, 512, 1024}) {
    for (int pos : {0, m - 1}) {
      if (probe - pos + m > rows + 1) continue;
      const auto bits =
          run(da, dw, nullptr, probe - pos, m, n, k, nvdet::kernels::GemmSchedule::kAuto,
              nvdet::kernels::GemmPath::kMmaSync, nullptr);
      const std::vector<uint8_t> row(bits.begin() + size_t(pos) * n * 4,
                                     bits.begin() + size_t(pos + 1) * n * 4);
      if (ref.empty()) ref = row;
      EXPECT_TRUE(row == ref) << "mma.sync path: m=" << m << " position " << pos;
    }
  }
}

// The wgmma path (sm_90a): every tile configuration (tile widths N = 32..256, one or two consumer
// warpgroups, clusters of two CTAs sharing W by multicast, whose second tile lies past M at odd
// row-tile counts) and several persistent CTA counts, for rows at every position of batches of
// several sizes, must give the bits of the automatic plan at the largest batch. Three shapes: bf16
// with an even N (two-column stores) and a K tail inside a k tile; fp16 with an odd N (single
// stores, partial tiles in N); bf16 with an odd K (operands staged into 16-byte rows first).
TEST_F(InvariantKernels, EveryWgmmaConfigurationAndCtaCountGivesIdenticalBits) {
  using nvdet::kernels::GemmPath;
  using nvdet::kernels::GemmSchedule;
  using nvdet::kernels::GemmType;
  const int rows = 300;
  for (const KernelShape sh : {KernelShape{GemmType::kBF16, DType::kBF16, 1000, 3144},
                               KernelShape{GemmType::kFP16, DType::kFP16, 4097, 1000},
                               KernelShape{GemmType::kBF16, DType::kBF16, 520, 1001}}) {
    const HostTensor a = seeded_rows(sh.dtype, rows, sh.k, 1);
    const HostTensor w = seeded_rows(sh.dtype, sh.n, sh.k, 1u << 20, 0.05f);
    const HostTensor bias = seeded_vector(sh.dtype, sh.n, 1u << 21);
    void* da = upload(a);
    void* dw = upload(w);
    void* db = upload(bias);
    nvdet::kernels::GemmPlan plan;
    const auto ref =
        run(da, dw, db, 0, rows, sh.n, sh.k, GemmSchedule::kAuto, GemmPath::kAuto, &plan, sh.type);
    if (plan.path != GemmPath::kWgmma) GTEST_SKIP() << "no sm_90a wgmma path on this device";
    for (int config = 0; config < kWgmmaConfigs; ++config) {
      for (int ctas : {0, 1, 5}) {
        for (int m : {1, 17, 64, 130, rows}) {
          const auto bits = run(da, dw, db, 0, m, sh.n, sh.k, GemmSchedule::kAuto, GemmPath::kAuto,
                                &plan, sh.type, config, ctas);
          ASSERT_EQ(plan.config, config);
          ASSERT_EQ(plan.staged_k > 0, sh.k % 8 != 0);
          // Whole clusters: at least one, so a single CTA asked of a cluster entry is one cluster.
          const int cluster = nvdet::kernels::kGemmWgmmaConfigs[config].cluster_m;
          ASSERT_EQ(plan.ctas % cluster, 0);
          if (ctas > 0) ASSERT_LE(plan.ctas, std::max(ctas, cluster));
          const bool same = std::equal(bits.begin(), bits.end(), ref.begin());
          EXPECT_TRUE(same) << "n=" << sh.n << " k=" << sh.k << " config " << config << " ("
                            << plan.tile_m << "x" << plan.tile_n << ", " << plan.ctas
                            << " CTAs) m=" << m << " differs from the automatic plan";
        }
      }
    }
  }
}

// Entries with several k tiles a ring stage fill a stage with one 3-d TMA copy per operand
// where K is whole k tiles (GemmPlan::stage_boxes), else one copy a k tile: the same bytes in the
// same places, so the same bits, for every such entry (plain and swapped), A's box whole or
// not (m below the tile's rows), a row of A read in place past K's end (the staged odd shape at
// m = 1) and a partial last tile of W's rows.
TEST_F(InvariantKernels, OneCopyAStageGivesTheBitsOfOneCopyAKTile) {
  using nvdet::kernels::GemmPath;
  using nvdet::kernels::GemmSchedule;
  using nvdet::kernels::GemmType;
  const int rows = 130;
  bool wgmma_seen = false;
  for (const KernelShape sh : {KernelShape{GemmType::kBF16, DType::kBF16, 1000, 2048},
                               KernelShape{GemmType::kFP16, DType::kFP16, 4096, 1024},
                               KernelShape{GemmType::kBF16, DType::kBF16, 520, 1001}}) {
    const HostTensor a = seeded_rows(sh.dtype, rows, sh.k, 3);
    const HostTensor w = seeded_rows(sh.dtype, sh.n, sh.k, 1u << 22, 0.05f);
    void* da = upload(a);
    void* dw = upload(w);
    nvdet::kernels::GemmPlan plan;
    run(da, dw, nullptr, 0, 1, sh.n, sh.k, GemmSchedule::kAuto, GemmPath::kAuto, &plan, sh.type);
    if (plan.path != GemmPath::kWgmma) GTEST_SKIP() << "no sm_90a wgmma path on this device";
    wgmma_seen = true;
    for (int config = 0; config < kWgmmaConfigs; ++config) {
      if (nvdet::kernels::kGemmWgmmaConfigs[config].k_subtiles == 1) continue;
      for (int m : {1, 5, 8, 20, 64, rows}) {
        const auto per_k_tile = run(da, dw, nullptr, 0, m, sh.n, sh.k, GemmSchedule::kAuto,
                                    GemmPath::kAuto, &plan, sh.type, config, 0, false);
        const auto per_stage = run(da, dw, nullptr, 0, m, sh.n, sh.k, GemmSchedule::kAuto,
                                   GemmPath::kAuto, &plan, sh.type, config, 0, true);
        ASSERT_EQ(plan.config, config);
        EXPECT_TRUE(per_stage == per_k_tile)
            << "n=" << sh.n << " k=" << sh.k << " config " << config << " (" << plan.tile_m << "x"
            << plan.tile_n << ") m=" << m << ": one copy a stage differs";
      }
    }
  }
  // Without the 3-d maps the comparison above would be of one path with itself.
  if (wgmma_seen) EXPECT_TRUE(nvdet::kernels::gemm_invariant_stage_copies_available());
}

// The stage maps the launches encode: A's rows at decode sizes are fewer than the box's (m = 1 in
// a box of 8, the rows past m zero-filled), W's a partial last tile; a refused map would leave
// that side on one copy a k tile, silently (the bits tests would still pass), so each is encoded
// here as the launches encode it: 16-bit elements (the GEMM's k tiles) and FP8 codes (its K
// groups of 128).
TEST_F(InvariantKernels, StageMapsEncodeForEveryRowCountTheLaunchAsksFor) {
  if (nvdet::kernels::tensor_map_encoder() == nullptr) GTEST_SKIP() << "no TMA map encoder";
  const void* base = reinterpret_cast<const void*>(uintptr_t{1} << 20);  // never dereferenced
  for (const CUtensorMapDataType type :
       {CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_UINT8}) {
    const uint64_t row_bytes = type == CU_TENSOR_MAP_DATA_TYPE_UINT8 ? 4096 : 4096 * 2;
    for (uint64_t rows : {1, 5, 8, 9, 63, 64, 4095, 4096}) {
      for (uint32_t box_rows : {8u, 16u, 32u, 64u}) {
        for (uint32_t box_k_tiles : {2u, 4u}) {
          CUtensorMap map;
          EXPECT_TRUE(nvdet::kernels::encode_swizzled_stage_map(
              &map, type, base, rows, row_bytes / 128, row_bytes, box_rows, box_k_tiles))
              << (type == CU_TENSOR_MAP_DATA_TYPE_UINT8 ? "FP8 codes, " : "bf16, ") << rows
              << " rows, a box of " << box_rows << " rows by " << box_k_tiles << " k tiles";
        }
      }
    }
  }
}

// A decode kernel could put W on wgmma's 64-row side and the few rows of A on its N side (every
// byte of its shared-memory ring then W rather than two thirds a 64-row A tile, mostly unused at
// m = 1; reports/h100/gemm-decode-rule-2026-12-06). Its bits are the plan's only if the tensor
// cores give an element the same bits whichever operand is which: out = A W^T against
// (W A^T)^T through the same invariant GEMM, fp32 out, no bias, K a multiple of 64 and not.
TEST_F(InvariantKernels, SwappedOperandsGiveTheTransposedBits) {
  using nvdet::kernels::GemmPath;
  using nvdet::kernels::GemmSchedule;
  const int rows = 64, n = 256;
  for (const int k : {4096, 1000}) {
    const HostTensor a = seeded_rows(DType::kBF16, rows, k, 7);
    const HostTensor w = seeded_rows(DType::kBF16, n, k, 1u << 20, 0.05f);
    void* da = upload(a);
    void* dw = upload(w);
    nvdet::kernels::GemmPlan plan;
    const auto straight =
        run(da, dw, nullptr, 0, rows, n, k, GemmSchedule::kAuto, GemmPath::kAuto, &plan);
    if (plan.path != GemmPath::kWgmma) GTEST_SKIP() << "no sm_90a wgmma path on this device";
    const auto swapped =
        run(dw, da, nullptr, 0, n, rows, k, GemmSchedule::kAuto, GemmPath::kAuto, &plan);
    ASSERT_EQ(plan.path, GemmPath::kWgmma);
    int differing = 0;
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < n; ++j) {
        uint32_t x = 0, y = 0;
        std::memcpy(&x, straight.data() + (size_t(i) * n + j) * 4, 4);
        std::memcpy(&y, swapped.data() + (size_t(j) * rows + i) * 4, 4);
        differing += x != y;
      }
    }
    EXPECT_EQ(differing, 0) << "k=" << k << ": of " << rows * n << " elements";
  }
}

// The arithmetic (path, K plan, k tile) is the same for every M; on the wgmma path the tile width
// is part of the schedule (the test above shows it does not change bits), elsewhere it is fixed.
// The automatic plan must also use more than one wgmma configuration over M, so that the forcing
// above covers choices the planner really makes.
TEST_F(InvariantKernels, OnlyTheScheduleDependsOnM) {
  nvdet::kernels::GemmProblem p;
  p.a = p.w = reinterpret_cast<const void*>(uintptr_t{1} << 20);  // aligned; never dereferenced
  p.n = 4096, p.k = 14336, p.lda = p.ldw = p.k, p.ldo = p.n;
  p.in_type = nvdet::kernels::GemmType::kBF16;
  for (nvdet::kernels::GemmPath path :
       {nvdet::kernels::GemmPath::kAuto, nvdet::kernels::GemmPath::kMmaSync}) {
    std::set<std::string> arithmetic;
    std::set<int> configs;
    for (int m = 1; m <= 8192; m = m < 64 ? m + 1 : m * 2) {
      p.m = m;
      const auto plan = nvdet::kernels::gemm_invariant_plan(
          p, device_, nvdet::kernels::GemmSchedule::kAuto, path);
      const bool wgmma = plan.path == nvdet::kernels::GemmPath::kWgmma;
      arithmetic.insert(std::string(nvdet::kernels::gemm_path_name(plan.path)) + " kc=" +
                        std::to_string(plan.chunk_k) + " chunks=" + std::to_string(plan.chunks) +
                        " tk=" + std::to_string(plan.tile_k) +
                        (wgmma ? std::string() : " tn=" + std::to_string(plan.tile_n)));
      if (wgmma) configs.insert(plan.config);
    }
    EXPECT_EQ(arithmetic.size(), 1u);
    if (!configs.empty()) EXPECT_GE(configs.size(), 3u);
  }
}

#endif  // NVDET_WITH_CUDA

}  // namespace
}  // namespace nvdet
