// The scenario loader: every field and default is read as documented, every example scenario
// loads, and every malformed scenario in tests/malformed/ is refused with exit code 2, the right
// `file:line:` and the expected sentence (each file's first two lines say which).
#include "lib/loader/scenario_loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lib/loader/op_table.h"
#include "lib/scenario/scenario.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;
using testing::source_dir;

// A valid gemm scenario to start from; tests append or replace lines.
const char* kMinimalGemm = R"(name: minimal
op: gemm
dtype: bf16
shape: {n: 64, k: 128}
seed: 1
backends:
  cpu-invariant: invariant
)";

// Runs `fn` and returns the message of the nvdet::Error(kBadInput) it throws; fails the test if
// it throws nothing or anything else.
template <typename Fn>
std::string input_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a non-nvdet exception escaped: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error was thrown";
  return "";
}

std::string parse_error(const std::string& text) {
  return input_error_of([&] { parse_scenario(text, "s.yaml"); });
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in: " << text;
}
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(Contains((text), (part)))

std::vector<int64_t> ints(const SweepAxis& axis) {
  std::vector<int64_t> out;
  for (const auto& v : axis.values) out.push_back(std::get<int64_t>(v));
  return out;
}

const SweepAxis& axis_named(const Scenario& s, const std::string& name) {
  for (const auto& a : s.sweep)
    if (a.name() == name) return a;
  throw std::runtime_error("no axis " + name);
}

// ---- the malformed corpus ---------------------------------------------------------------------

struct MalformedCase {
  fs::path path;
  std::string expect;
  int line = 0;
};

std::vector<MalformedCase> malformed_cases() {
  std::vector<MalformedCase> cases;
  for (const auto& entry : fs::directory_iterator(source_dir() / "tests" / "malformed")) {
    if (entry.path().extension() != ".yaml") continue;
    MalformedCase c{entry.path(), "", 0};
    std::ifstream in(entry.path());
    std::string first, second;
    std::getline(in, first);
    std::getline(in, second);
    const std::string expect_tag = "# expect: ", line_tag = "# line: ";
    if (first.rfind(expect_tag, 0) == 0) c.expect = first.substr(expect_tag.size());
    if (second.rfind(line_tag, 0) == 0) c.line = std::stoi(second.substr(line_tag.size()));
    cases.push_back(c);
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return cases;
}

TEST(ScenarioLoaderTest, MalformedCorpusIsRefusedWithLocationAndSentence) {
  const auto cases = malformed_cases();
  ASSERT_GE(cases.size(), 20u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path.filename().string());
    ASSERT_FALSE(c.expect.empty()) << "first line must be '# expect: <substring>'";
    ASSERT_GT(c.line, 0) << "second line must be '# line: N'";
    const std::string message = input_error_of([&] { load_scenario(c.path.string()); });
    EXPECT_CONTAINS(message, c.path.string() + ":" + std::to_string(c.line) + ":");
    EXPECT_CONTAINS(message, c.expect);
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one sentence, one line: " << message;
  }
}

// ---- the example scenarios --------------------------------------------------------------------

TEST(ScenarioLoaderTest, EveryExampleScenarioLoads) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(source_dir() / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const Scenario s = load_scenario(entry.path().string());
    EXPECT_EQ(s.name + ".yaml", entry.path().filename().string()) << "name matches the file";
    EXPECT_FALSE(s.backends.empty());
    ++loaded;
  }
  EXPECT_GE(loaded, 10);
}

TEST(ScenarioLoaderTest, QuickstartReadsAsDocumented) {
  const std::string path = (source_dir() / "scenarios" / "quickstart.yaml").string();
  const Scenario s = load_scenario(path);
  EXPECT_EQ(s.path, path);
  EXPECT_EQ(s.name, "quickstart");
  EXPECT_FALSE(s.description.empty());
  EXPECT_EQ(s.op, OpKind::kGemm);
  EXPECT_EQ(s.dtype, DType::kBF16);
  EXPECT_EQ(s.out_dtype, DType::kFP32);
  EXPECT_EQ(s.n, 256);
  EXPECT_EQ(s.k, 1024);
  EXPECT_EQ(s.requests, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(s.repeat, 2);
  ASSERT_EQ(s.sweep.size(), 2u);
  EXPECT_EQ(s.sweep[0].name(), "batch");
  // cpu-variant changes its K split at m = 16 and m = 64: the sweep must cross both.
  const auto batches = ints(s.sweep[0]);
  const auto has = [&](int64_t m) {
    return std::find(batches.begin(), batches.end(), m) != batches.end();
  };
  EXPECT_TRUE(has(16) && has(17) && has(64) && has(65));
  EXPECT_EQ(s.sweep[1].name(), "position");
  EXPECT_EQ(s.sweep[1].values, (std::vector<AxisValue>{"first", "last"}));
  ASSERT_EQ(s.backends.size(), 3u);
  EXPECT_EQ(s.backends[0].name, "cpu-reference");
  EXPECT_EQ(s.backends[0].expect, Expectation::kReport);
  EXPECT_EQ(s.backends[1].name, "cpu-variant");
  EXPECT_EQ(s.backends[1].expect, Expectation::kVariant);
  EXPECT_EQ(s.backends[2].name, "cpu-invariant");
  EXPECT_EQ(s.backends[2].expect, Expectation::kInvariant);
}

// ---- defaults and each field ------------------------------------------------------------------

TEST(ScenarioLoaderTest, DefaultsOfAMinimalScenario) {
  const Scenario s = parse_scenario(kMinimalGemm, "min.yaml");
  EXPECT_EQ(s.path, "min.yaml");
  EXPECT_EQ(s.description, "");
  EXPECT_EQ(s.out_dtype, DType::kBF16);  // = dtype
  EXPECT_EQ(s.tokens, 1);
  EXPECT_FALSE(s.bias);
  EXPECT_FALSE(s.tf32);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.requests, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.repeat, 1);
  EXPECT_TRUE(s.sweep.empty());
  ASSERT_EQ(s.backends.size(), 1u);
  EXPECT_EQ(s.backends[0].where.line, 7);
}

TEST(ScenarioLoaderTest, GemmFields) {
  const Scenario s = parse_scenario(R"(name: g
description: "a GEMM"
op: gemm
dtype: fp32
out_dtype: fp16
shape: {n: 1048576, k: 3}
tokens: 5
bias: true
tf32: true
seed: 18446744073709551615
requests: 3
repeat: 4
backends: {cublas: {expect: report}}
)",
                                    "g.yaml");
  EXPECT_EQ(s.description, "a GEMM");
  EXPECT_EQ(s.dtype, DType::kFP32);
  EXPECT_EQ(s.out_dtype, DType::kFP16);
  EXPECT_EQ(s.n, 1 << 20);
  EXPECT_EQ(s.k, 3);
  EXPECT_EQ(s.tokens, 5);
  EXPECT_TRUE(s.bias);
  EXPECT_TRUE(s.tf32);
  EXPECT_EQ(s.seed, UINT64_MAX);
  EXPECT_EQ(s.requests, (std::vector<int64_t>{0, 1, 2}));  // a count N means [0 .. N-1]
  EXPECT_EQ(s.repeat, 4);
  EXPECT_EQ(s.backends[0].expect, Expectation::kReport);
}

TEST(ScenarioLoaderTest, RmsNormAndLogSoftmaxFields) {
  const Scenario r = parse_scenario(R"(name: r
op: rmsnorm
dtype: fp16
shape: {d: 4096}
eps: 1e-5
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "r.yaml");
  EXPECT_EQ(r.op, OpKind::kRmsNorm);
  EXPECT_EQ(r.d, 4096);
  EXPECT_FLOAT_EQ(r.eps, 1e-5f);

  const Scenario l = parse_scenario(R"(name: l
op: log_softmax
dtype: bf16
shape: {v: 151936}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "l.yaml");
  EXPECT_EQ(l.op, OpKind::kLogSoftmax);
  EXPECT_EQ(l.v, 151936);
}

TEST(ScenarioLoaderTest, AttentionFieldsAndDefaults) {
  const Scenario d = parse_scenario(R"(name: a
op: attention_decode
dtype: bf16
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "a.yaml");
  const AttentionShape defaults;
  EXPECT_EQ(d.attention.num_heads, defaults.num_heads);
  EXPECT_EQ(d.attention.kv_len, defaults.kv_len);
  EXPECT_EQ(d.attention.filler_kv_len, -1);
  EXPECT_FALSE(d.attention.scale.has_value());

  const Scenario s = parse_scenario(R"(name: a
op: attention_decode
dtype: bf16
attention: {heads: 12, kv_heads: 4, head_dim: 72, page_size: 1, kv_len: 77, filler_kv_len: 9,
            scale: 0.125}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "a.yaml");
  EXPECT_EQ(s.attention.num_heads, 12);
  EXPECT_EQ(s.attention.num_kv_heads, 4);
  EXPECT_EQ(s.attention.head_dim, 72);
  EXPECT_EQ(s.attention.page_size, 1);
  EXPECT_EQ(s.attention.kv_len, 77);
  EXPECT_EQ(s.attention.filler_kv_len, 9);
  ASSERT_TRUE(s.attention.scale.has_value());
  EXPECT_FLOAT_EQ(*s.attention.scale, 0.125f);

  const Scenario same = parse_scenario(R"(name: a
op: attention_decode
dtype: bf16
attention: {filler_kv_len: same}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                       "a.yaml");
  EXPECT_EQ(same.attention.filler_kv_len, -1);
}

TEST(ScenarioLoaderTest, PrefillFields) {
  const Scenario s = parse_scenario(R"(name: p
op: attention_prefill
dtype: bf16
attention: {heads: 4, kv_heads: 2, head_dim: 64}
prefill: {prompt_len: 300, chunk: 64, prefix_len: 299}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "p.yaml");
  EXPECT_EQ(s.op, OpKind::kAttentionPrefill);
  EXPECT_EQ(s.prefill.prompt_len, 300);
  EXPECT_EQ(s.prefill.chunk, 64);
  EXPECT_EQ(s.prefill.prefix_len, 299);

  const Scenario whole = parse_scenario(R"(name: p
op: attention_prefill
dtype: bf16
prefill: {chunk: whole}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                        "p.yaml");
  EXPECT_EQ(whole.prefill.chunk, 0);
}

TEST(ScenarioLoaderTest, ModelFieldsWithInlinePrompts) {
  const Scenario s = parse_scenario(R"(name: m
op: model
dtype: bf16
model:
  hidden: 512
  layers: 3
  heads: 8
  kv_heads: 4
  head_dim: 128
  intermediate: 1024
  vocab: 500
  rms_eps: 1e-6
  rope_theta: 500000
  weight_seed: 77
  prompts: [[1, 2, 3], [499]]
  max_new_tokens: 5
  prefill_chunk: 8
  page_size: 32
seed: 3
requests: [1, 0]
backends: {cpu-invariant: invariant}
)",
                                    "dir/m.yaml");
  const ModelSpec& m = s.model;
  EXPECT_EQ(m.checkpoint, "");
  EXPECT_EQ(m.hidden, 512);
  EXPECT_EQ(m.layers, 3);
  EXPECT_EQ(m.num_heads, 8);
  EXPECT_EQ(m.num_kv_heads, 4);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.intermediate, 1024);
  EXPECT_EQ(m.vocab, 500);
  EXPECT_FLOAT_EQ(m.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(m.rope_theta, 500000.0f);
  EXPECT_EQ(m.weight_seed, 77u);
  EXPECT_EQ(m.prompts, (std::vector<std::vector<int32_t>>{{1, 2, 3}, {499}}));
  EXPECT_EQ(m.max_new_tokens, 5);
  EXPECT_EQ(m.prefill_chunk, 8);
  EXPECT_EQ(m.page_size, 32);
  EXPECT_EQ(m.where.line, 5);
  EXPECT_EQ(s.requests, (std::vector<int64_t>{1, 0}));
}

TEST(ScenarioLoaderTest, ModelSyntheticPromptsAndCheckpointPath) {
  const Scenario s = parse_scenario(R"(name: m
op: model
dtype: bf16
model: {prompt_len: 40, num_prompts: 9, prefill_chunk: whole}
seed: 3
requests: [8]
backends: {cpu-invariant: invariant}
)",
                                    "m.yaml");
  EXPECT_EQ(s.model.prompt_len, 40);
  EXPECT_EQ(s.model.num_prompts, 9);
  EXPECT_EQ(s.model.prefill_chunk, 0);
  EXPECT_TRUE(s.model.prompts.empty());

  // A relative checkpoint is resolved against the scenario's folder, an absolute one kept.
  const Scenario c = parse_scenario(R"(name: m
op: model
dtype: bf16
model: {checkpoint: ../weights/tiny}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "suite/scenarios/m.yaml");
  EXPECT_EQ(c.model.checkpoint, "suite/weights/tiny");
  const Scenario a = parse_scenario(R"(name: m
op: model
dtype: bf16
model: {checkpoint: /models/tiny}
seed: 3
backends: {cpu-invariant: invariant}
)",
                                    "suite/m.yaml");
  EXPECT_EQ(a.model.checkpoint, "/models/tiny");
}

TEST(ScenarioLoaderTest, ModelPromptsFileIsReadRelativeToTheScenario) {
  const fs::path dir = testing::make_temp_dir("scenario-prompts");
  testing::write_file(dir / "prompts.txt", "# two prompts\n1 2 3\n\n  40 5\n");
  testing::write_file(dir / "m.yaml", R"(name: m
op: model
dtype: bf16
model: {prompts_file: prompts.txt}
seed: 3
requests: [0, 1]
backends: {cpu-invariant: invariant}
)");
  const Scenario s = load_scenario((dir / "m.yaml").string());
  EXPECT_EQ(s.model.prompts_file, (dir / "prompts.txt").string());
  EXPECT_EQ(s.model.prompts, (std::vector<std::vector<int32_t>>{{1, 2, 3}, {40, 5}}));

  // A bad token is reported at its line and column in the prompts file.
  testing::write_file(dir / "prompts.txt", "1 2 3\n4 x5\n");
  const std::string message = input_error_of([&] { load_scenario((dir / "m.yaml").string()); });
  EXPECT_CONTAINS(message, (dir / "prompts.txt").string() + ":2:3: token id 'x5'");
  // Only one prompt in the file, but request 1 is probed.
  testing::write_file(dir / "prompts.txt", "1 2 3\n");
  EXPECT_CONTAINS(input_error_of([&] { load_scenario((dir / "m.yaml").string()); }),
                  "request 1 is outside the model's 1 prompts");
  fs::remove(dir / "prompts.txt");
  EXPECT_CONTAINS(input_error_of([&] { load_scenario((dir / "m.yaml").string()); }),
                  "m.yaml:4:23: cannot read prompts file");
  fs::remove_all(dir);
}

// ---- sweeps -----------------------------------------------------------------------------------

TEST(ScenarioLoaderTest, SweepValueFormsAndFileOrder) {
  const Scenario s = parse_scenario(std::string(kMinimalGemm) + R"(requests: [2, 0]
sweep:
  tokens: 3
  batch: [{from: 3, to: 4}, 10, {from: 16, to: 64, mul: 4}, {from: 100, to: 120, step: 10}]
  position: [first, middle, last, 0, 1]
)",
                                    "s.yaml");
  ASSERT_EQ(s.sweep.size(), 3u);
  EXPECT_EQ(s.sweep[0].name(), "tokens");  // file order, not alphabetical
  EXPECT_EQ(ints(s.sweep[0]), (std::vector<int64_t>{3}));
  EXPECT_EQ(s.sweep[1].name(), "batch");
  EXPECT_EQ(ints(s.sweep[1]), (std::vector<int64_t>{3, 4, 10, 16, 64, 100, 110, 120}));
  EXPECT_EQ(s.sweep[1].where.line, 11);
  EXPECT_EQ(s.sweep[2].values,
            (std::vector<AxisValue>{"first", "middle", "last", int64_t{0}, int64_t{1}}));
}

// A range bomb: hundreds of ranges, each within the per-range limit, whose total would take
// gigabytes once expanded. The loader counts each range arithmetically and refuses the first one
// that takes the axis past the limit, before storing its values.
TEST(ScenarioLoaderTest, RangesAreCountedBeforeTheyExpand) {
  std::string bomb = std::string(kMinimalGemm) + "sweep:\n  batch: [{from: 1, to: 60000}";
  for (int i = 0; i < 400; ++i) bomb += ", {from: 1, to: 16777216, step: 256}";
  bomb += "]\n";
  const std::string e = parse_error(bomb);
  EXPECT_CONTAINS(e, "s.yaml:9:");  // the second range of the list
  EXPECT_CONTAINS(e,
                  "sweep axis 'batch' has more than 65536 values (this range adds 65536 to 60000)");
  // A list of single values is bounded the same way, at the value that goes past the limit.
  std::string singles =
      std::string(kMinimalGemm) + "sweep:\n  batch: [{from: 1, to: 65536}, 70000]\n";
  EXPECT_CONTAINS(parse_error(singles), "sweep axis 'batch' has more than 65536 values");
  // A range under the limit still expands exactly (mul stops at the last power within 'to').
  const Scenario s =
      parse_scenario(std::string(kMinimalGemm) +
                         "sweep:\n  batch: [{from: 3, to: 200, mul: 3}, {from: 1000, to: 1003}]\n",
                     "s.yaml");
  EXPECT_EQ(ints(s.sweep[0]), (std::vector<int64_t>{3, 9, 27, 81, 1000, 1001, 1002, 1003}));
}

TEST(ScenarioLoaderTest, WordValuesOfAttentionAxes) {
  const Scenario d = parse_scenario(R"(name: d
op: attention_decode
dtype: bf16
seed: 3
sweep:
  kv_len: {from: 1, to: 4096, mul: 8}
  filler_kv_len: [same, 37]
  num_splits: [0, 1, 4]
  split_size: [0, 256]
  page_size: [1, 16]
backends: {cpu-invariant: invariant}
)",
                                    "d.yaml");
  EXPECT_EQ(ints(axis_named(d, "kv_len")), (std::vector<int64_t>{1, 8, 64, 512, 4096}));
  EXPECT_EQ(axis_named(d, "filler_kv_len").values, (std::vector<AxisValue>{"same", int64_t{37}}));

  const Scenario p = parse_scenario(R"(name: p
op: attention_prefill
dtype: bf16
seed: 3
sweep:
  prompt_len: [300, 301]
  prefill_chunk: [16, whole]
  prefix_len: [0, 299]
backends: {cpu-invariant: invariant}
)",
                                    "p.yaml");
  EXPECT_EQ(axis_named(p, "prefill_chunk").values, (std::vector<AxisValue>{int64_t{16}, "whole"}));
  EXPECT_EQ(ints(axis_named(p, "prefix_len")), (std::vector<int64_t>{0, 299}));
}

// Builds a valid scenario for `op` with one axis from the op's own table record (its shape keys).
std::string scenario_with_axis(const OpSpec& op, const std::string& axis) {
  // A server op names its server instead of a dtype and backends.
  std::string text = op.server
                         ? "name: x\nop: " + std::string(op.name()) +
                               "\nseed: 1\nendpoint: {expect: report, url: http://h, model: m}\n"
                               "probe: {prompts: [a]}\n"
                         : "name: x\nop: " + std::string(op.name()) + "\ndtype: bf16\nseed: 1\n";
  if (!op.shape.empty()) {
    text += "shape: {";
    for (size_t i = 0; i < op.shape.size(); ++i)
      text += std::string(i ? ", " : "") + op.shape[i].name + ": 8";
    text += "}\n";
  }
  // sampler, filler_routing, allreduce, arrival, prefix_caching, chunked_prefill and the FP8
  // axes take words only (sampler chooses how model.sampling draws; the serving scheduler's axes
  // set a traffic block's scheduler).
  const std::string value = axis == "position"         ? "[first, last]"
                            : axis == "sampler"        ? "[per_request, batch_stream]"
                            : axis == "filler_routing" ? "[random, hot]"
                            : axis == "allreduce"      ? "[ring, fixed]"
                            : axis == "prefix_caching" || axis == "chunked_prefill" ? "[on, off]"
                            : axis == "fp8_format"                                  ? "[e4m3, e5m2]"
                            : axis == "act_scale"    ? "[dynamic_token, group_128]"
                            : axis == "weight_scale" ? "[tensor, channel]"
                            : axis == "accumulation" ? "[promoted, fast]"
                            : axis == "arrival"      ? "[first, last]"
                                                     : "[1, 2]";
  if (axis == "sampler" && op.accepts_key("model")) text += "model: {sampling: {seed: 1}}\n";
  const std::set<std::string> scheduler = {"traffic_seed", "max_num_batched_tokens", "max_num_seqs",
                                           "prefix_caching", "chunked_prefill"};
  if (scheduler.count(axis) && op.accepts_key("traffic"))
    text += "traffic: {requests: 2, max_num_seqs: 1}\n";
  const std::set<std::string> fp8 = {"fp8_format", "act_scale", "weight_scale", "accumulation"};
  if (fp8.count(axis) && op.accepts_key("fp8")) text += "fp8: {}\n";
  return text + "sweep:\n  " + axis + ": " + value + "\n" +
         (op.server ? "" : "backends: {cpu-invariant: invariant}\n");
}

TEST(ScenarioLoaderTest, EveryKnownAxisIsAcceptedExactlyForItsOps) {
  for (const AxisSpec& axis : axis_table()) {
    for (const OpSpec& op : op_table()) {
      SCOPED_TRACE(axis.name + " / " + std::string(op.name()));
      const std::string text = scenario_with_axis(op, axis.name);
      const bool applies = op.accepts_axis(axis.name);
      if (applies) {
        const Scenario s = parse_scenario(text, "x.yaml");
        ASSERT_EQ(s.sweep.size(), 1u);
        EXPECT_EQ(s.sweep[0].values.size(), 2u);
      } else {
        EXPECT_CONTAINS(parse_error(text), "axis '" + axis.name + "' does not apply to op");
      }
    }
  }
}

TEST(ScenarioLoaderTest, TensorParallelKeysAndAxes) {
  const std::string base = std::string(kMinimalGemm);
  const Scenario s = parse_scenario(
      base +
          "tp_split: column\nnccl: {algo: ring, proto: LL128, min_channels: 2, max_channels: 4}\n"
          "sweep:\n  tp: [1, 2]\n  allreduce: [auto, nccl]\n  channels: [0, 3]\n",
      "s.yaml");
  EXPECT_FALSE(s.tp_split_row);
  EXPECT_EQ(s.nccl.algo, "Ring");
  EXPECT_EQ(s.nccl.proto, "LL128");
  EXPECT_EQ(s.nccl.min_channels, 2);
  EXPECT_EQ(s.nccl.max_channels, 4);
  EXPECT_CONTAINS(parse_error(base + "tp_split: diagonal\n"),
                  "'tp_split' must be 'row' or 'column'");
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  allreduce: [rign]\n"), "did you mean 'ring'");
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  allreduce: [2]\n"),
                  "'allreduce' values must be 'auto', 'ring', 'tree', 'fixed', 'nccl', got '2'");
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  allreduce: {from: 1, to: 2}\n"),
                  "sweep axis 'allreduce' takes words");
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  tp: [0]\n"), "'tp' values must be at least 1");
  EXPECT_CONTAINS(parse_error(base + "nccl: {algo: nvls}\n"),
                  "'algo' must be one of 'Ring', 'Tree'");
  EXPECT_CONTAINS(parse_error(base + "nccl: {min_channels: 8, max_channels: 4}\n"),
                  "min_channels must not be more than max_channels");
  EXPECT_CONTAINS(parse_error(base + "nccl: {max_channels: 65}\n"), "max_channels");
}

TEST(ScenarioLoaderTest, RequestsMustFitTheSmallestBatch) {
  const std::string base = std::string(kMinimalGemm) + "requests: [0, 1, 7]\n";
  EXPECT_NO_THROW(
      parse_scenario(base + "sweep:\n  batch: [3, 8]\n  position: [0, first, last]\n", "s.yaml"));
  // No batch axis: the batch is exactly the probed requests.
  EXPECT_NO_THROW(
      parse_scenario(base + "sweep:\n  position: [first, middle, last, 0]\n", "s.yaml"));
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  position: [1]\n"),
                  "s.yaml:10:14: position 1 puts request 7 (the 3rd probed request) at slot 3, "
                  "outside the smallest batch 3");
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  batch: [8, 2, 4]\n"),
                  "s.yaml:10:14: batch 2 cannot hold the 3 probed requests [0, 1, 7]: "
                  "request 7 would fall outside the batch");
  // A range is pointed at as a whole.
  EXPECT_CONTAINS(parse_error(base + "sweep:\n  batch: {from: 1, to: 8}\n"),
                  "s.yaml:10:10: batch 1");
}

TEST(ScenarioLoaderTest, PrefixMustBeShorterThanEveryPrompt) {
  const std::string base = R"(name: p
op: attention_prefill
dtype: bf16
seed: 3
backends: {cpu-invariant: invariant}
)";
  EXPECT_CONTAINS(parse_error(base + "prefill: {prompt_len: 10, prefix_len: 10}\n"),
                  "s.yaml:6:39: prefix_len 10 must be smaller than prompt_len 10");
  EXPECT_CONTAINS(
      parse_error(base + "prefill: {prefix_len: 100}\nsweep:\n  prompt_len: [300, 100]\n"),
      "prefix_len 100 must be smaller than prompt_len 100");
  EXPECT_NO_THROW(parse_scenario(
      base + "sweep:\n  prompt_len: [300, 101]\n  prefix_len: [0, 100]\n", "s.yaml"));
}

// ---- errors that are not about one node -------------------------------------------------------

TEST(ScenarioLoaderTest, UnreadableFilesAreInputErrorsWithoutALine) {
  const std::string missing = (testing::make_temp_dir("scenario-missing") / "nope.yaml").string();
  EXPECT_EQ(input_error_of([&] { load_scenario(missing); }),
            "cannot read scenario '" + missing + "': No such file or directory");
  const std::string dir = testing::make_temp_dir("scenario-dir").string();
  EXPECT_EQ(input_error_of([&] { load_scenario(dir); }),
            "scenario '" + dir + "' is not a regular file (it is a folder)");
}

TEST(ScenarioLoaderTest, YamlSyntaxErrorsCarryYamlCppsWordsAndLocation) {
  EXPECT_EQ(parse_error("name: x\nop: [gemm\n"),
            "s.yaml:3:1: YAML syntax error: end of sequence flow not found");
}

// Whatever the bytes, the loader either returns a scenario or throws Error(kBadInput): never a
// yaml-cpp exception, a crash or anything else. Every prefix and a few mutations of quickstart.
TEST(ScenarioLoaderTest, NoOtherExceptionEscapesOnTruncatedOrMangledInput) {
  const std::string text = testing::read_file(source_dir() / "scenarios" / "quickstart.yaml");
  ASSERT_FALSE(text.empty());
  const auto survives = [](const std::string& t) {
    try {
      parse_scenario(t, "q.yaml");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput) << e.what();
    } catch (...) {
      ADD_FAILURE() << "a non-nvdet exception escaped for input:\n" << t;
    }
  };
  for (size_t cut = 0; cut <= text.size(); ++cut) survives(text.substr(0, cut));
  for (size_t i = 0; i < text.size(); i += 7)
    for (const char c : {'[', '{', ':', '-', '"', '\t', '&', '*', '!', '0'}) {
      std::string t = text;
      t[i] = c;
      survives(t);
    }
}

}  // namespace
}  // namespace nvdet
