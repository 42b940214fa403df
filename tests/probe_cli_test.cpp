// nvdet probe end to end against scripted servers on 127.0.0.1: the verdict under each
// expectation and in every report format, the control's nondeterminism told apart from the
// load's, server failures as one sentence with exit 3, keys kept out of the reports, and shards
// that merge into the whole run's verdict.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/fake_openai_server.h"
#include "tests/test_support.h"

namespace nvdet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kProbePrompt = "once upon a time";

// A probe scenario against `url`: two loaded contexts whose fillers are all streaming when the
// probe is sent (arrival last), logprobs asked for.
std::string scenario_text(const std::string& url, const std::string& expect,
                          const std::string& endpoint_extra = "", int control = 3) {
  return "name: fake-probe\nop: probe\nseed: 5\nrepeat: 2\n"
         "endpoint:\n  name: fake\n  expect: " +
         expect + "\n  url: " + url + "\n  model: m\n  timeout: 20\n  inactivity_timeout: 10\n" +
         endpoint_extra + "probe:\n  prompts: [\"" + kProbePrompt +
         "\"]\n  max_tokens: 4\n  logprobs: 2\nfillers: {words: 3, max_tokens: 4}\ncontrol: " +
         std::to_string(control) + "\nsweep:\n  concurrency: [2, 3]\n  arrival: [last]\n";
}

fs::path write_scenario(const std::string& tag, const std::string& text) {
  const fs::path dir = make_temp_dir(tag);
  write_file(dir / "fake-probe.yaml", text);
  return dir / "fake-probe.yaml";
}

// An answer with two tokens and their log probabilities; `lp` is the second token's.
std::string answer(const std::string& second, double lp) {
  const json entry = [&](const std::string& t, double l) {
    return json{{"token", t},
                {"logprob", l},
                {"top_logprobs",
                 {{{"token", t}, {"logprob", l}}, {{"token", "?"}, {"logprob", l - 0.125}}}}};
  }(" a", -0.5);
  json tokens = json::array({entry});
  tokens.push_back(
      {{"token", second},
       {"logprob", lp},
       {"top_logprobs",
        {{{"token", second}, {"logprob", lp}}, {{"token", "?"}, {"logprob", lp - 0.001}}}}});
  return completion_json(" a" + second, json{{"content", tokens}}.dump());
}

bool is_probe(const FakeRequest& q) { return q.body.find(kProbePrompt) != std::string::npos; }

// Fillers stream eight chunks 40 ms apart; the probe gets `probe(q)`'s JSON answer.
FakeOpenAiServer::Handler serving(std::function<std::string(const FakeRequest&)> probe) {
  return [probe](const FakeRequest& q) {
    FakeReply r;
    if (is_probe(q)) {
      r.pieces = {{probe(q), 0}};
    } else {
      r.content_type = "text/event-stream";
      r.chunked = true;
      r.pieces = completion_stream({"f", "i", "l", "l", "e", "r", "s", "!"}, 40);
    }
    return r;
  };
}

json report_json(const fs::path& dir) { return json::parse(read_file(dir / "fake-probe.json")); }

void expect_every_format_says(const fs::path& dir, bool passed) {
  const std::string verdict = passed ? "PASS" : "FAIL";
  EXPECT_EQ(report_json(dir).at("summary").at("passed").get<bool>(), passed);
  EXPECT_EQ(
      read_file(dir / "fake-probe.md")
          .rfind("# " + std::string(passed ? "\u2713" : "\u2717") + " " + verdict + ": nvdet probe",
                 0),
      0u);
  EXPECT_NE(read_file(dir / "fake-probe.html").find("<title>nvdet probe fake-probe: " + verdict),
            std::string::npos);
  const std::string junit = read_file(dir / "fake-probe.junit.xml");
  EXPECT_EQ(junit.find("failures=\"0\"") != std::string::npos &&
                junit.find("<failure") == std::string::npos,
            passed)
      << junit;
}

TEST(ProbeCli, AServerThatIgnoresTheLoadHoldsInEveryFormat) {
  FakeOpenAiServer server(serving([](const FakeRequest&) { return answer(" b", -1.0); }));
  const fs::path s = write_scenario("probe-holds", scenario_text(server.url(), "invariant"));
  const fs::path out = s.parent_path() / "r";
  const CommandResult r = run_nvdet("probe " + s.string() + " --report-dir " + out.string() +
                                    " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS fake"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held: all 7 runs (alone and under load in 2 contexts) gave the probe "
                       "alone's completion bit for bit"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("probe PASSED: 1 of 1 backends met their expectation"), std::string::npos);
  expect_every_format_says(out, true);
  const json j = report_json(out);
  EXPECT_EQ(j.at("probe").at("level"), "logprobs");
  EXPECT_EQ(j.at("cases").size(), 3u + 2u * 2u);  // the control's 3 runs, 2 contexts x 2 repeats
  // Probe requests went to /v1/completions of the server, with what the scenario asked.
  int probes = 0;
  for (const FakeRequest& q : server.requests()) {
    EXPECT_EQ(q.path, "/v1/completions");
    const json body = json::parse(q.body);
    EXPECT_EQ(body.at("model"), "m");
    if (!is_probe(q)) {
      EXPECT_EQ(body.at("stream"), true);
      continue;
    }
    ++probes;
    EXPECT_EQ(body.at("max_tokens"), 4);
    EXPECT_EQ(body.at("logprobs"), 2);
    EXPECT_EQ(body.at("temperature"), 0.0);
    EXPECT_EQ(body.at("stream"), false);
    EXPECT_EQ(q.others_in_flight == 0, probes <= 3)
        << "the control runs alone; the rest among fillers";
  }
  EXPECT_EQ(probes, 7);
  EXPECT_EQ(server.requests().size(), 7u + 2u * (2 + 3));
}

// The server's batching stand-in: the probe's second token's log probability moves by one ulp of
// a float whenever other requests are in flight, and its token flips when three are.
std::string batch_dependent(const FakeRequest& q) {
  if (q.others_in_flight >= 3) return answer(" c", -1.0);
  if (q.others_in_flight >= 1) return answer(" b", std::nextafter(-1.0f, -2.0f));
  return answer(" b", -1.0);
}

TEST(ProbeCli, TheLoadsChangesFailAnInvariantClaimAndPassAVariantCanary) {
  FakeOpenAiServer server(serving(batch_dependent));
  const fs::path s = write_scenario("probe-varies", scenario_text(server.url(), "invariant"));
  const fs::path out = s.parent_path() / "r";
  const CommandResult r = run_nvdet("probe " + s.string() + " --report-dir " + out.string() +
                                    " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("expected invariant, but 4 of 4 runs under load differ from the probe "
                       "alone, 4 with a completion never seen alone; up to 3 distinct completions "
                       "per prompt; the probe alone gave one completion per prompt (3 runs alone)"),
            std::string::npos)
      << r.out;
  // The flip is named with both tokens, their logprobs and the alone run's gap.
  EXPECT_NE(r.out.find("at token 1 in concurrency=3, arrival=last: ' b' (logprob -1) alone vs ' c' "
                       "(logprob -1); the alone run's top-1/top-2 gap there 0.001"),
            std::string::npos)
      << r.out;
  expect_every_format_says(out, false);
  const json j = report_json(out);
  int seen_alone = 0;
  for (const json& d : j.at("divergences"))
    seen_alone += d.at("served").at("seen_alone").get<bool>();
  EXPECT_EQ(j.at("divergences").size(), 4u);
  EXPECT_EQ(seen_alone, 0);
  const std::string md = read_file(out / "fake-probe.md");
  EXPECT_NE(md.find("## Server probe"), std::string::npos);
  EXPECT_NE(md.find("| #2 | 0 | 2 | concurrency=2, arrival=last | the same text (other bits) |"),
            std::string::npos)
      << md;

  const fs::path variant = write_scenario("probe-canary", scenario_text(server.url(), "variant"));
  const CommandResult v = run_nvdet("probe " + variant.string());
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("diverged as expected"), std::string::npos) << v.out;
}

TEST(ProbeCli, AControlThatIsNotDeterministicIsNeverBlamedOnTheLoad) {
  // Two answers in turn, whatever the load: what a prompt cache or a shared generator does.
  std::atomic<int> calls{0};
  FakeOpenAiServer server(serving([&calls](const FakeRequest&) {
    return ++calls % 2 ? answer(" b", -1.0) : answer(" x", -1.0);
  }));
  const fs::path s = write_scenario("probe-noisy", scenario_text(server.url(), "variant"));
  const fs::path out = s.parent_path() / "r";
  const CommandResult r =
      run_nvdet("probe " + s.string() + " --report-dir " + out.string() + " --format json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("expected the load to change the probe's completion, but no run under load "
                       "gave one unseen alone (4 runs); the probe alone is not deterministic: up "
                       "to 2 distinct completions per prompt over 3 runs alone"),
            std::string::npos)
      << r.out;
  const json report = report_json(out);
  for (const json& d : report.at("divergences"))
    EXPECT_TRUE(d.at("served").at("seen_alone").get<bool>()) << d;
}

TEST(ProbeCli, ServerFailuresAreOneSentenceWithExitThreeAndNoReports) {
  struct Case {
    std::string name;
    int status;
    std::string body, says;
  };
  const std::vector<Case> cases = {
      {"http-500", 500, "model exploded", "answered HTTP 500: 'model exploded'"},
      {"malformed", 200, "{\"choices\": [",
       "sent an answer that is not valid JSON (truncated or corrupt at byte 14, near \"ices\": "
       "[\")"},
      {"oversized", 200, std::string(5000, ' '),
       "answered more than 2048 bytes (endpoint.max_response_bytes)"},
      {"error-object", 200, "{\"error\":{\"message\":\"no such model\"}}",
       "reported an error: no such model"},
  };
  for (const Case& c : cases) {
    FakeOpenAiServer server([&c](const FakeRequest&) {
      FakeReply r;
      r.status = c.status;
      r.pieces = {{c.body, 0}};
      return r;
    });
    const fs::path s = write_scenario(
        "probe-" + c.name, scenario_text(server.url(), "report", "  max_response_bytes: 2048\n"));
    const fs::path out = s.parent_path() / "r";
    const CommandResult r = run_nvdet("probe " + s.string() + " --report-dir " + out.string());
    EXPECT_EQ(r.exit_code, 3) << c.name << r.out << r.err;
    EXPECT_EQ(r.err, "nvdet: server " + server.url() + "/v1/completions " + c.says +
                         " (the probe (request 0), in probe(concurrency=0))\n")
        << c.name;
    EXPECT_TRUE(!fs::exists(out) || fs::is_empty(out)) << c.name;
  }
  const std::string nowhere = "http://127.0.0.1:" + std::to_string(unused_port());
  const CommandResult r = run_nvdet(
      "probe " + write_scenario("probe-unreachable", scenario_text(nowhere, "report")).string());
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(
      r.err.rfind("nvdet: server " + nowhere + "/v1/completions could not be reached or read: ", 0),
      0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST(ProbeCli, KeysComeFromTheEnvironmentAndAreWrittenNowhere) {
  const std::string secret = "sk-probe-7f3a9c1e5b";
  FakeOpenAiServer server(serving([](const FakeRequest&) { return answer(" b", -1.0); }));
  const fs::path s = write_scenario(
      "probe-key",
      scenario_text(server.url(), "report",
                    "  api_key_env: NVDET_TEST_KEY\n  headers_env: {X-Team: NVDET_TEST_TEAM}\n"));
  const fs::path out = s.parent_path() / "r";
  const CommandResult missing = run_nvdet("probe " + s.string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "nvdet: environment variable NVDET_TEST_KEY (the endpoint's Authorization header) is "
            "not set\n");
  EXPECT_TRUE(server.requests().empty());
  const CommandResult r = run_nvdet_env(
      "NVDET_TEST_KEY=" + secret + " NVDET_TEST_TEAM=probe-team",
      "probe " + s.string() + " --report-dir " + out.string() + " --format md,json,junit,html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const FakeRequest& q : server.requests()) {
    EXPECT_NE(std::find(q.headers.begin(), q.headers.end(), "Authorization: Bearer " + secret),
              q.headers.end());
    EXPECT_NE(std::find(q.headers.begin(), q.headers.end(), "X-Team: probe-team"), q.headers.end());
  }
  EXPECT_EQ(r.out.find(secret), std::string::npos);
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string text = read_file(e.path());
    EXPECT_EQ(text.find(secret), std::string::npos) << e.path();
    EXPECT_EQ(text.find("probe-team"), std::string::npos) << e.path();
  }
  EXPECT_NE(read_file(out / "fake-probe.json").find("\"Authorization\""), std::string::npos);
}

TEST(ProbeCli, ShardsMergeIntoTheWholeRunsVerdictAndReportsRenderAgain) {
  FakeOpenAiServer server(serving(batch_dependent));
  const fs::path s = write_scenario("probe-shards", scenario_text(server.url(), "variant"));
  const fs::path dir = s.parent_path();
  for (const char* shard : {"1/2", "2/2"}) {
    const CommandResult r =
        run_nvdet("probe " + s.string() + " --shard " + shard + " --report-dir " +
                  (dir / "shards").string() + " --format json -q");
    EXPECT_EQ(r.exit_code, 0) << shard << r.out << r.err;  // a variant canary waits for the merge
  }
  const CommandResult merged =
      run_nvdet("report " + (dir / "shards" / "fake-probe.shard-1-of-2.json").string() + " " +
                (dir / "shards" / "fake-probe.shard-2-of-2.json").string() + " --report-dir " +
                (dir / "merged").string() + " --format json,md");
  ASSERT_EQ(merged.exit_code, 0) << merged.out << merged.err;
  const json m = json::parse(read_file(dir / "merged" / "fake-probe.json"));
  EXPECT_EQ(m.at("cases").size(), 3u + 4u);
  EXPECT_TRUE(
      m.at("backends")[0].at("verdict").get<std::string>().rfind("diverged as expected", 0) == 0);
  // A JSON report renders again, byte for byte, without a request.
  const size_t requests = server.requests().size();
  const CommandResult again =
      run_nvdet("report " + (dir / "merged" / "fake-probe.json").string() + " --report-dir " +
                (dir / "again").string() + " --format md,json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(dir / "again" / "fake-probe.md"),
            read_file(dir / "merged" / "fake-probe.md"));
  EXPECT_EQ(read_file(dir / "again" / "fake-probe.json"),
            read_file(dir / "merged" / "fake-probe.json"));
  EXPECT_EQ(server.requests().size(), requests);
  // A probe report is judged again from its runs, as an audit's is: a written failing verdict
  // renders as the pass its runs show, and a divergence taken out is refused.
  json edited = m;
  edited["summary"]["passed"] = false;
  edited["backends"][0]["passed"] = false;
  edited["backends"][0]["verdict"] = "FAILED";
  write_file(dir / "edited" / "fake-probe.json", edited.dump(1));
  const CommandResult judged =
      run_nvdet("report " + (dir / "edited" / "fake-probe.json").string() + " --report-dir " +
                (dir / "judged").string() + " --format json");
  EXPECT_EQ(judged.exit_code, 0) << judged.out << judged.err;
  ASSERT_FALSE(m.at("divergences").empty());
  json hidden = m;
  hidden["divergences"].erase(hidden["divergences"].begin());
  write_file(dir / "hidden" / "fake-probe.json", hidden.dump(1));
  const CommandResult refused =
      run_nvdet("report " + (dir / "hidden" / "fake-probe.json").string() + " --report-dir " +
                (dir / "refused").string() + " --format json");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.err.find("its divergences do not match its hashes"), std::string::npos)
      << refused.err;
}

// The chat API with the probe itself streamed: every answer a stream of deltas that ends when the
// connection closes, without [DONE], as some servers send it.
TEST(ProbeCli, ChatStreamsWithoutDoneAreReadWhole) {
  FakeOpenAiServer server([](const FakeRequest& q) {
    FakeReply r;
    r.content_type = "text/event-stream";
    r.chunked = true;
    const bool probe = is_probe(q);
    for (const char* piece : {"one", " two", " three"}) {
      const json delta = {{"choices", {{{"index", 0}, {"delta", {{"content", piece}}}}}}};
      r.pieces.emplace_back("data: " + delta.dump() + "\r\n\r\n", probe ? 0 : 30);
    }
    return r;
  });
  const fs::path s = write_scenario(
      "probe-chat", scenario_text(server.url(), "invariant", "  api: chat\n  stream: true\n"));
  const fs::path out = s.parent_path() / "r";
  const CommandResult r =
      run_nvdet("probe " + s.string() + " --report-dir " + out.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = report_json(out);
  EXPECT_EQ(j.at("probe").at("level"), "text");
  EXPECT_EQ(j.at("probe").at("url"), server.url() + "/v1/chat/completions");
  EXPECT_EQ(j.at("cases")[0].at("requests")[0].at("served").at("text"), "one two three");
  for (const FakeRequest& q : server.requests()) {
    EXPECT_EQ(q.path, "/v1/chat/completions");
    const json body = json::parse(q.body);
    EXPECT_EQ(body.at("stream"), true);
    if (is_probe(q)) EXPECT_EQ(body.at("top_logprobs"), 2);
  }
}

TEST(ProbeCli, UsageMistakesAreExitTwoBeforeAnyRequest) {
  FakeOpenAiServer server(serving([](const FakeRequest&) { return answer(" b", -1.0); }));
  const fs::path s = write_scenario(
      "probe-usage", scenario_text(server.url(), "report", "  max_response_bytes: 65536\n"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--url ftp://127.0.0.1",
       "nvdet: --url must start with http:// or https://, got 'ftp://127.0.0.1'\n"},
      {"--url http://user:pw@127.0.0.1",
       "nvdet: --url must not hold a user name or password (give keys through 'api_key_env'), got "
       "'http://user:pw@127.0.0.1'\n"},
      {"--format md",
       "nvdet: --format needs --report-dir (the folder the reports are written to)\n"},
      {"-k nomatch", "nvdet: --filter 'nomatch' matches no context"},
      {"--axis concurrency=0,2", "concurrency 0 is the probe alone, which the control runs"},
      {"--fliter x", "nvdet probe: unknown option '--fliter' (did you mean '--filter'?)"},
  };
  for (const auto& [args, says] : cases) {
    const CommandResult r = run_nvdet("probe " + s.string() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
  }
  EXPECT_TRUE(server.requests().empty());
  // More fillers than this process may open connections for: exit 3 before any request.
  const CommandResult files =
      run_nvdet_env("ulimit -n 256 &&", "probe " + s.string() + " --axis concurrency=1000");
  EXPECT_EQ(files.exit_code, 3) << files.err;
  EXPECT_EQ(files.err,
            "nvdet: concurrency 1000 needs about 1064 open files at once, more than this process "
            "may open (256, ulimit -n)\n");
  const CommandResult audit = run_nvdet("audit " + s.string());
  EXPECT_EQ(audit.exit_code, 2);
  EXPECT_NE(audit.err.find("probes a running server; run it with nvdet probe"), std::string::npos);
}

}  // namespace
}  // namespace nvdet::testing
