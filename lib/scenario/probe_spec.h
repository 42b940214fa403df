#pragma once
// op: probe -- a running OpenAI-compatible server audited through its HTTP API (nvdet probe,
// lib/probe/). The scenario names the endpoint, the probed prompts and the load put beside them;
// the sweep axes concurrency, arrival, filler_words and filler_max_tokens (lib/scenario/axis.h)
// make the contexts. Loaded by lib/loader/scenario_loader.cpp, which checks every field.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/error.h"

namespace nvdet {

// Which OpenAI API the requests use: /v1/completions (a raw prompt) or /v1/chat/completions
// (the prompt as one user message).
enum class ServerApi { kCompletions, kChat };
std::string_view server_api_name(ServerApi api);  // "completions", "chat"

// Where the probe's requests are sent, and how: nvdet sends nothing anywhere but `url`'s
// /v1/completions or /v1/chat/completions.
struct EndpointSpec {
  std::string name = "server";  // the server's name in the reports (their 'backend')
  std::string url;              // base URL: http://host:port[/prefix], no user name or password
  std::string model;            // sent as "model"
  ServerApi api = ServerApi::kCompletions;
  // Headers whose values come from the environment (API keys): header name -> variable name.
  // `api_key_env` is Authorization: Bearer <value>. The values are never written anywhere.
  std::string api_key_env;
  std::vector<std::pair<std::string, std::string>> headers_env;
  // Server hints: extra fields merged into every request body, as JSON text of one object
  // (`{"cache_prompt":false}`); they may not replace a field nvdet sets.
  std::string body_json = "{}";
  bool stream = false;       // the probe's own requests as SSE streams (fillers always stream)
  double timeout_s = 300.0;  // each request's total deadline
  double inactivity_timeout_s = 60.0;  // each request: seconds without a byte from the server
  int32_t retries = 0;  // re-sends of a request refused before any answer, or answered 429/503
  int64_t max_response_bytes = int64_t{8} << 20;  // one response's body, at most
  SourceLocation where;                           // the `endpoint:` key
};

// The probed prompts and how they are sampled.
struct ProbePrompts {
  std::vector<std::string> prompts;  // text; or read from prompts_file, one per line
  std::string prompts_file;
  int32_t max_tokens = 32;
  double temperature = 0.0;  // 0 = greedy; above 0 needs `seed`
  bool seeded = false;
  uint64_t seed = 0;  // sent as "seed" with temperature > 0
  // Log probabilities asked for: 0 = none; N = the chosen token's and its top N alternatives'
  // (completions: "logprobs": N; chat: "logprobs": true, "top_logprobs": N).
  int32_t logprobs = 0;
};

// The load beside the probe: seeded filler prompts in flight while it runs. Each is the default
// of its sweep axis.
struct FillerSpec {
  int32_t concurrency = 8;        // fillers in flight while the probe runs
  int32_t words = 32;             // words of each filler prompt
  int32_t max_tokens = 32;        // tokens each filler asks for
  std::string arrival = "first";  // first, mid or last: when the probe is sent among the fillers
};

// Why `url` is not a base URL nvdet may send requests under ("must start with http:// or
// https://"), nullopt when it is one: http or https, a host, an optional port and path prefix;
// no user name or password (they would be written into every report), no query or fragment, no
// spaces or control bytes, at most 2048 characters. One rule for the scenario's and --url's.
std::optional<std::string> endpoint_url_problem(const std::string& url);
// The URL as requests are built from it: without trailing '/'.
std::string normalized_endpoint_url(std::string url);

struct ProbeSpec {
  EndpointSpec endpoint;
  ProbePrompts probe;
  FillerSpec fillers;
  int32_t control = 3;  // runs of each probed prompt alone, before any load
};

}  // namespace nvdet
