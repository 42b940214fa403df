// The report writers are one interface in one registry: a writer registered only here is chosen by
// --format's parser, listed in the help, and written by write_reports like a built-in one; a
// companion (the verify report, with json) is written only with its format and only when the
// result has something for it.
#include <gtest/gtest.h>

#include <set>

#include "lib/core/error.h"
#include "lib/report/json_report.h"
#include "lib/report/report_writers.h"
#include "lib/report/verify_report.h"
#include "tests/report_sample_result.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

// One line per case: backend, context and repeat; a format that exists only in this test.
class CaseListWriter final : public ReportWriter {
 public:
  std::string_view name() const override { return "test-cases"; }
  std::string_view extension() const override { return ".cases.txt"; }
  std::string_view description() const override { return "test-only: one line per case"; }
  std::vector<std::string_view> aliases() const override { return {"test-case-list"}; }
  std::string render(const AuditResult& r) const override {
    std::string out;
    for (const CaseRecord& c : r.cases) {
      out +=
          c.backend + " " + std::to_string(c.context_index) + " " + std::to_string(c.repeat) + "\n";
    }
    return out;
  }
};

// Written with test-cases, only after a verification: the verdict sentence.
class VerdictCompanion final : public ReportWriter {
 public:
  std::string_view name() const override { return "test-verdict"; }
  std::string_view extension() const override { return ".verdict.txt"; }
  std::string_view description() const override { return "test-only: the verify verdict"; }
  std::string_view written_with() const override { return "test-cases"; }
  bool needs_verify() const override { return true; }
  std::string render(const AuditResult& r) const override { return r.verify->verdict + "\n"; }
};

void register_test_writers_once() {
  static const bool done = [] {
    register_report_writer(std::make_unique<CaseListWriter>());
    register_report_writer(std::make_unique<VerdictCompanion>());
    return true;
  }();
  (void)done;
}

std::set<std::string> files_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

TEST(ReportWriterRegistry, ATestWriterIsOneRegistration) {
  register_test_writers_once();
  const auto formats = parse_report_formats("md,TEST-CASE-LIST");
  ASSERT_EQ(formats.size(), 2u);
  EXPECT_EQ(formats[1]->name(), "test-cases");
  EXPECT_NE(report_format_names().find("test-cases"), std::string::npos);
  EXPECT_EQ(report_format_names().find("test-verdict"), std::string::npos);  // a companion
  EXPECT_NE(report_formats_help().find("test-cases: test-only: one line per case"),
            std::string::npos)
      << report_formats_help();
  // The companion is described beside its format, never offered as a name --format refuses.
  EXPECT_EQ(report_formats_help().find("test-verdict"), std::string::npos) << report_formats_help();
  EXPECT_NE(report_formats_help().find("(also .verdict.txt: test-only: the verify verdict)"),
            std::string::npos)
      << report_formats_help();

  AuditResult r = testing::make_sample_audit_result();
  ASSERT_FALSE(r.cases.empty());
  const auto dir = testing::make_temp_dir("writer-registry");
  auto written = write_reports(r, dir, formats);
  ASSERT_EQ(written.size(), 2u);  // no verification: no companion
  EXPECT_EQ(testing::read_file(written[1]), CaseListWriter().render(r));
  EXPECT_EQ(written[1].filename().string(), report_base_name(r) + ".cases.txt");

  r.verify = VerifyResult{};
  r.verify->verdict = "all 3 recorded hashes reproduced";
  written = write_reports(r, dir, parse_report_formats("test-cases"));
  ASSERT_EQ(written.size(), 2u);
  EXPECT_EQ(testing::read_file(written[1]), "all 3 recorded hashes reproduced\n");
  EXPECT_EQ(files_in(dir),
            (std::set<std::string>{report_base_name(r) + ".md", report_base_name(r) + ".cases.txt",
                                   report_base_name(r) + ".verdict.txt"}));
  std::filesystem::remove_all(dir);
}

TEST(ReportWriterRegistry, RefusesTakenNamesAndOrphanCompanions) {
  register_test_writers_once();
  try {
    register_report_writer(std::make_unique<CaseListWriter>());
    FAIL() << "a second test-cases writer was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find("'test-case-list'"), std::string::npos) << e.what();
  }
  class Orphan final : public ReportWriter {
    std::string_view name() const override { return "test-orphan"; }
    std::string_view extension() const override { return ".orphan"; }
    std::string_view description() const override { return "written with nothing"; }
    std::string_view written_with() const override { return "no-such-format"; }
    std::string render(const AuditResult&) const override { return ""; }
  };
  EXPECT_THROW(register_report_writer(std::make_unique<Orphan>()), Error);
  EXPECT_EQ(find_report_writer("test-orphan"), nullptr);
}

// The verification is part of the result the writers render: with json, `<base>.verify.json` is
// the JSON report's `verify` object alone, written by the same pipeline.
TEST(ReportWriterRegistry, VerifyReportIsJsonsCompanion) {
  AuditResult r = testing::make_sample_audit_result();
  const auto dir = testing::make_temp_dir("writer-verify");
  EXPECT_EQ(write_reports(r, dir, parse_report_formats("json")).size(), 1u);
  VerifyResult v;
  v.manifest = "golden.json";
  v.scenario = r.scenario.name;
  v.compared = 12;
  v.passed = false;
  v.verdict = "1 of 12 recorded hashes changed";
  v.environment = {"driver 580.95 \u2192 580.159"};
  r.verify = v;
  const auto written = write_reports(r, dir, parse_report_formats("md,json"));
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[2], dir / (report_base_name(r) + ".verify.json"));
  EXPECT_EQ(testing::read_file(written[2]), verify_to_json(v).dump(2) + "\n");
  EXPECT_EQ(testing::read_file(written[1]), render_json_report(r));
  std::filesystem::remove_all(dir);
}

// The CLI's --format help is read from the registry.
TEST(ReportWriterRegistry, CliHelpListsEveryBuiltInWriter) {
  const testing::CommandResult r = testing::run_nvdet("audit --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"md: ", "json: ", "junit: ", "html: ", "verify: "}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  }
}

}  // namespace
}  // namespace nvdet
