// op probe's scenario keys: what the loader takes and what it refuses, each with one sentence at
// the key's place (exit 2), before any request could be sent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lib/core/error.h"
#include "lib/loader/scenario_loader.h"
#include "lib/probe/served_request.h"
#include "lib/scenario/context.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

const std::string kBase =
    "name: p\nop: probe\nseed: 1\n"
    "endpoint:\n  expect: invariant\n  url: http://127.0.0.1:8080/\n  model: m\n"
    "probe:\n  prompts: [\"hello there\", \"second\"]\n";

std::string error_of(const std::string& text) {
  try {
    (void)parse_scenario(text, "p.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(ProbeScenario, TheEndpointIsTheOneBackendAndItsDefaultsAreTheFillers) {
  const Scenario s = parse_scenario(
      kBase + "fillers: {concurrency: 5, words: 7, max_tokens: 9, arrival: last}\ncontrol: 4\n" +
          "requests: [1]\nsweep:\n  arrival: [first, mid]\n",
      "p.yaml");
  EXPECT_EQ(s.op, OpKind::kProbe);
  ASSERT_EQ(s.backends.size(), 1u);
  EXPECT_EQ(s.backends[0].name, "server");
  EXPECT_EQ(s.backends[0].expect, Expectation::kInvariant);
  EXPECT_EQ(s.backends[0].where.line, 4);
  EXPECT_EQ(s.probe.endpoint.url, "http://127.0.0.1:8080");  // the trailing '/' dropped
  EXPECT_EQ(endpoint_request_url(s.probe.endpoint), "http://127.0.0.1:8080/v1/completions");
  EXPECT_EQ(s.probe.control, 4);
  const std::vector<Context> contexts = expand_contexts(s);
  ASSERT_EQ(contexts.size(), 2u);
  EXPECT_EQ(contexts[1].integer(Axis::kConcurrency), 5);
  EXPECT_EQ(contexts[1].integer(Axis::kFillerWords), 7);
  EXPECT_EQ(contexts[1].integer(Axis::kFillerMaxTokens), 9);
  EXPECT_EQ(contexts[1].word(Axis::kArrival), "mid");
}

TEST(ProbeScenario, RefusalsNameTheKeyAndItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kBase + "dtype: bf16\n", "p.yaml:10:1: key 'dtype' does not apply to op 'probe'"},
      {kBase + "backends: {cpu-invariant: invariant}\n",
       "key 'backends' does not apply to op 'probe'"},
      {kBase + "shape: {n: 4, k: 4}\n", "key 'shape' does not apply to op 'probe'"},
      {"name: p\nop: gemm\ndtype: bf16\nshape: {n: 4, k: 4}\nseed: 1\nbackends: {cpu-invariant: "
       "invariant}\n"
       "control: 3\n",
       "p.yaml:7:1: key 'control' does not apply to op 'gemm' (it is for probe)"},
      {"name: p\nop: probe\nseed: 1\nprobe: {prompts: [a]}\n", "missing required key 'endpoint'"},
      {kBase + "  temperature: 0.7\n", "'probe.temperature' above 0 samples: give 'probe.seed'"},
      {kBase + "  max_tokenz: 4\n",
       "unknown key 'max_tokenz' in 'probe' (did you mean 'max_tokens'?)"},
      {kBase + "fillers: {arival: last}\n",
       "unknown key 'arival' in 'fillers' (did you mean 'arrival'?)"},
      {kBase + "fillers: {arrival: later}\n",
       "'arrival' values must be 'first', 'mid', 'last', got 'later'"},
      {kBase + "sweep:\n  concurrency: [0, 4]\n",
       "p.yaml:11:17: concurrency 0 is the probe alone, which the control runs"},
      {kBase + "sweep:\n  batch: [1, 2]\n", "axis 'batch' does not apply to op 'probe'"},
      {kBase + "requests: [2]\n", "request 2 is outside the probe's 2 prompts (ids 0..1)"},
  };
  for (const auto& [text, says] : cases) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(says), std::string::npos) << text << "\n -> " << e;
  }
}

std::string endpoint_error(const std::string& endpoint_lines) {
  return error_of("name: p\nop: probe\nseed: 1\nendpoint:\n  expect: report\n  model: m\n" +
                  endpoint_lines + "probe: {prompts: [a]}\n");
}

TEST(ProbeScenario, TheEndpointIsCheckedBeforeAnythingIsSent) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"  url: ftp://h\n", "p.yaml:7:8: 'url' must start with http:// or https://, got 'ftp://h'"},
      {"  url: http://me:secret@h\n", "'url' must not hold a user name or password"},
      {"  url: http://h/v1?x=1\n", "'url' must not hold a query or fragment"},
      {"  url: http://:80\n", "'url' must name a host"},
      {"  model: m\n", "duplicate key 'model' in 'endpoint'"},
      {"  url: http://h\n  api: grpc\n", "unknown api 'grpc'"},
      {"  url: http://h\n  body: {prompt: x}\n", "'body' may not set 'prompt': nvdet sets it"},
      {"  url: http://h\n  body: [1]\n", "'body' must be a map of request fields"},
      {"  url: http://h\n  headers_env: {Content-Type: X}\n",
       "'headers_env' may not set 'Content-Type'"},
      {"  url: http://h\n  headers_env: {X-Key: 9bad}\n",
       "'headers_env' values must name environment variables"},
      {"  url: http://h\n  api_key_env: A\n  headers_env: {authorization: B}\n",
       "'api_key_env' sets the Authorization header; 'headers_env' sets it too"},
      {"  url: http://h\n  timeout: 0\n", "'timeout' must be greater than 0"},
      {"  url: http://h\n  retries: 11\n", "'retries' is 11, more than the limit 10"},
      {"  url: http://h\n  max_response_bytes: 10\n", "'max_response_bytes' must be at least 1024"},
      {"  url: http://h\n  stream: maybe\n", "'stream' must be true or false"},
      {"", "'endpoint' is missing 'url'"},
  };
  for (const auto& [lines, says] : cases) {
    const std::string e = endpoint_error(lines);
    EXPECT_NE(e.find(says), std::string::npos) << lines << "\n -> " << e;
  }
}

TEST(ProbeScenario, HintsAreSentTypedAndTheFieldsNvdetSetsComeLast) {
  const Scenario s = parse_scenario(
      "name: p\nop: probe\nseed: 1\nendpoint:\n  expect: report\n  url: http://h\n  model: m\n"
      "  api: chat\n  body: {cache_prompt: false, top_k: 1, min_p: 0.5, tag: \"7\", extra: {a: [1, "
      "x]}}\n"
      "probe: {prompts: [hi], temperature: 0.5, seed: 3, logprobs: 2, max_tokens: 5}\n",
      "p.yaml");
  RequestSampling sampling;
  sampling.max_tokens = 5;
  sampling.temperature = 0.5;
  sampling.seed = 3;
  sampling.logprobs = 2;
  const nlohmann::json body = nlohmann::json::parse(request_body(s.probe.endpoint, "hi", sampling));
  EXPECT_EQ(body.at("cache_prompt"), false);
  EXPECT_EQ(body.at("top_k"), 1);
  EXPECT_EQ(body.at("min_p"), 0.5);
  EXPECT_EQ(body.at("tag"), "7");  // quoted: a string, whatever it looks like
  EXPECT_EQ(body.at("extra"), nlohmann::json::parse(R"({"a": [1, "x"]})"));
  EXPECT_EQ(body.at("messages"), nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])"));
  EXPECT_EQ(body.at("logprobs"), true);
  EXPECT_EQ(body.at("top_logprobs"), 2);
  EXPECT_EQ(body.at("seed"), 3);
  EXPECT_EQ(body.at("stream"), false);
  EXPECT_EQ(endpoint_request_url(s.probe.endpoint), "http://h/v1/chat/completions");
}

TEST(ProbeScenario, ATextPromptsFileIsReadLineByLine) {
  const auto dir = testing::make_temp_dir("probe-prompts");
  testing::write_file(dir / "prompts.txt", "# a comment\nfirst prompt\n\nsecond one\r\n");
  testing::write_file(dir / "p.yaml",
                      "name: p\nop: probe\nseed: 1\nendpoint: {expect: report, url: http://h, "
                      "model: m}\nprobe: {prompts_file: prompts.txt}\nrequests: 2\n");
  const Scenario s = load_scenario((dir / "p.yaml").string());
  EXPECT_EQ(s.probe.probe.prompts, (std::vector<std::string>{"first prompt", "second one"}));
  testing::write_file(dir / "prompts.txt", "ok\nbad\x1b[2J\n");
  try {
    (void)load_scenario((dir / "p.yaml").string());
    ADD_FAILURE() << "a control byte in a prompt was taken";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("prompts.txt:2:4: a prompt holds the control byte '\\x1b'"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nvdet
