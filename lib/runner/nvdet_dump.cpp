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
  // Completions (I32) and logprobs (F64) besides the outputs; the tensors point into `owned`,
  // which never grows past what is reserved here.
  std::vector<AnyTensor> owned;
  owned.reserve(outputs.size() * 5);
  std::vector<std::pair<std::string, const AnyTensor*>> tensors;
  std::vector<AnyTensor> outs;
  outs.reserve(outputs.size());
  const auto add = [&](const std::string& name, ElemType type, const void* data, size_t count,
                       size_t size) {
    if (count == 0) return;
    AnyTensor t;
    t.type = type;
    t.shape = {static_cast<int64_t>(count)};
    t.bytes.resize(count * size);
    std::memcpy(t.bytes.data(), data, t.bytes.size());
    owned.push_back(std::move(t));
    tensors.emplace_back(name, &owned.back());
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    const RequestOutput& o = outputs[i];
    const std::string name = dump_tensor_name(o.request);
    outs.push_back(to_any(o.output));
    tensors.emplace_back(name, &outs.back());
    add(name + ".completion", ElemType::kI32, o.completion.data(), o.completion.size(),
        sizeof(int32_t));
    // Sampler against trainer: each generated token's logprob on both sides.
    if (i >= c.requests.size() || !c.requests[i].parity) continue;
    const ParityRecord& p = *c.requests[i].parity;
    for (const auto& [suffix, v] :
         {std::pair{".sampler_logprobs", &p.sampler_logprobs},
          std::pair{".trainer_logprobs", &p.trainer_logprobs},
          std::pair{".sampling.sampler_logprobs", &p.sampling_sampler_logprobs},
          std::pair{".sampling.trainer_logprobs", &p.sampling_trainer_logprobs}}) {
      add(name + suffix, ElemType::kF64, v->data(), v->size(), sizeof(double));
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
