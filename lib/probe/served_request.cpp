#include "lib/probe/served_request.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "lib/core/error.h"

namespace nvdet {
namespace {

std::string environment_value(const std::string& variable, const std::string& header) {
  const char* v = std::getenv(variable.c_str());
  if (!v || !*v)
    throw_input_error("environment variable " + variable + " (the endpoint's " + header +
                      " header) is not set");
  const std::string value = v;
  if (value.find_first_of("\r\n") != std::string::npos)
    throw_input_error("environment variable " + variable + " (the endpoint's " + header +
                      " header) holds a line break");
  return value;
}

}  // namespace

std::string endpoint_request_url(const EndpointSpec& e) {
  return e.url + (e.api == ServerApi::kChat ? "/v1/chat/completions" : "/v1/completions");
}

std::vector<std::string> endpoint_headers(const EndpointSpec& e) {
  std::vector<std::string> out;
  if (!e.api_key_env.empty())
    out.push_back("Authorization: Bearer " + environment_value(e.api_key_env, "Authorization"));
  for (const auto& [header, variable] : e.headers_env)
    out.push_back(header + ": " + environment_value(variable, header));
  return out;
}

std::string request_body(const EndpointSpec& e, const std::string& prompt,
                         const RequestSampling& sampling) {
  nlohmann::json body = nlohmann::json::parse(e.body_json);  // written by the loader: an object
  body["model"] = e.model;
  if (e.api == ServerApi::kChat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", prompt}}});
  } else {
    body["prompt"] = prompt;
  }
  body["max_tokens"] = sampling.max_tokens;
  body["temperature"] = sampling.temperature;
  if (sampling.seed) body["seed"] = *sampling.seed;
  if (sampling.logprobs > 0) {
    if (e.api == ServerApi::kChat) {
      body["logprobs"] = true;
      body["top_logprobs"] = sampling.logprobs;
    } else {
      body["logprobs"] = sampling.logprobs;
    }
  }
  body["stream"] = sampling.stream;
  // Invalid UTF-8 in a prompt is sent replaced, never thrown.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace nvdet
