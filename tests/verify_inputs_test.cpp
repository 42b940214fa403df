// A manifest records the fingerprint of the inputs it was recorded from (the resolved scenario,
// the checkpoint's and the prompts' contents): verifying a run of other inputs is refused with
// exit 2 naming what changed, before anything runs, instead of blaming the kernels for every hash
// the inputs moved ("CHANGED cpu-invariant [invariant]", exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/core/dtype.h"
#include "lib/tensorio/safetensors.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;

class VerifyInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("verify-inputs");
    fs::copy(source_dir() / "tests/fixtures/checkpoints/llama-t4", dir_ / "ckpt");
    write(dir_ / "ckpt", "[3, 17, 42, 5]");
    const CommandResult r = audit("--record " + (dir_ / "golden.json").string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A one-context scenario of the fixture checkpoint with one prompt.
  void write(const fs::path& checkpoint, const std::string& prompt) {
    write_file(dir_ / "s.yaml", "name: s\nop: model\ndtype: bf16\nmodel: {checkpoint: " +
                                    checkpoint.string() + ", prompts: [" + prompt +
                                    "], max_new_tokens: 3}\nseed: 1\nbackends: {cpu-invariant: "
                                    "invariant}\n");
  }
  CommandResult audit(const std::string& extra) {
    return run_nvdet("audit " + (dir_ / "s.yaml").string() + " -q " + extra);
  }
  void expect_refused(const std::string& field) {
    const CommandResult r = audit("--verify " + (dir_ / "golden.json").string() + " --strict");
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("recorded scenario 's' from other inputs than this run's: " + field),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");  // refused before anything ran
  }
  fs::path dir_;
};

TEST_F(VerifyInputs, TheSameInputsVerify) {
  const CommandResult r = audit("--verify " + (dir_ / "golden.json").string() + " --strict");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json m = nlohmann::json::parse(read_file(dir_ / "golden.json"));
  const nlohmann::json& inputs = m.at("scenarios").at("s").at("inputs");
  EXPECT_TRUE(inputs.contains("inputs.checkpoint"));
  EXPECT_TRUE(inputs.contains("inputs.prompts"));
  EXPECT_FALSE(inputs.contains("build.nvdet_version"));  // verified across builds on purpose
}

TEST_F(VerifyInputs, OneWeightChangedByOnePercentIsNamed) {
  const fs::path file = dir_ / "ckpt" / "model.safetensors";
  const SafetensorsFile f = SafetensorsFile::open(file);
  std::vector<AnyTensor> tensors;
  for (const std::string& name : f.names()) tensors.push_back(f.read_any(name));
  ASSERT_EQ(tensors[0].type, ElemType::kBF16);
  uint16_t bits = 0;
  std::memcpy(&bits, tensors[0].bytes.data(), 2);
  bits = float_to_bf16_bits(bf16_bits_to_float(bits) * 1.01f + 0.01f);
  std::memcpy(tensors[0].bytes.data(), &bits, 2);
  std::vector<std::pair<std::string, const AnyTensor*>> refs;
  for (size_t i = 0; i < tensors.size(); ++i) refs.emplace_back(f.names()[i], &tensors[i]);
  write_safetensors_any(file, refs, f.metadata());
  expect_refused("the checkpoint's contents");
}

TEST_F(VerifyInputs, AnotherPromptIsNamed) {
  write(dir_ / "ckpt", "[3, 17, 42, 6]");
  expect_refused("the prompts' token ids");
}

TEST_F(VerifyInputs, AnotherShapeIsNamed) {
  const fs::path q = dir_ / "q";
  std::string yaml = read_file(source_dir() / "scenarios" / "quickstart.yaml");
  write_file(q / "quickstart.yaml", yaml);
  ASSERT_EQ(run_nvdet("audit " + (q / "quickstart.yaml").string() + " -q --record " +
                      (q / "g.json").string())
                .exit_code,
            0);
  yaml.replace(yaml.find("n: 256"), 6, "n: 257");
  write_file(q / "quickstart.yaml", yaml);
  const CommandResult r = run_nvdet("audit " + (q / "quickstart.yaml").string() + " --verify " +
                                    (q / "g.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("shape.n ('256' in the manifest, '257' now)"), std::string::npos) << r.err;
  // The merged shards of a run of other inputs are refused alike.
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(
        run_nvdet("audit " + (q / "quickstart.yaml").string() + " -q --shard " + std::to_string(i) +
                  "/2 --report-dir " + (q / "s").string() + " --format json")
            .exit_code,
        0);
  }
  const CommandResult merged =
      run_nvdet("report " + (q / "s" / "quickstart.shard-1-of-2.json").string() + " " +
                (q / "s" / "quickstart.shard-2-of-2.json").string() + " --verify " +
                (q / "g.json").string() + " --report-dir " + (q / "m").string());
  EXPECT_EQ(merged.exit_code, 2) << merged.out;
  EXPECT_NE(merged.err.find("shape.n"), std::string::npos) << merged.err;
}

// A manifest recorded before inputs were recorded is verified as it always was.
TEST_F(VerifyInputs, AManifestWithoutInputsIsStillVerified) {
  nlohmann::json m = nlohmann::json::parse(read_file(dir_ / "golden.json"));
  m["scenarios"]["s"].erase("inputs");
  write_file(dir_ / "old.json", m.dump(1));
  const CommandResult r = audit("--verify " + (dir_ / "old.json").string() + " --strict");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace nvdet::testing
