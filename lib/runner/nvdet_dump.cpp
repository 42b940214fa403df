#include "lib/runner/nvdet_dump.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "lib/core/error.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

std::string safe_name(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '=' || c == ',' ||
                      c == '.' || c == '-' || c == '_';
    out += keep ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace

std::string dump_tensor_name(int64_t request) { return "request-" + std::to_string(request); }

std::filesystem::path dump_file_path(const std::filesystem::path& dir, const std::string& scenario,
                                     const std::string& backend, int context_index,
                                     const std::string& context_id, int repeat) {
  char index[16];
  std::snprintf(index, sizeof index, "c%03d-", context_index);
  return dir / safe_name(scenario) / safe_name(backend) /
         (index + safe_name(context_id) + ".r" + std::to_string(repeat) + ".safetensors");
}

void write_case_dump(const std::filesystem::path& dir, const std::string& scenario,
                     const Context& context, const CaseRecord& c,
                     const std::vector<RequestOutput>& outputs) {
  const std::filesystem::path path =
      dump_file_path(dir, scenario, c.backend, c.context_index, context.id, c.repeat);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    throw_input_error("cannot create the dump folder '" + path.parent_path().string() +
                      "': " + ec.message());
  }
  std::vector<AnyTensor> owned;  // completions, as I32 tensors
  owned.reserve(outputs.size());
  std::vector<std::pair<std::string, const AnyTensor*>> tensors;
  std::vector<AnyTensor> outs;
  outs.reserve(outputs.size());
  for (const RequestOutput& o : outputs) {
    outs.push_back(to_any(o.output));
    tensors.emplace_back(dump_tensor_name(o.request), &outs.back());
    if (!o.completion.empty()) {
      AnyTensor t;
      t.type = ElemType::kI32;
      t.shape = {static_cast<int64_t>(o.completion.size())};
      t.bytes.resize(o.completion.size() * sizeof(int32_t));
      std::memcpy(t.bytes.data(), o.completion.data(), t.bytes.size());
      owned.push_back(std::move(t));
      tensors.emplace_back(dump_tensor_name(o.request) + ".completion", &owned.back());
    }
  }
  write_safetensors_any(path, tensors,
                        {{"nvdet_dump", "1"},
                         {"scenario", scenario},
                         {"backend", c.backend},
                         {"context", context.id},
                         {"context_index", std::to_string(c.context_index)},
                         {"repeat", std::to_string(c.repeat)}});
}

}  // namespace nvdet
