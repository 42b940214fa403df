// op moe on the GPU backends (skipped without a device): cuda-portable bitwise equal to
// cpu-portable, cuda-invariant bitwise invariant across batch and filler_routing, cublas and
// cublas-grouped within a tolerance of cpu-reference, cuda-vendor-policy following the fused-MoE
// plan cpu-variant follows, and the audit of scenarios/moe-gpu.yaml.
// Small seeded shapes (hidden 256, 8 experts, top-2) except for the scenario.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "lib/backend/backend.h"
#include "lib/loader/op_table.h"
#include "lib/loader/scenario_loader.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

Scenario gpu_moe_scenario(
    const std::string& dtype,
    const std::string& shape = "{hidden: 256, intermediate: 128, experts: 8, top_k: 2}") {
  const auto dir = make_temp_dir("gpu-moe");
  write_file(dir / "moe.yaml",
             "name: gpu-moe-test\nop: moe\ndtype: " + dtype +
                 "\nout_dtype: fp32\n"
                 "shape: " +
                 shape +
                 "\n"
                 "tokens: 2\nseed: 5\nrequests: [1]\nsweep:\n  batch: [1, 4, 16, 48]\n"
                 "  filler_routing: [random, same, hot]\nbackends:\n  cuda-invariant: invariant\n");
  return load_scenario((dir / "moe.yaml").string());
}

std::vector<HostTensor> outputs(const Scenario& s, const std::string& backend_name) {
  auto workload = make_workload(s);
  auto backend = make_backend(backend_name);
  std::vector<HostTensor> out;
  for (const Context& c : expand_contexts(s)) {
    out.push_back(workload->run(*backend, c, nullptr).at(0).output);
  }
  return out;
}

bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

class GpuMoe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(GpuMoe, PortableIsBitwiseEqualToCpuPortable) {
  for (const std::string dtype : {"bf16", "fp16", "fp32"}) {
    const Scenario s = gpu_moe_scenario(dtype);
    const std::vector<HostTensor> cpu = outputs(s, "cpu-portable");
    const std::vector<HostTensor> gpu = outputs(s, "cuda-portable");
    ASSERT_EQ(cpu.size(), gpu.size());
    for (size_t i = 0; i < cpu.size(); ++i) {
      EXPECT_TRUE(same_bits(cpu[i], gpu[i])) << dtype << " context " << i;
    }
  }
}

// op moe on the device (router GEMM, routing, gather, the experts' GEMMs, SwiGLU, combine):
// cuda-invariant with one grouped launch per stage, cublas and the cuBLASLt flavors with one
// cuBLASLt GEMM per expert. Each gives the bits and notes of the host-driven pipeline, which
// NVDET_MOE_HOST_PIPELINE=1 asks for.
// cuda-vendor-policy's fused plan also at moe-cpu's shape (16 experts of 256), whose tuned table
// splits K at small batches, so that its split-K parts run on the device too.
TEST_F(GpuMoe, DevicePathsHaveTheHostPipelinesBitsAndNotes) {
  const std::string table_shape = "{hidden: 256, intermediate: 256, experts: 16, top_k: 2}";
  struct Case {
    std::string name, shape;
  };
  const std::vector<Case> cases = {{"cuda-invariant", ""},     {"cublas", ""},
                                   {"cublaslt-nosplit", ""},   {"cublaslt-ws1k", ""},
                                   {"cuda-vendor-policy", ""}, {"cuda-vendor-policy", table_shape}};
  bool split_seen = false;
  for (const Case& c : cases) {
    const std::string& name = c.name;
    for (const std::string dtype : {"bf16", "fp16"}) {
      SCOPED_TRACE(name + " " + dtype + " " + c.shape);
      const Scenario s =
          c.shape.empty() ? gpu_moe_scenario(dtype) : gpu_moe_scenario(dtype, c.shape);
      auto workload = make_workload(s);
      const auto run = [&](bool host) {
        if (host) setenv("NVDET_MOE_HOST_PIPELINE", "1", 1);
        auto backend = make_backend(name);
        std::vector<std::pair<HostTensor, RunNotes>> out;
        for (const Context& c : expand_contexts(s)) {
          RunNotes notes;
          HostTensor t = workload->run(*backend, c, &notes).at(0).output;
          out.emplace_back(std::move(t), std::move(notes));
        }
        unsetenv("NVDET_MOE_HOST_PIPELINE");
        return out;
      };
      const auto device = run(false), host = run(true);
      ASSERT_EQ(device.size(), host.size());
      ASSERT_NE(device[0].second.find("moe_device_steps"), device[0].second.end());
      for (size_t i = 0; i < host.size(); ++i) {
        EXPECT_TRUE(same_bits(device[i].first, host[i].first)) << "context " << i;
        RunNotes d = device[i].second, h = host[i].second;
        d.erase("moe_device_steps");
        h.erase("moe_host_steps");
        if (name == "cuda-invariant") {
          // Its experts' notes name the grouped launch instead of each call's plan.
          std::erase_if(d, [](const auto& kv) { return kv.first.rfind("expert ", 0) == 0; });
          std::erase_if(h, [](const auto& kv) { return kv.first.rfind("expert ", 0) == 0; });
        }
        EXPECT_EQ(d, h) << "context " << i;
        const auto plan = d.find("fused_moe");
        split_seen |=
            plan != d.end() && plan->second.find("split_k gate_up 1, down 1") == std::string::npos;
      }
    }
  }
  EXPECT_TRUE(split_seen) << "no context made the fused plan split K";
}

TEST_F(GpuMoe, InvariantHoldsAcrossBatchAndRouting) {
  const std::vector<HostTensor> out = outputs(gpu_moe_scenario("bf16"), "cuda-invariant");
  for (size_t i = 1; i < out.size(); ++i) EXPECT_TRUE(same_bits(out[i], out[0])) << "context " << i;
}

// fp32 activations: cuBLAS in fp32 compute without TF32 lands within 1e-4 of the output's scale
// of the double reference (the grouped backend writes its fp32 outputs directly in fp32 here).
TEST_F(GpuMoe, VendorBackendsMatchTheReference) {
  const Scenario s = gpu_moe_scenario("fp32");
  const std::vector<HostTensor> want = outputs(s, "cpu-reference");
  for (const std::string name :
       {"cublas", "cublas-grouped", "cuda-invariant", "cuda-portable", "cuda-vendor-policy"}) {
    const std::vector<HostTensor> got = outputs(s, name);
    for (size_t c = 0; c < want.size(); ++c) {
      double scale = 0;
      for (int64_t i = 0; i < want[c].numel(); ++i) {
        scale = std::max(scale, std::abs(double{want[c].get(i)}));
      }
      for (int64_t i = 0; i < want[c].numel(); ++i) {
        ASSERT_LE(std::abs(double{got[c].get(i)} - want[c].get(i)), 1e-4 * scale)
            << name << " context " << c << " element " << i;
      }
    }
  }
}

// cuda-vendor-policy plans its fused MoE with lib/ops/fused_moe_plan.h for the device's SMs, as
// cpu-variant does for a notional 132: on a 132-SM device (H100 SXM, H200) both give the same
// plan note in every context. The plan's split-K moves with the batch, so in fp32 its outputs take
// more than one value across the sweep.
TEST_F(GpuMoe, VendorPolicyFollowsTheFusedPlan) {
  const auto dir = make_temp_dir("gpu-moe-vendor");
  write_file(dir / "moe.yaml",
             "name: gpu-moe-vendor\nop: moe\ndtype: fp32\nout_dtype: fp32\n"
             "shape: {hidden: 256, intermediate: 256, experts: 16, top_k: 2}\n"
             "tokens: 2\nseed: 23\nrequests: [0, 1]\nsweep:\n  batch: [2, 4, 8, 16, 48]\n"
             "  filler_routing: [random, hot]\nbackends:\n  cuda-vendor-policy: variant\n");
  const Scenario s = load_scenario((dir / "moe.yaml").string());
  auto workload = make_workload(s);
  auto gpu = make_backend("cuda-vendor-policy");
  auto cpu = make_backend("cpu-variant");
  std::vector<HostTensor> out;
  int compared = 0;
  for (const Context& c : expand_contexts(s)) {
    RunNotes gpu_notes, cpu_notes;
    out.push_back(workload->run(*gpu, c, &gpu_notes).at(0).output);
    workload->run(*cpu, c, &cpu_notes);
    ASSERT_NE(gpu_notes.find("fused_moe"), gpu_notes.end()) << c.id;
    EXPECT_NE(gpu_notes.at("combine").find("routed weight"), std::string::npos);
    if (gpu_notes.at("fused_moe").find("132 SMs") == std::string::npos) continue;
    EXPECT_EQ(gpu_notes.at("fused_moe"), cpu_notes.at("fused_moe")) << c.id;
    ++compared;
  }
  std::cout << "plan notes compared with cpu-variant's in " << compared << " contexts\n";
  size_t distinct = 1;
  for (size_t i = 1; i < out.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen = seen || same_bits(out[i], out[j]);
    if (!seen) ++distinct;
  }
  EXPECT_GE(distinct, 2u);
}

TEST_F(GpuMoe, ScenarioAuditPasses) {
  const CommandResult r = run_nvdet("audit " + (source_dir() / "scenarios/moe-gpu.yaml").string());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace nvdet::testing
