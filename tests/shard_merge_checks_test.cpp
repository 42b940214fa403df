// What `nvdet report` must refuse, or judge again, when it is handed hostile or mismatched
// reports: shards of different runs that share a scenario name (another shape, another sampling
// temperature, another checkpoint: each report's fingerprint names the field), shards whose
// baselines gave other bits (another machine or build), shards whose claimed contexts do not
// partition the sweep (a context missing, out of the sweep, claimed by the wrong shard or never
// run), and a single report whose written verdict contradicts its own cases (the verdict is
// decided again from the hashes; divergences the hashes do not show, or hide, are refused).
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "lib/loader/scenario_loader.h"
#include "lib/report/merge_reports.h"
#include "lib/runner/audit.h"
#include "lib/runner/run_fingerprint.h"
#include "lib/runner/shard.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const auto scenario = shipped_scenario;

// The quickstart in two shards, as JSON reports; tests edit copies of them.
class ShardMerge : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("shard-checks");
    for (int i = 1; i <= 2; ++i) {
      const CommandResult r =
          run_nvdet("audit " + scenario("quickstart.yaml") + " -q --shard " + std::to_string(i) +
                    "/2 --report-dir " + dir_.string() + " --format json");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      shard_[i] = json::parse(read_file(dir_ / name(i)));
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string name(int i) { return "quickstart.shard-" + std::to_string(i) + "-of-2.json"; }
  // Writes the (edited) shards and merges them.
  CommandResult merge(const json& one, const json& two) {
    write_file(dir_ / "in" / name(1), one.dump(1));
    write_file(dir_ / "in" / name(2), two.dump(1));
    return run_nvdet("report " + (dir_ / "in" / name(1)).string() + " " +
                     (dir_ / "in" / name(2)).string() + " --report-dir " + (dir_ / "out").string() +
                     " --format json");
  }
  void expect_refused(const json& one, const json& two, const std::string& why) {
    const CommandResult r = merge(one, two);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "out" / "quickstart.json"));
  }
  fs::path dir_;
  std::map<int, json> shard_;
};

TEST_F(ShardMerge, TheUneditedShardsMergeAndTheVerdictIsPrinted) {
  const CommandResult r = merge(shard_[1], shard_[2]);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The merged verdict, not only the paths written.
  EXPECT_NE(r.out.find("quickstart: audit PASSED: 3 of 3 backends met their expectation"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(json::parse(read_file(dir_ / "out" / "quickstart.json")).at("summary").at("contexts"),
            20);
}

TEST_F(ShardMerge, EveryShardCarriesTheFingerprintOfWhatItRan) {
  for (const json* s : {&shard_[1], &shard_[2]}) {
    const json& f = s->at("fingerprint");
    EXPECT_EQ(f.at("shape.n"), "256");
    EXPECT_EQ(f.at("seed"), "1234");
    EXPECT_EQ(f.at("build.nvdet_version"), s->at("device").at("nvdet_version"));
  }
  json old = shard_[2];
  old.erase("fingerprint");
  expect_refused(shard_[1], old, "shard 2's report has no fingerprint");
}

// Another shape under the same name: a real run, not an edit.
TEST_F(ShardMerge, ShardsOfAnotherShapeAreRefusedNamingTheField) {
  std::string yaml = read_file(scenario("quickstart.yaml"));
  yaml.replace(yaml.find("n: 256"), 6, "n: 257");
  write_file(dir_ / "q257" / "quickstart.yaml", yaml);
  const CommandResult r =
      run_nvdet("audit " + (dir_ / "q257" / "quickstart.yaml").string() +
                " -q --shard 2/2 --report-dir " + (dir_ / "q257").string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_refused(shard_[1], json::parse(read_file(dir_ / "q257" / name(2))),
                 "the shards ran different things: shape.n ('256' in shard 1, '257' in shard 2)");
}

TEST_F(ShardMerge, AnyFingerprintFieldThatDiffersIsNamed) {
  for (const std::string field :
       {"model.sampling.temperature", "inputs.checkpoint", "build.cxx_fp_flags", "dtype"}) {
    SCOPED_TRACE(field);
    json two = shard_[2];
    two["fingerprint"][field] = "something else";
    expect_refused(shard_[1], two, "the shards ran different things: ");
    const CommandResult r = merge(shard_[1], two);
    const std::string named = field == "inputs.checkpoint" ? "the checkpoint's contents" : field;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
}

// The fingerprint holds every key of a traffic block and of the fp8 key: a shard replayed under
// other traffic, or quantised by another scheme, ran something else.
TEST(RunFingerprint, TrafficAndFp8KeysAreFields) {
  const Scenario traffic = load_scenario(scenario("traffic-cpu.yaml"));
  const RunFingerprint base = run_fingerprint(traffic);
  const std::vector<std::pair<std::string, std::function<void(Scenario&)>>> edits = {
      {"traffic.requests", [](Scenario& s) { ++s.traffic.requests; }},
      {"traffic.rate", [](Scenario& s) { s.traffic.rate *= 2; }},
      {"traffic.prompt_len", [](Scenario& s) { ++s.traffic.prompt_len.max; }},
      {"traffic.max_new_tokens", [](Scenario& s) { ++s.traffic.max_new_tokens.min; }},
      {"traffic.shared_prefix", [](Scenario& s) { s.traffic.prefix_fraction = 0.25; }},
      {"traffic.probe_arrival", [](Scenario& s) { ++s.traffic.probe_arrival; }},
      {"traffic.eos", [](Scenario& s) { s.traffic.eos_tokens = {7}; }},
      {"traffic.max_num_seqs", [](Scenario& s) { ++s.traffic.max_num_seqs; }},
      {"traffic.chunked_prefill", [](Scenario& s) { s.traffic.chunked_prefill = false; }},
      {"inputs.traffic_prompts", [](Scenario& s) {
         s.traffic.prompts = {{1, 2, 3}};
       }}};
  for (const auto& [field, edit] : edits) {
    Scenario other = traffic;
    edit(other);
    EXPECT_NE(fingerprint_difference(base, run_fingerprint(other), "a", "b").find(field),
              std::string::npos)
        << field;
  }
  const Scenario fp8 = load_scenario(scenario("fp8-gemm-cpu.yaml"));
  Scenario e5m2 = fp8;
  e5m2.fp8.scheme.format = Fp8Format::kE5M2;
  EXPECT_NE(fingerprint_difference(run_fingerprint(fp8), run_fingerprint(e5m2), "a", "b")
                .find("fp8.format"),
            std::string::npos);
  EXPECT_EQ(run_fingerprint(fp8).at("fp8.format"), "e4m3");
}

// Shard 1 owns positions 0, 2, 4, ... of the 20 contexts, shard 2 positions 1, 3, 5, ...
TEST_F(ShardMerge, OwnedContextsMustPartitionTheSweep) {
  const auto owned = [](json s, const json& list) {
    s["shard"]["owned_contexts"] = list;
    return s;
  };
  json two_missing = shard_[2]["shard"]["owned_contexts"];
  two_missing.erase(two_missing.size() - 1);  // context 19
  expect_refused(shard_[1], owned(shard_[2], two_missing),
                 "context 19 of the sweep is owned by no shard");
  json huge = shard_[2]["shard"]["owned_contexts"];
  huge.push_back(999999);
  expect_refused(shard_[1], owned(shard_[2], huge),
                 "shard 2 claims context 999999, which is not one of the 20 contexts");
  json negative = shard_[2]["shard"]["owned_contexts"];
  negative.push_back(-5);
  expect_refused(shard_[1], owned(shard_[2], negative), "shard 2 claims context -5");
  json wrong = shard_[2]["shard"]["owned_contexts"];
  wrong.push_back(0);
  expect_refused(shard_[1], owned(shard_[2], wrong), "context 0 is owned by shards 1 and 2");
  // Claimed by the shard the partition does not give it to (shard 1 gave it up).
  json one = shard_[1]["shard"]["owned_contexts"], two = shard_[2]["shard"]["owned_contexts"];
  one.erase(one.size() - 1);  // context 18
  two.push_back(18);
  expect_refused(owned(shard_[1], one), owned(shard_[2], two),
                 "shard 2 claims context 18, which the partition gives to shard 1");
}

// A context the shard claims but never ran: its table and cases lack it.
TEST_F(ShardMerge, AContextClaimedButNotRunIsRefused) {
  json two = shard_[2];
  const int gone = 19;
  json contexts = json::array(), cases = json::array(), divergences = json::array();
  for (const json& c : two["contexts"])
    if (c["index"] != gone) contexts.push_back(c);
  for (const json& c : two["cases"])
    if (c["context_index"] != gone) cases.push_back(c);
  for (const json& d : two["divergences"])
    if (d["context"] != "gemm(batch=128,position=last)") divergences.push_back(d);
  two["contexts"] = contexts;
  two["cases"] = cases;
  two["divergences"] = divergences;
  expect_refused(shard_[1], two, "shard 2 claims context 19 but did not run it");
}

// The baseline, run by both shards, gave other bits in one: merged, shard 2's contexts would
// have been compared with another baseline than shard 1's.
TEST(ShardMergeBaselines, ABaselineThatGaveOtherBitsIsRefused) {
  const Scenario s = load_scenario(scenario("quickstart.yaml"));
  std::vector<AuditResult> shards;
  for (int i = 1; i <= 2; ++i) {
    AuditOptions o;
    std::vector<Context> contexts = check_audit(s, o);
    ShardSelection sel = select_shard(std::move(contexts), {i, 2, "test"}, "");
    o.shard = sel.info;
    shards.push_back(run_checked_audit(s, o, sel.contexts));
  }
  EXPECT_NO_THROW(merge_shards(shards));
  // Context 0 is shard 1's and the baseline of shard 2's contexts: shard 2 ran it too.
  for (CaseRecord& c : shards[1].cases) {
    if (c.context_index == 0 && c.backend == "cpu-invariant") c.requests[0].hash.low ^= 1;
  }
  try {
    merge_shards(shards);
    FAIL() << "merged";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("shards 1 and 2 both ran gemm(batch=2,position=first) on "
                                         "backend 'cpu-invariant' (a baseline) and got different "
                                         "bits"),
              std::string::npos)
        << e.what();
  }
}

// One report, its written verdicts edited: it is judged again from its hashes.
class ReportClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("report-claims");
    const CommandResult r = run_nvdet("audit " + scenario("fail-expect-invariant.yaml") +
                                      " -q --report-dir " + dir_.string() + " --format json");
    ASSERT_EQ(r.exit_code, 1) << r.err;
    report_ = json::parse(read_file(dir_ / "fail-expect-invariant.json"));
  }
  void TearDown() override { fs::remove_all(dir_); }
  CommandResult render(const json& j) {
    write_file(dir_ / "in" / "fail-expect-invariant.json", j.dump(1));
    return run_nvdet("report " + (dir_ / "in" / "fail-expect-invariant.json").string() +
                     " --report-dir " + (dir_ / "out").string() + " --format md,junit,json");
  }
  fs::path dir_;
  json report_;
};

TEST_F(ReportClaims, AWrittenPassIsDecidedAgainFromTheCases) {
  json j = report_;
  j["summary"]["passed"] = true;
  j["summary"]["failed_backends"] = 0;
  for (json& b : j["backends"]) {
    b["passed"] = true;
    b["verdict"] = "held: all 20 contexts bitwise identical to the baseline";
  }
  const CommandResult r = render(j);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("fail-expect-invariant: audit FAILED: 1 of 2 backends met"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(read_file(dir_ / "out" / "fail-expect-invariant.md").rfind("# ✗ FAIL: nvdet audit", 0),
            0u);
  // JUnit counts the failures the cases show, not the summary written.
  const std::string junit = read_file(dir_ / "out" / "fail-expect-invariant.junit.xml");
  const std::string suites = junit.substr(junit.find("<testsuites"));
  EXPECT_EQ(suites.substr(0, suites.find('>')).find("failures=\"0\""), std::string::npos)
      << suites.substr(0, suites.find('>'));
  EXPECT_NE(junit.find("<failure"), std::string::npos);
  const json out = json::parse(read_file(dir_ / "out" / "fail-expect-invariant.json"));
  EXPECT_FALSE(out["summary"]["passed"].get<bool>());
  EXPECT_FALSE(out["backends"][0]["passed"].get<bool>());
  // The unedited report renders to the same JSON (timings and all).
  EXPECT_EQ(render(report_).exit_code, 1);
  EXPECT_EQ(json::parse(read_file(dir_ / "out" / "fail-expect-invariant.json")), report_);
}

TEST_F(ReportClaims, DivergencesThatTheHashesDoNotShowAreRefused) {
  json hidden = report_;
  hidden["divergences"] = json::array();  // the failure's evidence removed
  CommandResult r = render(hidden);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("its divergences do not match its hashes: backend 'cpu-variant'"),
            std::string::npos)
      << r.err;
  json invented = report_;
  json d = invented["divergences"][0];
  d["backend"] = "cpu-invariant";
  invented["divergences"].push_back(d);
  r = render(invented);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a divergence of backend 'cpu-invariant'"), std::string::npos) << r.err;
}

TEST_F(ReportClaims, AContextOrCaseGivenTwiceIsRefused) {
  json twice = report_;
  json c = twice["contexts"][1];
  c["index"] = 20;  // another index, the same values: the same context
  twice["contexts"].push_back(c);
  CommandResult r = render(twice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("are both 'gemm(batch=2,position=last)'"), std::string::npos) << r.err;
  json same_index = report_;
  same_index["contexts"].push_back(same_index["contexts"][3]);
  r = render(same_index);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("context index 3 is given twice"), std::string::npos) << r.err;
  json case_twice = report_;
  case_twice["cases"].push_back(case_twice["cases"][5]);
  r = render(case_twice);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is given twice"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nvdet::testing
