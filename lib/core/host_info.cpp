#include "lib/core/host_info.h"

#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>

namespace nvdet {

std::string host_cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(colon + 2);
      break;
    }
  }
  return model + " (" + std::to_string(std::thread::hardware_concurrency()) + " cores)";
}

std::string parse_nvidia_driver_version(std::string_view text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..." or "... Open Kernel
  // Module for x86_64  575.57.08  Release ...": the version is the first word after "Module"
  // made of digits and dots with at least one dot.
  const size_t at = text.find("Module");
  if (at == std::string_view::npos) return "";
  const size_t line_end = text.find('\n', at);
  std::istringstream words(std::string(text.substr(
      at + 6, line_end == std::string_view::npos ? std::string_view::npos : line_end - at - 6)));
  std::string word;
  while (words >> word) {
    bool digits_and_dots = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0]));
    for (char c : word) digits_and_dots &= std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    if (digits_and_dots && word.find('.') != std::string::npos) return word;
  }
  return "";
}

std::string nvidia_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_nvidia_driver_version(ss.str());
}

}  // namespace nvdet
