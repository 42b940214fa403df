// Loading cuDNN at run time; see cudnn_library.h.
#include "lib/cudnn/cudnn_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "lib/core/error.h"

// cudnn-frontend, built with NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING, resolves every cuDNN call
// through this handle; the program that includes it defines it.
namespace cudnn_frontend {
void* cudnn_dlhandle = nullptr;
}

namespace nvdet::cudnn {
namespace {

constexpr const char* kSoname = "libcudnn.so.9";
constexpr size_t kMinVersion = 90500;  // paged K/V caches in SDPA

// cuDNN 9 is a small dispatcher (libcudnn.so.9) that opens its sub-libraries by soname. When the
// user names a folder, those are opened from it first, so that the dispatcher's later lookups
// find them already loaded even when the folder is not on the loader's path. A sub-library that
// fails here is left to cuDNN, which reports what it needs when it needs it.
constexpr const char* kSubLibraries[] = {
    "libcudnn_graph.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_heuristic.so.9",
};

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// Opens cuDNN from `location`; on failure returns null and sets `why`.
void* open_cudnn(const std::string& location, std::string& why) {
  std::string target = kSoname;
  std::filesystem::path folder;
  if (!location.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(location, ec)) {
      folder = location;
      target = (folder / kSoname).string();
    } else {
      target = location;
      folder = std::filesystem::path(location).parent_path();
    }
    for (const char* sub : kSubLibraries) {
      const std::filesystem::path p = folder / sub;
      if (std::filesystem::exists(p, ec)) dlopen(p.c_str(), RTLD_LAZY | RTLD_GLOBAL);
    }
  }
  dlerror();
  void* handle = dlopen(target.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) why = dl_error();
  return handle;
}

size_t version_of(void* handle) {
  using GetVersion = size_t (*)();
  auto fn = reinterpret_cast<GetVersion>(dlsym(handle, "cudnnGetVersion"));
  return fn ? fn() : 0;
}

std::string location_from_env() {
  const char* env = std::getenv("NVDET_CUDNN_LIBRARY_PATH");
  return env ? std::string(env) : std::string();
}

}  // namespace

std::string cudnn_version_text(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
}

void load_cudnn_library() {
  static std::mutex mutex;
  static std::string failure;  // the sentence of the first failed attempt, repeated afterwards
  std::lock_guard<std::mutex> lock(mutex);
  if (cudnn_frontend::cudnn_dlhandle) return;
  if (!failure.empty()) throw_runtime_error(failure);
  const std::string location = location_from_env();
  std::string why;
  void* handle = open_cudnn(location, why);
  if (!handle) {
    failure = location.empty()
                  ? "backend 'cudnn' needs cuDNN 9 (" + std::string(kSoname) +
                        "), which the loader did not find (" + why +
                        "); set NVDET_CUDNN_LIBRARY_PATH to the folder that holds it, e.g. the "
                        "lib folder of the nvidia-cudnn-cu13 Python package"
                  : "backend 'cudnn' could not load cuDNN 9 from NVDET_CUDNN_LIBRARY_PATH (" +
                        location + "): " + why;
    throw_runtime_error(failure);
  }
  const size_t version = version_of(handle);
  if (version < kMinVersion) {
    failure = "backend 'cudnn' needs cuDNN 9.5 or later (paged attention); the one loaded is " +
              (version ? cudnn_version_text(version) : std::string("of unknown version")) +
              "; point NVDET_CUDNN_LIBRARY_PATH at a newer one";
    throw_runtime_error(failure);
  }
  cudnn_frontend::cudnn_dlhandle = handle;
}

std::string probe_cudnn_library(const std::string& location) {
  std::string why;
  void* handle = open_cudnn(location, why);
  if (!handle) return why;
  const size_t version = version_of(handle);
  dlclose(handle);
  return version >= kMinVersion ? ""
                                : "cuDNN " + cudnn_version_text(version) + " is older than 9.5";
}

size_t cudnn_runtime_version() {
  return cudnn_frontend::cudnn_dlhandle ? version_of(cudnn_frontend::cudnn_dlhandle) : 0;
}

}  // namespace nvdet::cudnn
