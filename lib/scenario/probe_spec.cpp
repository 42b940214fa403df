#include "lib/scenario/probe_spec.h"

namespace nvdet {

std::string_view server_api_name(ServerApi api) {
  return api == ServerApi::kChat ? "chat" : "completions";
}

std::optional<std::string> endpoint_url_problem(const std::string& url) {
  if (url.size() > 2048) return "is longer than 2048 characters";
  size_t scheme = 0;
  if (url.rfind("http://", 0) == 0) scheme = 7;
  else if (url.rfind("https://", 0) == 0) scheme = 8;
  else return "must start with http:// or https://";
  for (const char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return "must not hold spaces or control bytes";
  if (url.find_first_of("?#") != std::string::npos) return "must not hold a query or fragment";
  const std::string authority = url.substr(scheme, url.find('/', scheme) - scheme);
  if (authority.find('@') != std::string::npos)
    return "must not hold a user name or password (give keys through 'api_key_env')";
  if (authority.empty() || authority[0] == ':') return "must name a host";
  return std::nullopt;
}

std::string normalized_endpoint_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace nvdet
