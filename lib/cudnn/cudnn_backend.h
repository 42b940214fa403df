#pragma once
// The `cudnn` backend: attention_decode and attention_prefill through cuDNN's SDPA forward
// (graph API, via the header-only cudnn-frontend), over nvdet's paged KV cache. cuDNN is loaded
// at backend creation (lib/cudnn/cudnn_library.h), so nvdet runs where cuDNN is absent.
#include <memory>
#include <string>

#include "lib/backend/backend.h"

namespace nvdet::cudnn {

// Creates the backend: loads cuDNN and selects the GPU. Throws Error(kRuntime) with one sentence
// when cuDNN cannot be loaded, is too old, or this build has no cudnn backend.
std::unique_ptr<Backend> make_cudnn_backend(const BackendInfo& info);

// Empty when this build has the backend; else the sentence that says why not.
std::string cudnn_unavailable_reason();

}  // namespace nvdet::cudnn
