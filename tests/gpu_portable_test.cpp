// cuda-portable on the GPU: bitwise identical to cpu-portable for every op on seeded inputs
// (several dtype pairs, ragged shapes, subnormal and large-magnitude inputs, GQA groups, split
// sizes, chunked prefill), batch-invariant, and a cpu-portable manifest of the CPU scenarios
// verified by cuda-portable through the CLI. Also: the kernel-image probe agrees with the build's
// architecture list, and cuda-invariant takes wgmma only from sm_90a machine code (a PTX-only
// build runs mma.sync). reports/portable-golden.sh runs the full golden workflow.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "lib/backend/backend.h"
#if NVDET_WITH_CUDA
#include "kernels/kernel_image.cuh"
#include "lib/cuda/kernel_paths.h"
#endif
#include "tests/cpu_kernel_fixtures.h"
#include "tests/cpu_sweeps.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

std::vector<uint64_t> streams(int64_t n, uint64_t base) {
  std::vector<uint64_t> s(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) s[i] = base + i;
  return s;
}

// The two portable backends, created per test (no device state outlives a test).
struct Pair {
  std::unique_ptr<Backend> cpu = make_backend("cpu-portable");
  std::unique_ptr<Backend> gpu = make_backend("cuda-portable");
};

// Byte-for-byte equality of the two backends' outputs, naming the first differing element.
void expect_identical(Pair& pair, const OpArgs& args, const std::string& what) {
  Backend* cpu = pair.cpu.get();
  Backend* gpu = pair.gpu.get();
  const HostTensor want = cpu->run(args, nullptr);
  const HostTensor got = gpu->run(args, nullptr);
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (std::memcmp(got.data(), want.data(), got.nbytes()) == 0) return;
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (got.bits(i) != want.bits(i) && bad++ == 0) first = i;
  }
  ADD_FAILURE() << what << ": " << bad << " of " << got.numel()
                << " elements differ between cuda-portable and cpu-portable; first at " << first
                << ": GPU " << got.get(first) << " (bits " << std::hex << got.bits(first)
                << ") CPU " << want.get(first) << " (bits " << want.bits(first) << ")" << std::dec;
}

const std::pair<DType, DType> kTypePairs[] = {{DType::kBF16, DType::kFP32},
                                              {DType::kBF16, DType::kBF16},
                                              {DType::kFP16, DType::kFP16},
                                              {DType::kFP32, DType::kFP32},
                                              {DType::kFP32, DType::kBF16}};

std::string name(const char* op, const std::pair<DType, DType>& p, const std::string& extra) {
  return std::string(op) + " " + std::string(dtype_name(p.first)) + "->" +
         std::string(dtype_name(p.second)) + " " + extra;
}

TEST(GpuPortable, GemmIsBitwiseEqualToCpuPortable) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  Pair pair;
  struct Shape {
    int64_t m, n, k;
  };
  for (const auto& types : kTypePairs) {
    for (const Shape s :
         {Shape{1, 4096, 4096}, Shape{67, 129, 1000}, Shape{130, 72, 1}, Shape{5, 33, 4100}}) {
      const HostTensor a = seeded_rows(types.first, s.k, streams(s.m, 1));
      const HostTensor w = seeded_rows(types.first, s.k, streams(s.n, 10000), 0.05f);
      const HostTensor bias = seeded_vector(types.first, s.n, 999);
      const std::string shape =
          std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
      expect_identical(pair, GemmArgs{&a, &w, &bias, types.second},
                       name("gemm", types, shape + " bias"));
      expect_identical(pair, GemmArgs{&a, &w, nullptr, types.second}, name("gemm", types, shape));
    }
  }
}

TEST(GpuPortable, GemmOfSubnormalProductsIsBitwiseEqual) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  Pair pair;
  // Products near 2^-140: subnormal partial sums, which a flush-to-zero side would lose.
  const HostTensor a = seeded_rows(DType::kFP32, 300, streams(9, 20), 1e-20f);
  const HostTensor w = seeded_rows(DType::kFP32, 300, streams(17, 40), 1e-22f);
  expect_identical(pair, GemmArgs{&a, &w, nullptr, DType::kFP32}, "gemm fp32 subnormal products");
}

TEST(GpuPortable, RowOpsAreBitwiseEqualToCpuPortable) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  Pair pair;
  for (const auto& types : kTypePairs) {
    for (int64_t d : {1, 31, 33, 4096, 5000}) {
      const HostTensor x = seeded_rows(types.first, d, streams(19, 300));
      const HostTensor w = seeded_vector(types.first, d, 301);
      expect_identical(pair, RmsNormArgs{&x, &w, 1e-6f, types.second},
                       name("rmsnorm", types, "d=" + std::to_string(d)));
    }
    for (int64_t v : {1, 7, 32000, 151936}) {
      for (float stddev : {1.0f, 30.0f}) {
        const HostTensor x = seeded_rows(types.first, v, streams(5, 400), stddev);
        expect_identical(pair, LogSoftmaxArgs{&x, types.second},
                         name("log_softmax", types,
                              "v=" + std::to_string(v) + " stddev " + std::to_string(stddev)));
      }
    }
  }
}

TEST(GpuPortable, AttentionIsBitwiseEqualToCpuPortable) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  Pair pair;
  struct Heads {
    int32_t h, kvh, d, page;
  };
  const std::vector<SeqSpec> decode = {{1, 1000}, {2, 1}, {3, 257}, {4, 4096}, {5, 77}};
  const std::vector<SeqSpec> prefill = {
      {1, 300, 300, 0}, {2, 200, 7, 64}, {3, 1, 1, 0}, {4, 130, 64, 66}};
  for (const auto& types : kTypePairs) {
    if (types.first == DType::kFP32 && types.second == DType::kBF16) continue;
    for (const Heads hd : {Heads{32, 8, 128, 16}, Heads{8, 8, 64, 32}, Heads{12, 4, 96, 16}}) {
      const std::string shape = "H" + std::to_string(hd.h) + "/KVH" + std::to_string(hd.kvh) +
                                " D" + std::to_string(hd.d);
      const auto b =
          make_attention_batch(types.first, decode, hd.h, hd.kvh, hd.d, false, 3, hd.page);
      for (int32_t split : {0, 100}) {
        AttentionDecodeArgs args = b->decode(types.second);
        args.splits.split_size = split;
        expect_identical(pair, args,
                         name("decode", types, shape + " split " + std::to_string(split)));
      }
      const auto p =
          make_attention_batch(types.first, prefill, hd.h, hd.kvh, hd.d, true, 5, hd.page);
      expect_identical(pair, p->prefill(types.second), name("prefill", types, shape));
    }
  }
}

TEST(GpuPortable, IsBatchInvariant) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  auto gpu = make_backend("cuda-portable");
  EXPECT_EQ(sweep_gemm(*gpu, batch_sweep({128, 257}, false)).count(), 1u);
  EXPECT_EQ(sweep_rmsnorm(*gpu, batch_sweep({128, 257}, false)).count(), 1u);
  EXPECT_EQ(sweep_log_softmax(*gpu, batch_sweep({128}, false)).count(), 1u);
  EXPECT_EQ(sweep_decode(*gpu, batch_sweep({}, false), {}).count(), 1u);
  EXPECT_EQ(sweep_prefill_chunking(*gpu, {1, 16, 64, 0}, {0, 63, 200}).count(), 1u);
}

// The golden workflow for two scenarios (reports/portable-golden.sh does all CPU scenarios):
// record with cpu-portable, verify with cuda-portable.
TEST(GpuPortable, CpuManifestVerifiesOnTheGpu) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const auto dir = make_temp_dir("portable-golden");
  for (const char* scenario : {"quickstart.yaml", "model-cpu.yaml"}) {
    const std::string s = (source_dir() / "scenarios" / scenario).string();
    const std::string m = (dir / (std::string(scenario) + ".json")).string();
    const auto rec = run_nvdet("audit " + s + " --backends cpu-portable --quiet --record " + m);
    ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
    const auto ver = run_nvdet("audit " + s + " --backends cuda-portable --verify " + m +
                               " --verify-as cuda-portable=cpu-portable");
    EXPECT_EQ(ver.exit_code, 0) << ver.out << ver.err;
    EXPECT_NE(ver.out.find("reproduced bit for bit"), std::string::npos) << ver.out;
  }
}

#if NVDET_WITH_CUDA
// True when every entry of the comma-separated architecture list is PTX only ("90-virtual").
bool ptx_only_build(const std::string& archs) {
  std::stringstream list(archs);
  std::string entry;
  bool any = false;
  while (std::getline(list, entry, ',')) {
    if (!entry.ends_with("-virtual")) return false;
    any = true;
  }
  return any;
}

// The probe names what the runtime runs, consistently with the build's architecture list: a
// PTX-only build (e.g. -DCMAKE_CUDA_ARCHITECTURES=90-virtual) reports JIT-compiled PTX, and
// cuda-invariant then never takes the wgmma path (its sm_90a code is absent).
TEST(GpuPortable, KernelImageAndPathsFollowTheBuild) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  const kernels::KernelImage& img = kernels::kernel_image();
  ASSERT_TRUE(img.ok) << cudaGetErrorString(img.error);
  EXPECT_LE(img.code_arch, img.device_arch);
  const std::string archs = NVDET_CUDA_ARCHITECTURES;
  const std::string text = cuda::kernel_image_description(archs);
  if (ptx_only_build(archs))
    EXPECT_NE(text.find("JIT-compiled"), std::string::npos) << archs << ": " << text;
  std::printf("build %s: kernel image %s\n", archs.c_str(), text.c_str());

  auto inv = make_backend("cuda-invariant");
  const HostTensor a = seeded_rows(DType::kBF16, 4096, streams(8, 1));
  const HostTensor w = seeded_rows(DType::kBF16, 4096, streams(256, 5000), 0.05f);
  RunNotes notes;
  inv->run(GemmArgs{&a, &w, nullptr, DType::kFP32}, &notes);
  EXPECT_EQ(notes["kernel_image"], text);
  EXPECT_EQ(notes["path"], notes["kernel"]);
  if (!img.arch_specific)
    EXPECT_EQ(notes["kernel"].find("wgmma"), std::string::npos) << notes["kernel"];
  if (img.arch_specific && img.device_arch == 90)
    EXPECT_NE(notes["kernel"].find("wgmma"), std::string::npos);
  RunNotes pnotes;
  make_backend("cuda-portable")->run(GemmArgs{&a, &w, nullptr, DType::kFP32}, &pnotes);
  EXPECT_NE(pnotes["path"].find("portable-fp32"), std::string::npos);
  EXPECT_EQ(pnotes["kernel_image"], text);

  // `nvdet info --format json` states the same kernel image and one path per GPU backend.
  const CommandResult info = run_nvdet("info --format json");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  EXPECT_EQ(j.at("kernel_image_gpu0").get<std::string>(), text);
  EXPECT_NE(j.at("backend_paths_gpu0").at("cuda-portable").get<std::string>().find("portable-fp32"),
            std::string::npos);
  EXPECT_TRUE(j.at("backend_paths_gpu0").contains("cuda-invariant"));
}
#endif

}  // namespace
}  // namespace nvdet::testing
