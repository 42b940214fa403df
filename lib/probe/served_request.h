#pragma once
// The requests nvdet probe sends: the endpoint's URL for its API, the headers read from the
// environment, and each body (the server hints first, then the fields nvdet sets).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/scenario/probe_spec.h"

namespace nvdet {

// <url>/v1/completions or <url>/v1/chat/completions.
std::string endpoint_request_url(const EndpointSpec& e);

// "Name: value" for api_key_env (Authorization: Bearer ...) and each of headers_env, read now.
// Throws Error(kBadInput) naming a variable that is unset or empty, or whose value holds a line
// break; never quotes a value.
std::vector<std::string> endpoint_headers(const EndpointSpec& e);

struct RequestSampling {
  int32_t max_tokens = 16;
  double temperature = 0.0;
  std::optional<uint64_t> seed;
  int32_t logprobs = 0;  // alternatives per token asked for; 0: none
  bool stream = false;
};

// The JSON body for `prompt`: the endpoint's hints with model, the prompt (or one user message),
// max_tokens, temperature, seed, logprobs and stream set over them.
std::string request_body(const EndpointSpec& e, const std::string& prompt,
                         const RequestSampling& sampling);

}  // namespace nvdet
