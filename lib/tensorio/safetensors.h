#pragma once
// safetensors files (the format of Hugging Face checkpoints): an 8-byte little-endian header
// length N, N bytes of JSON ({name: {dtype, shape, data_offsets: [begin, end]}, optional
// "__metadata__": {string: string}}), then the data buffer. Offsets are relative to the start of
// the buffer; tensors are C order, little-endian.
//
// Reading keeps the file open and reads (pread) only the tensors asked for, so a multi-GB
// checkpoint costs its header plus the tensors read. Everything in the header is validated when
// the file is opened, before any tensor is read: header length within the file, JSON well formed,
// known dtypes, shapes non-negative, offsets inside the buffer, end - begin == numel * dtype size,
// no two tensors overlapping. Any violation throws Error(kBadInput) with one sentence that starts
// with the file's path. Gaps between tensors and bytes after the last one are accepted (the
// reference implementation rejects them; nvdet only needs the tensors it reads to be sound).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/tensorio/any_tensor.h"

namespace nvdet {

class SafetensorsFile {
 public:
  // Throws kBadInput: "model.safetensors: header length 123456789 exceeds the file size
  // (1024 bytes)", "...: tensor 'w' has data_offsets [0, 64] but shape [4, 4] of F32 needs 64...".
  static SafetensorsFile open(const std::filesystem::path& path);

  std::vector<std::string> names() const;  // in data-offset order (the order they were written)
  bool contains(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  std::string dtype(const std::string& name) const;  // as in the file: "BF16", "F32", "I64", ...
  // BF16/F16/F32 -> HostTensor; other dtypes and unknown names -> kBadInput.
  HostTensor read(const std::string& name) const;
  // Any dtype the format defines (BF16, F16, F32, F64, I8..I64, U8..U64, BOOL).
  AnyTensor read_any(const std::string& name) const;
  // The stored bytes of a tensor of any dtype the header names, the FP8 types (F8_E4M3,
  // F8_E5M2: one byte an element) included; the caller interprets them.
  std::vector<std::byte> read_raw(const std::string& name) const;

  const std::map<std::string, std::string>& metadata() const;  // "__metadata__"
  const std::filesystem::path& path() const;

  struct Entry {
    std::string name;
    std::optional<ElemType> type;  // nullopt: a dtype nvdet cannot read (F8_E4M3, ...)
    std::string dtype;             // the file's spelling
    size_t elem_bytes = 0;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // within the data buffer
  };

 private:
  struct OpenFile;
  const Entry& entry(const std::string& name) const;

  std::shared_ptr<const OpenFile>
      file_;  // shared: copies of a SafetensorsFile share one descriptor
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::filesystem::path path_;
  uint64_t data_start_ = 0;  // 8 + header length
};

// "BF16" -> kBF16 and back; nullopt for dtypes nvdet does not read (F8_E4M3, ...).
std::optional<ElemType> safetensors_elem_type(const std::string& dtype);
std::string safetensors_dtype_name(ElemType t);

// Writes the tensors in the given order (names must be unique and not "__metadata__"), with the
// optional metadata, atomically (a temporary file renamed over `path`). The header is padded with
// spaces so that the data starts on an 8-byte boundary. Throws kBadInput for duplicate or
// reserved names and when the file cannot be written.
void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, const HostTensor*>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});
void write_safetensors_any(const std::filesystem::path& path,
                           const std::vector<std::pair<std::string, const AnyTensor*>>& tensors,
                           const std::map<std::string, std::string>& metadata = {});

}  // namespace nvdet
