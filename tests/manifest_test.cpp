// Golden manifests: record -> verify the same run passes; one edited hash of an invariant
// backend fails (exit 1) and is named with its first token; of a report backend it is reported
// but passes (unless --strict); truncated, corrupt, foreign and other-scenario manifests are bad
// input (exit 2). Runs a small CPU scenario through the real binary and through the library.
#include "lib/manifest/manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/report/verify_report.h"
#include "lib/runner/audit.h"
#include "lib/runner/nvdet_dump.h"
#include "lib/tensorio/safetensors.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using testing::make_temp_dir;
using testing::read_file;
using testing::run_nvdet;
using testing::write_file;

// Small enough to run in a fraction of a second; 2-token requests so token hashes matter.
const char* kScenario = R"(name: manifest-test
op: gemm
dtype: bf16
out_dtype: fp32
shape: {n: 32, k: 128}
tokens: 2
seed: 42
requests: [0, 1]
sweep:
  batch: [2, 3, 5]
backends:
  cpu-reference: report
  cpu-invariant: invariant
)";

struct Fixture {
  std::filesystem::path dir, scenario, manifest;
};

Fixture make_fixture() {
  Fixture f;
  f.dir = make_temp_dir("manifest");
  f.scenario = f.dir / "s.yaml";
  f.manifest = f.dir / "golden.json";
  write_file(f.scenario, kScenario);
  return f;
}

// Sets the hash of (backend, context, repeat 0, request) and its token `token` in the file.
void edit_hash(const std::filesystem::path& manifest, const std::string& backend, int64_t request,
               size_t token) {
  nlohmann::json j = nlohmann::json::parse(read_file(manifest));
  nlohmann::json& contexts = j["scenarios"]["manifest-test"]["entries"][backend];
  nlohmann::json& e = contexts["gemm(batch=3)"]["0"][std::to_string(request)];
  e["hash"] = "0123456789abcdef0123456789abcdef";
  e["token_hashes"][token] = "0123456789abcdef0123456789abcdef";
  write_file(manifest, j.dump(1));
}

TEST(ManifestCli, RecordThenVerifyPasses) {
  const Fixture f = make_fixture();
  const auto rec = run_nvdet("audit " + f.scenario.string() + " --record " + f.manifest.string());
  ASSERT_EQ(rec.exit_code, 0) << rec.out << rec.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(f.manifest));
  EXPECT_EQ(j["nvdet_manifest"], 1);
  const auto& e =
      j["scenarios"]["manifest-test"]["entries"]["cpu-invariant"]["gemm(batch=5)"]["0"]["1"];
  EXPECT_EQ(e["hash"].get<std::string>().size(), 32u);
  EXPECT_EQ(e["token_hashes"].size(), 2u);

  const auto ver = run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string());
  EXPECT_EQ(ver.exit_code, 0) << ver.out << ver.err;
  EXPECT_NE(ver.out.find("verify PASSED"), std::string::npos) << ver.out;
  EXPECT_NE(ver.out.find("environment: unchanged"), std::string::npos) << ver.out;

  // Re-recording an unchanged run writes the same bytes (no timestamps): goldens diff cleanly.
  const std::string first = read_file(f.manifest);
  ASSERT_EQ(
      run_nvdet("audit " + f.scenario.string() + " --record " + f.manifest.string()).exit_code, 0);
  EXPECT_EQ(read_file(f.manifest), first);
}

TEST(ManifestCli, ChangedInvariantHashFailsReportHashDoesNot) {
  const Fixture f = make_fixture();
  ASSERT_EQ(
      run_nvdet("audit " + f.scenario.string() + " --record " + f.manifest.string()).exit_code, 0);
  const std::string pristine = read_file(f.manifest);

  edit_hash(f.manifest, "cpu-invariant", 1, 1);
  const auto bad = run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string() +
                             " --report-dir " + (f.dir / "reports").string() + " --format json");
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("CHANGED cpu-invariant gemm(batch=3) repeat 0 request 1"),
            std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("first at token 1 (1 of 2 tokens differ)"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("verify FAILED"), std::string::npos) << bad.out;
  const nlohmann::json v =
      nlohmann::json::parse(read_file(f.dir / "reports" / "manifest-test.verify.json"));
  EXPECT_FALSE(v["passed"].get<bool>());
  EXPECT_EQ(v["changes"][0]["first_token"], 1);
  EXPECT_EQ(v["changes"][0]["recorded_hash"], "0123456789abcdef0123456789abcdef");

  write_file(f.manifest, pristine);
  edit_hash(f.manifest, "cpu-reference", 0, 0);
  const auto reported =
      run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string());
  EXPECT_EQ(reported.exit_code, 0) << reported.out << reported.err;
  EXPECT_NE(reported.out.find("changed cpu-reference gemm(batch=3) repeat 0 request 0"),
            std::string::npos)
      << reported.out;
  const auto strict =
      run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string() + " --strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
}

TEST(ManifestCli, BadManifestsAreBadInput) {
  const Fixture f = make_fixture();
  ASSERT_EQ(
      run_nvdet("audit " + f.scenario.string() + " --record " + f.manifest.string()).exit_code, 0);
  const std::string good = read_file(f.manifest);
  struct Case {
    const char* label;
    std::string text;
    const char* expected;
  };
  nlohmann::json v2 = nlohmann::json::parse(good);
  v2["nvdet_manifest"] = 2;
  nlohmann::json bad_hash = nlohmann::json::parse(good);
  bad_hash["scenarios"]["manifest-test"]["entries"]["cpu-invariant"]["gemm(batch=2)"]["0"]["0"]
          ["hash"] = "xyz";
  nlohmann::json renamed = nlohmann::json::parse(good);
  renamed["scenarios"]["other"] = renamed["scenarios"]["manifest-test"];
  renamed["scenarios"].erase("manifest-test");
  nlohmann::json reseeded = nlohmann::json::parse(good);
  reseeded["scenarios"]["manifest-test"]["seed"] = 43;
  const std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 2), "is not valid JSON (truncated or corrupt"},
      {"empty", "", "is not valid JSON"},
      {"foreign", R"({"schema_version": 1, "cases": []})", "is not an nvdet manifest"},
      {"other version", v2.dump(), "version 2; this nvdet reads version 1"},
      {"bad hash", bad_hash.dump(), "is not a hash (32 hex digits)"},
      {"other scenario", renamed.dump(), "has no scenario 'manifest-test' (it holds 'other')"},
      {"other seed", reseeded.dump(), "recorded another scenario named 'manifest-test'"},
  };
  for (const Case& c : cases) {
    write_file(f.manifest, c.text);
    const auto r = run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string());
    EXPECT_EQ(r.exit_code, 2) << c.label << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.label << ": " << r.err;
    EXPECT_NE(r.err.find(f.manifest.string()), std::string::npos) << c.label << ": " << r.err;
  }
  const auto missing =
      run_nvdet("audit " + f.scenario.string() + " --verify " + (f.dir / "absent.json").string());
  EXPECT_EQ(missing.exit_code, 2);
}

TEST(ManifestCli, DumpsGiveElementWiseDetailForAChangedRequest) {
  const Fixture f = make_fixture();
  const auto d1 = f.dir / "d1", d2 = f.dir / "d2";
  ASSERT_EQ(run_nvdet("audit " + f.scenario.string() + " --record " + f.manifest.string() +
                      " --dump " + d1.string())
                .exit_code,
            0);
  const auto file = dump_file_path(d1, "manifest-test", "cpu-invariant", 1, "gemm(batch=3)", 0);
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  const SafetensorsFile st = SafetensorsFile::open(file);
  EXPECT_EQ(st.metadata().at("backend"), "cpu-invariant");
  EXPECT_EQ(st.shape("request-1"), (std::vector<int64_t>{2, 32}));

  // Pretend the recording GPU produced one different element: change it in the recorded dump
  // (and the hash in the manifest), then verify with a fresh dump.
  HostTensor t = st.read("request-1");
  const HostTensor t0 = st.read("request-0");
  const uint32_t bits = static_cast<uint32_t>(t.bits(40)) + 1;  // token 1, col 8
  std::memcpy(t.mutable_data() + 40 * 4, &bits, 4);
  write_safetensors(file, {{"request-0", &t0}, {"request-1", &t}}, st.metadata());
  edit_hash(f.manifest, "cpu-invariant", 1, 1);
  const auto r = run_nvdet("audit " + f.scenario.string() + " --verify " + f.manifest.string() +
                           " --dump " + d2.string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("first mismatch: element (1, 8)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 ulp"), std::string::npos) << r.out;

  // The untouched dumps of the two runs are identical as folders, except that one file.
  const auto diff = run_nvdet("diff " + d1.string() + " " + d2.string());
  EXPECT_EQ(diff.exit_code, 1) << diff.out << diff.err;
  EXPECT_NE(diff.out.find("1 of "), std::string::npos) << diff.out;
}

TEST(Manifest, EnvironmentChangesAreNamed) {
  SystemInfo a, b;
  a.driver_version = "580.95";
  b.driver_version = "580.159";
  a.cublas_version = "13.0.0";
  b.cublas_version = "13.1.0";
  a.gpus.push_back({0, "NVIDIA H100", 132, "9.0", 0, 0});
  b.gpus.push_back({0, "NVIDIA H200", 132, "9.0", 0, 0});
  const std::vector<std::string> c = environment_changes(a, b);
  EXPECT_EQ(c, (std::vector<std::string>{"GPU NVIDIA H100 → NVIDIA H200", "driver 580.95 → 580.159",
                                         "cuBLAS 13.0.0 → 13.1.0"}));
  EXPECT_TRUE(environment_changes(a, a).empty());
}

TEST(Manifest, JsonRoundTripKeepsEveryEntry) {
  const Scenario s = parse_scenario(kScenario, "s.yaml");
  const AuditResult result = run_audit(s, {});
  Manifest m;
  m.add(result);
  const Manifest back = manifest_from_json(nlohmann::json::parse(manifest_to_json(m).dump()), "m");
  const VerifyResult v = verify_manifest(back, "m", result);
  EXPECT_TRUE(v.passed) << v.verdict;
  EXPECT_EQ(v.compared, 2 * 3 * 2);  // backends x contexts x requests
  EXPECT_TRUE(v.changes.empty());
  EXPECT_TRUE(v.missing.empty());
  EXPECT_TRUE(v.added.empty());

  // A run with one backend fewer: its entries are missing, not changed, and do not fail.
  AuditOptions only_invariant;
  only_invariant.backends = {"cpu-invariant"};
  const VerifyResult partial = verify_manifest(back, "m", run_audit(s, only_invariant));
  EXPECT_TRUE(partial.passed);
  EXPECT_EQ(partial.missing.size(), 6u);
  EXPECT_FALSE(
      verify_manifest(back, "m", run_audit(s, only_invariant), VerifyOptions{true, ""}).passed);
}

// --verify-as RUN=RECORDED: this run's RUN is held to RECORDED's hashes. cuda-portable stands in
// here as a renamed cpu-portable run (on a GPU the real one is checked by
// reports/portable-golden.sh).
TEST(Manifest, VerifyAsComparesOneBackendWithAnothersHashes) {
  const Scenario s = parse_scenario(kScenario, "s.yaml");
  AuditOptions portable_only;
  portable_only.backends = {"cpu-portable"};
  Manifest m;
  m.add(run_audit(s, portable_only));

  AuditResult renamed = run_audit(s, portable_only);
  for (BackendOutcome& b : renamed.backends) b.name = "cuda-portable";
  for (CaseRecord& c : renamed.cases) c.backend = "cuda-portable";
  VerifyOptions as;
  as.recorded_as = {{"cuda-portable", "cpu-portable"}};
  const VerifyResult v = verify_manifest(m, "m", renamed, as);
  EXPECT_TRUE(v.passed) << v.verdict;
  EXPECT_EQ(v.compared, 3 * 2);  // contexts x requests
  EXPECT_TRUE(v.missing.empty());
  EXPECT_TRUE(v.added.empty());
  EXPECT_NE(render_verify_text(v).find("cuda-portable checked against the hashes recorded for "
                                       "cpu-portable"),
            std::string::npos);
  // Without the mapping the same run matches nothing.
  const VerifyResult plain = verify_manifest(m, "m", renamed, VerifyOptions{true, ""});
  EXPECT_FALSE(plain.passed);
  EXPECT_EQ(plain.compared, 0);

  // cpu-reference (expectation report) held to cpu-portable's hashes: every change fails.
  AuditOptions reference_only;
  reference_only.backends = {"cpu-reference"};
  VerifyOptions ref_as;
  ref_as.recorded_as = {{"cpu-reference", "cpu-portable"}};
  const VerifyResult differ = verify_manifest(m, "m", run_audit(s, reference_only), ref_as);
  EXPECT_FALSE(differ.passed);
  ASSERT_FALSE(differ.changes.empty());
  EXPECT_TRUE(differ.changes[0].fails);
  EXPECT_EQ(differ.changes[0].expectation, "report");
}

TEST(ManifestCli, VerifyAsThroughTheCli) {
  const Fixture f = make_fixture();
  ASSERT_EQ(run_nvdet("audit " + f.scenario.string() + " --backends cpu-portable --record " +
                      f.manifest.string())
                .exit_code,
            0);
  const auto same =
      run_nvdet("audit " + f.scenario.string() + " --backends cpu-portable --verify " +
                f.manifest.string() + " --verify-as cpu-portable=cpu-portable");
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  // cpu-reference rounds from double: other bits, and a change fails although it is `report`.
  // (cpu-invariant would pass here: with K = 128 its plan is one sequential chunk, the same sums.)
  const auto other =
      run_nvdet("audit " + f.scenario.string() + " --backends cpu-reference --verify " +
                f.manifest.string() + " --verify-as cpu-reference=cpu-portable");
  EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
  EXPECT_NE(other.out.find("CHANGED cpu-reference"), std::string::npos) << other.out;

  const std::string base = "audit " + f.scenario.string() + " --backends cpu-invariant ";
  for (const std::string& bad :
       {base + "--verify-as cpu-invariant=cpu-portable",                          // no --verify
        base + "--verify " + f.manifest.string() + " --verify-as cpu-invariant",  // no '='
        base + "--verify " + f.manifest.string() +
            " --verify-as cpu-invariant=cpu-variant",  // not recorded
        base + "--verify " + f.manifest.string() +
            " --verify-as cpu-variant=cpu-portable"}) {  // not run
    const auto r = run_nvdet(bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("--verify-as"), std::string::npos) << r.err;
  }
}

// --verify-as RUN=RECORDED with --dump: the recorded dumps are RECORDED's, so a changed hash gets
// its element-level detail from the two backends' dumps.
TEST(ManifestCli, VerifyAsFindsTheRecordedBackendsDumps) {
  const Fixture f = make_fixture();
  const auto golden_dumps = f.dir / "golden-dumps", now_dumps = f.dir / "now-dumps";
  ASSERT_EQ(run_nvdet("audit " + f.scenario.string() + " --backends cpu-portable --record " +
                      f.manifest.string() + " --dump " + golden_dumps.string())
                .exit_code,
            0);
  const auto r = run_nvdet("audit " + f.scenario.string() + " --backends cpu-reference --verify " +
                           f.manifest.string() + " --verify-as cpu-reference=cpu-portable --dump " +
                           now_dumps.string());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("CHANGED cpu-reference"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no element-wise detail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first mismatch: element ("), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nvdet
