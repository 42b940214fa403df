#pragma once
// cuDNN is loaded at run time, not linked: nvdet starts, lists its backends and runs every other
// backend on machines without cuDNN, and the `cudnn` backend finds cuDNN where it actually lives
// (often a Python package's lib folder, e.g. PyTorch's nvidia-cudnn-cu13).
//
// Where: NVDET_CUDNN_LIBRARY_PATH (the folder holding libcudnn.so.9, or the file itself) when
// set; else the loader's usual search (LD_LIBRARY_PATH, the system's library folders).
#include <cstddef>
#include <string>

namespace nvdet::cudnn {

// Loads cuDNN 9 once per process and hands it to cudnn-frontend. Throws Error(kRuntime) (exit 3)
// with one sentence naming NVDET_CUDNN_LIBRARY_PATH when it cannot be loaded, or when it is older
// than 9.5 (the first cuDNN with paged attention).
void load_cudnn_library();

// Tries to open cuDNN from `location` (a folder or a file; empty: the loader's search) without
// keeping or installing it. Returns "" on success, else why not. For tests.
std::string probe_cudnn_library(const std::string& location);

// cudnnGetVersion() of the loaded library, e.g. 91900; and as text, "9.19.0".
size_t cudnn_runtime_version();
std::string cudnn_version_text(size_t version);

}  // namespace nvdet::cudnn
