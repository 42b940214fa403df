#include "lib/backend/backend.h"

#include "lib/core/error.h"

namespace nvdet {

const std::vector<BackendRegistration>& backend_registry() {
  static const std::vector<BackendRegistration> all = [] {
    std::vector<BackendRegistration> v = cpu_backend_registrations();
    for (auto& r : cuda_backend_registrations()) v.push_back(std::move(r));
    return v;
  }();
  return all;
}

const BackendRegistration* find_backend(std::string_view name) {
  for (const auto& r : backend_registry()) {
    if (r.info.name == name) return &r;
  }
  return nullptr;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  const BackendRegistration* r = find_backend(name);
  if (!r) {
    std::string known;
    for (const auto& b : backend_registry()) known += (known.empty() ? "" : ", ") + b.info.name;
    throw_input_error("unknown backend '" + std::string(name) + "' (known: " + known + ")");
  }
  return r->make();
}

}  // namespace nvdet
