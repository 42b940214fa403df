// The backend registry is the single source of what backends exist and what each computes: a
// backend registered only here (one record) is found, audited and listed like a built-in one, and
// an op or dtype a backend does not compute is refused (exit 2, with the reason and the
// scenario's line) before anything runs.
#include <gtest/gtest.h>

#include <atomic>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/runner/audit.h"
#include "lib/scenario/scenario.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

constexpr const char* kTestBackend = "test-gemm-bf16";
std::atomic<int> g_test_backend_runs{0};

// Computes gemm in bf16 only, through cpu-invariant's kernels, and counts its calls.
class GemmOnlyBackend final : public Backend {
 public:
  explicit GemmOnlyBackend(BackendInfo info)
      : info_(std::move(info)), inner_(make_backend("cpu-invariant")) {}
  const BackendInfo& info() const override { return info_; }
  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    ++g_test_backend_runs;
    return inner_->run(args, notes);
  }

 private:
  BackendInfo info_;
  std::unique_ptr<Backend> inner_;
};

// The whole of adding a backend: one record.
void register_test_backend_once() {
  static const bool registered = [] {
    const BackendInfo info{kTestBackend, "test-only: cpu-invariant's gemm, bf16 only", false,
                           true, {}};
    register_backend({info,
                      [info]() -> std::unique_ptr<Backend> {
                        return std::make_unique<GemmOnlyBackend>(info);
                      },
                      supports_from({{{OpKind::kGemm, {DType::kBF16}}}, false, nullptr}),
                      [] { return std::string("gemm: cpu-invariant's host fp32 kernel"); }});
    return true;
  }();
  (void)registered;
}

Scenario gemm_scenario(const std::string& op, const std::string& dtype, const std::string& shape) {
  return parse_scenario("name: registry-test\n"
                        "op: " + op + "\n"
                        "dtype: " + dtype + "\n"
                        "shape: " + shape + "\n"
                        "seed: 7\n"
                        "requests: [0]\n"
                        "sweep:\n"
                        "  batch: [1, 3, 20]\n"
                        "backends:\n"
                        "  cpu-invariant: invariant\n"
                        "  test-gemm-bf16: invariant\n",
                        "registry-test.yaml");
}

TEST(BackendRegistry, ATestBackendIsOneRecord) {
  register_test_backend_once();
  const BackendRegistration* r = find_backend(kTestBackend);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(backend_registry().back().info.name, kTestBackend);  // after the built-in ones
  // The audit finds, checks and runs it from the record alone; its outputs are cpu-invariant's.
  const Scenario s = gemm_scenario("gemm", "bf16", "{n: 64, k: 96}");
  const int runs_before = g_test_backend_runs.load();
  const AuditResult result = run_audit(s, AuditOptions{});
  EXPECT_GT(g_test_backend_runs.load(), runs_before);
  ASSERT_EQ(result.backends.size(), 2u);
  EXPECT_EQ(result.backends[1].name, kTestBackend);
  EXPECT_TRUE(result.backends[1].passed) << result.backends[1].verdict;
  std::map<std::pair<std::string, int>, Hash128> by_backend_context;
  for (const CaseRecord& c : result.cases) {
    ASSERT_EQ(c.requests.size(), 1u);
    by_backend_context[{c.backend, c.context_index}] = c.requests[0].hash;
  }
  int compared = 0;
  for (const auto& [key, hash] : by_backend_context) {
    if (key.first != kTestBackend) continue;
    EXPECT_EQ(hash, by_backend_context.at({"cpu-invariant", key.second}));
    ++compared;
  }
  EXPECT_EQ(compared, 3);
  // And the CLI's registry listing is the same table.
  bool listed = false;
  for (const BackendRegistration& b : backend_registry()) listed = listed || b.info.name == kTestBackend;
  EXPECT_TRUE(listed);
}

TEST(BackendRegistry, RefusesTakenNamesAndIncompleteRecords) {
  register_test_backend_once();
  const BackendRegistration copy = *find_backend(kTestBackend);
  try {
    register_backend(copy);
    FAIL() << "a second backend named " << kTestBackend << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("already registered"), std::string::npos) << e.what();
  }
  BackendRegistration no_table = copy;
  no_table.info.name = "test-without-support-table";
  no_table.supports = nullptr;
  EXPECT_THROW(register_backend(no_table), Error);
  EXPECT_EQ(find_backend("test-without-support-table"), nullptr);
  // `nvdet info` shows every backend's kernel path: a record without one is incomplete too.
  BackendRegistration no_path = copy;
  no_path.info.name = "test-without-kernel-path";
  no_path.kernel_path = nullptr;
  try {
    register_backend(no_path);
    FAIL() << "a backend without a kernel-path description was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel-path description"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(find_backend("test-without-kernel-path"), nullptr);
}

// Runs check_audit and run_audit on `s`; both must refuse with exit 2 and `reason`, at the test
// backend's line, without a single run of the backend.
void expect_refused_before_running(const Scenario& s, const std::string& reason) {
  const int runs_before = g_test_backend_runs.load();
  for (int pass = 0; pass < 2; ++pass) {
    try {
      if (pass == 0) (void)check_audit(s, AuditOptions{});
      else (void)run_audit(s, AuditOptions{});
      FAIL() << "not refused: " << reason;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
      const std::string what = e.what();
      EXPECT_NE(what.find("backend 'test-gemm-bf16' " + reason), std::string::npos) << what;
      EXPECT_NE(what.find("registry-test.yaml:11"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(g_test_backend_runs.load(), runs_before);
}

TEST(BackendRegistry, UnsupportedDtypeIsRefusedBeforeAnythingRuns) {
  register_test_backend_once();
  expect_refused_before_running(gemm_scenario("gemm", "fp16", "{n: 64, k: 96}"),
                                "does not compute gemm in fp16 (only in bf16)");
}

TEST(BackendRegistry, UnsupportedOpIsRefusedBeforeAnythingRuns) {
  register_test_backend_once();
  expect_refused_before_running(gemm_scenario("rmsnorm", "bf16", "{d: 64}"),
                                "does not compute rmsnorm (it computes gemm only)");
}

// The GPU backends' tables are the same in every build, so they are checked here without a GPU.
TEST(BackendRegistry, GpuSupportTablesAreTruthful) {
  DeviceFacts with_gpu;
  with_gpu.cuda_built = true;
  with_gpu.gpu = true;
  with_gpu.cc_major = 9;
  for (const char* name : {"cublas", "cublaslt-nosplit", "cublaslt-ws1k", "cuda-vendor-policy",
                           "cuda-invariant"}) {
    for (DType t : {DType::kBF16, DType::kFP16, DType::kFP32}) {
      EXPECT_TRUE(backend_supports(name, OpKind::kGemm, t, with_gpu).ok()) << name;
      EXPECT_TRUE(backend_supports(name, OpKind::kRmsNorm, t, with_gpu).ok()) << name;
    }
    const Support fp32_attention =
        backend_supports(name, OpKind::kAttentionDecode, DType::kFP32, with_gpu);
    EXPECT_EQ(fp32_attention.status, Support::Status::kUnsupportedOp) << name;
    EXPECT_EQ(fp32_attention.reason, "does not compute attention_decode in fp32 (only in bf16, fp16)");
  }
  for (const auto& [op, dtypes] : all_ops_all_dtypes()) {
    for (DType t : dtypes) EXPECT_TRUE(backend_supports("cuda-portable", op, t, with_gpu).ok());
  }
  const Support cudnn_gemm = backend_supports("cudnn", OpKind::kGemm, DType::kBF16, with_gpu);
  EXPECT_EQ(cudnn_gemm.status, Support::Status::kUnsupportedOp);
  EXPECT_EQ(cudnn_gemm.reason,
            "does not compute gemm (it computes attention_decode, attention_prefill only)");
  // Without CUDA or without a device, every GPU backend names what is missing; an op it lacks
  // is still the first answer (the scenario's mistake comes before the machine's).
  DeviceFacts cpu_only;
  cpu_only.device_error = "this nvdet was built without CUDA";
  const Support no_cuda = backend_supports("cuda-invariant", OpKind::kGemm, DType::kBF16, cpu_only);
  EXPECT_EQ(no_cuda.status, Support::Status::kUnsupportedDevice);
  EXPECT_EQ(no_cuda.reason, "needs a GPU; this nvdet was built without CUDA");
  DeviceFacts no_device;
  no_device.cuda_built = true;
  no_device.device_error = "no CUDA-capable device is detected";
  EXPECT_EQ(backend_supports("cublas", OpKind::kGemm, DType::kBF16, no_device).reason,
            "needs a GPU; none is available (no CUDA-capable device is detected)");
  EXPECT_EQ(backend_supports("cudnn", OpKind::kGemm, DType::kBF16, cpu_only).status,
            Support::Status::kUnsupportedOp);
  // A device older than the kernels' compute capability 8.0 is refused, naming it.
  DeviceFacts volta = with_gpu;
  volta.cc_major = 7;
  for (const char* name : {"cublas", "cuda-invariant", "cuda-portable", "cudnn"}) {
    const Support old = backend_supports(name, OpKind::kAttentionDecode, DType::kBF16, volta);
    EXPECT_EQ(old.status, Support::Status::kUnsupportedDevice) << name;
    // (A CUDA build without the cudnn backend says that first, for cudnn.)
    if (std::string(name) != "cudnn" || find_backend("cudnn")->info.description.find("unavailable") ==
                                            std::string::npos) {
      EXPECT_EQ(old.reason, "needs a GPU of compute capability 8.0 or newer (device 0 is 7.0)")
          << name;
    }
  }
  // The CPU backends need nothing of the machine.
  EXPECT_TRUE(backend_supports("cpu-reference", OpKind::kAttentionPrefill, DType::kFP32, cpu_only).ok());
}

// End to end: the CLI refuses a backend that does not compute the scenario's op with exit 2 and
// the reason at the scenario's line, even with --skip-unavailable (it is the scenario's mistake,
// not the machine's), before any context runs.
TEST(BackendRegistry, CliRefusesAnUnsupportedOpWithExitTwo) {
  const auto dir = make_temp_dir("registry-cli");
  write_file(dir / "cudnn-gemm.yaml",
             "name: cudnn-gemm\nop: gemm\ndtype: bf16\nshape: {n: 64, k: 64}\nseed: 1\n"
             "sweep:\n  batch: [1, 2]\nbackends:\n  cpu-invariant: invariant\n  cudnn: report\n");
  const CommandResult r =
      run_nvdet("audit " + (dir / "cudnn-gemm.yaml").string() + " --skip-unavailable --report-dir " +
                (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cudnn-gemm.yaml:10"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("backend 'cudnn' does not compute gemm (it computes attention_decode, "
                       "attention_prefill only)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "cudnn-gemm.json"));
}

}  // namespace
}  // namespace nvdet::testing
