#include "lib/tensorio/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "lib/core/atomic_file.h"
#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/text_excerpt.h"

namespace nvdet {

// The open file. Tensors are read with pread, not through a mapping: a file truncated or
// rewritten while nvdet reads it then gives a short read (exit 2, one sentence) where a mapping
// would have raised SIGBUS.
struct SafetensorsFile::OpenFile {
  int fd = -1;
  uint64_t size = 0;  // at open
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

namespace {

// The reference implementation's limit: real headers are kilobytes, a few MB for huge models.
constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;

struct DtypeInfo {
  const char* name;
  size_t bytes;
  std::optional<ElemType> type;
};

// Every dtype the format defines; the fp8 ones are sized (so their offsets are validated) but
// not readable.
const DtypeInfo kDtypes[] = {
    {"BOOL", 1, ElemType::kBool}, {"U8", 1, ElemType::kU8},     {"I8", 1, ElemType::kI8},
    {"I16", 2, ElemType::kI16},   {"U16", 2, ElemType::kU16},   {"F16", 2, ElemType::kF16},
    {"BF16", 2, ElemType::kBF16}, {"I32", 4, ElemType::kI32},   {"U32", 4, ElemType::kU32},
    {"F32", 4, ElemType::kF32},   {"F64", 8, ElemType::kF64},   {"I64", 8, ElemType::kI64},
    {"U64", 8, ElemType::kU64},   {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

[[noreturn]] void bad(const std::filesystem::path& path, const std::string& message) {
  throw_input_error(path.string() + ": " + message);
}

// `n` bytes at `offset`, or one sentence when the file ends first: it was truncated after it
// was opened and validated (its size then is named, as nvdet saw it).
void read_exactly(const std::filesystem::path& path, int fd, uint64_t offset, void* out, size_t n) {
  auto* p = static_cast<char*>(out);
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) bad(path, std::string("cannot be read: ") + std::strerror(errno));
    if (got == 0) {
      struct stat st {};
      const std::string now =
          ::fstat(fd, &st) == 0 ? " (now " + std::to_string(st.st_size) + " bytes)" : "";
      bad(path, "ends at byte " + std::to_string(offset + done) + ", before the " +
                    std::to_string(n) + " bytes read from byte " + std::to_string(offset) +
                    ": the file was truncated while nvdet read it" + now);
    }
    done += static_cast<size_t>(got);
  }
}

// Bounded: a shape read from a file may list any number of dimensions.
std::string shape_text(const std::vector<int64_t>& shape) {
  constexpr size_t kShownDims = 8;
  std::string s = "[";
  for (size_t i = 0; i < shape.size() && i < kShownDims; ++i) {
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  if (shape.size() > kShownDims) s += ", ... (" + std::to_string(shape.size()) + " dimensions)";
  return s + "]";
}

// A non-negative JSON integer that fits in int64, or nullopt.
std::optional<int64_t> non_negative(const nlohmann::json& v) {
  const std::optional<int64_t> n = json_integer<int64_t>(v);
  return n && *n >= 0 ? n : std::nullopt;
}

SafetensorsFile::Entry parse_entry(const std::filesystem::path& path, const std::string& name,
                                   const nlohmann::json& v, uint64_t buffer_size) {
  const std::string what = "tensor '" + excerpt(name) + "'";
  if (!v.is_object()) bad(path, what + " is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(key)) bad(path, what + " has no \"" + key + "\"");
  }
  SafetensorsFile::Entry e;
  e.name = name;
  if (!v["dtype"].is_string()) bad(path, what + ": \"dtype\" is not a string");
  e.dtype = v["dtype"].get<std::string>();
  const DtypeInfo* info = find_dtype(e.dtype);
  if (!info) bad(path, what + " has unknown dtype '" + excerpt(e.dtype) + "'");
  e.type = info->type;
  e.elem_bytes = info->bytes;

  if (!v["shape"].is_array()) bad(path, what + ": \"shape\" is not a list");
  for (const nlohmann::json& d : v["shape"]) {
    const auto dim = non_negative(d);
    if (!dim)
      bad(path, what + ": shape " + excerpt(v["shape"].dump()) +
                    " has a dimension that is not a non-negative integer");
    e.shape.push_back(*dim);
  }
  const nlohmann::json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !non_negative(off[0]) || !non_negative(off[1])) {
    bad(path,
        what + ": \"data_offsets\" must be two non-negative integers, not " + excerpt(off.dump()));
  }
  e.begin = static_cast<uint64_t>(*non_negative(off[0]));
  e.end = static_cast<uint64_t>(*non_negative(off[1]));
  if (e.end < e.begin) {
    bad(path, what + " has data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "] that end before they begin");
  }
  if (e.end > buffer_size) {
    bad(path, what + " has data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "] beyond the data buffer (" +
                  std::to_string(buffer_size) + " bytes)");
  }
  // numel * size must equal the byte length; guard the multiplication against overflow.
  uint64_t numel = 1;
  for (int64_t d : e.shape) {
    const uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && numel > std::numeric_limits<uint64_t>::max() / ud / e.elem_bytes) {
      bad(path, what + ": shape " + shape_text(e.shape) + " is too large");
    }
    numel *= ud;
  }
  if (numel * e.elem_bytes != e.end - e.begin) {
    bad(path, what + " has data_offsets [" + std::to_string(e.begin) + ", " +
                  std::to_string(e.end) + "] (" + std::to_string(e.end - e.begin) +
                  " bytes) but shape " + shape_text(e.shape) + " of " + e.dtype + " needs " +
                  std::to_string(numel * e.elem_bytes) + " bytes");
  }
  return e;
}

}  // namespace

std::optional<ElemType> safetensors_elem_type(const std::string& dtype) {
  const DtypeInfo* d = find_dtype(dtype);
  return d ? d->type : std::nullopt;
}

std::string safetensors_dtype_name(ElemType t) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.type == t) return d.name;
  }
  return "?";
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  // Non-blocking open and a regular-file check: a FIFO or device is refused, never waited on.
  uint64_t file_size = 0;
  const int fd = open_regular_file(path, "safetensors file", &file_size);
  auto map = std::make_shared<OpenFile>();
  map->fd = fd;
  map->size = file_size;

  if (map->size < 8) {
    bad(path, "file is " + std::to_string(map->size) +
                  " bytes, too short for a safetensors header (8-byte length first)");
  }
  uint64_t header_len = 0;
  read_exactly(path, map->fd, 0, &header_len, 8);  // little-endian on disk and host
  char first_byte = 0;
  if (map->size > 8) read_exactly(path, map->fd, 8, &first_byte, 1);
  if (first_byte != '{' &&
      (header_len > map->size - 8 || header_len > kMaxSafetensorsHeaderBytes)) {
    // Neither a plausible length nor a JSON header after it: another format altogether (a
    // PyTorch .pt or NumPy .npz is a zip file), named as such rather than by a wild length.
    char magic[8];
    read_exactly(path, map->fd, 0, magic, 8);
    bad(path, "is not a .safetensors or .npy file (it starts with '" +
                  excerpt(std::string_view(magic, 8)) +
                  "'); nvdet reads .npy and .safetensors tensors (save a .pt or .npz as one of "
                  "those first)");
  }
  if (header_len > map->size - 8) {
    bad(path, "header length " + std::to_string(header_len) + " exceeds the file size (" +
                  std::to_string(map->size) + " bytes)");
  }
  if (header_len == 0) bad(path, "header length is 0 (no JSON header)");
  if (header_len > kMaxSafetensorsHeaderBytes) {
    bad(path, "header length " + std::to_string(header_len) + " is more than the limit of " +
                  std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  }
  std::string header_bytes(static_cast<size_t>(header_len), '\0');
  read_exactly(path, map->fd, 8, header_bytes.data(), header_bytes.size());
  const std::string_view header_text(header_bytes);
  const nlohmann::json header = parse_json_input(header_text, path.string() + ": the header");
  if (!header.is_object()) bad(path, "the header is not a JSON object");

  SafetensorsFile f;
  f.path_ = path;
  f.data_start_ = 8 + header_len;
  const uint64_t buffer_size = map->size - 8 - header_len;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) bad(path, "\"__metadata__\" is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          bad(path, "\"__metadata__\" value of '" + excerpt(mk) + "' is not a string");
        f.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    f.entries_.push_back(parse_entry(path, key, value, buffer_size));
  }
  std::sort(f.entries_.begin(), f.entries_.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Entry* prev = nullptr;  // the last non-empty tensor
  for (const Entry& e : f.entries_) {
    if (e.begin == e.end) continue;  // empty tensors occupy no bytes
    if (prev && e.begin < prev->end) {
      bad(path, "tensors '" + excerpt(prev->name) + "' [" + std::to_string(prev->begin) + ", " +
                    std::to_string(prev->end) + "] and '" + excerpt(e.name) + "' [" +
                    std::to_string(e.begin) + ", " + std::to_string(e.end) + "] overlap");
    }
    prev = &e;
  }
  for (size_t i = 0; i < f.entries_.size(); ++i) f.index_[f.entries_[i].name] = i;
  f.file_ = std::move(map);
  return f;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.name);
  return out;
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::string known;
    for (size_t i = 0; i < entries_.size() && i < 5; ++i) {
      known += (i ? ", " : "") + excerpt(entries_[i].name);
    }
    if (entries_.size() > 5) known += ", ...";
    bad(path_,
        "no tensor named '" + excerpt(name) + "'" +
            (known.empty() ? std::string(" (the file holds none)") : " (it holds " + known + ")"));
  }
  return entries_[it->second];
}

std::vector<int64_t> SafetensorsFile::shape(const std::string& name) const {
  return entry(name).shape;
}

std::string SafetensorsFile::dtype(const std::string& name) const { return entry(name).dtype; }

AnyTensor SafetensorsFile::read_any(const std::string& name) const {
  const Entry& e = entry(name);
  if (!e.type)
    bad(path_,
        "tensor '" + excerpt(name, 128) + "' has dtype " + e.dtype + ", which nvdet cannot read");
  AnyTensor t;
  t.type = *e.type;
  t.shape = e.shape;
  const size_t n = static_cast<size_t>(e.end - e.begin);
  t.bytes.resize(n);
  if (n > 0) read_exactly(path_, file_->fd, data_start_ + e.begin, t.bytes.data(), n);
  return t;
}

std::vector<std::byte> SafetensorsFile::read_raw(const std::string& name) const {
  const Entry& e = entry(name);
  std::vector<std::byte> bytes(static_cast<size_t>(e.end - e.begin));
  if (!bytes.empty())
    read_exactly(path_, file_->fd, data_start_ + e.begin, bytes.data(), bytes.size());
  return bytes;
}

HostTensor SafetensorsFile::read(const std::string& name) const {
  const Entry& e = entry(name);
  if (!e.type || !to_dtype(*e.type)) {
    bad(path_, "tensor '" + excerpt(name, 128) + "' has dtype " + e.dtype +
                   "; only BF16, F16 and F32 can be loaded as an nvdet tensor");
  }
  return to_host(read_any(name), path_.string() + ": tensor '" + excerpt(name, 128) + "'");
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return metadata_; }
const std::filesystem::path& SafetensorsFile::path() const { return path_; }

namespace {

void write_entries(const std::filesystem::path& path,
                   const std::vector<std::tuple<std::string, ElemType, std::vector<int64_t>,
                                                const std::byte*, size_t>>& items,
                   const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, type, shape, data, size] : items) {
    if (name == "__metadata__")
      throw_input_error(path.string() + ": '__metadata__' is reserved and cannot name a tensor");
    if (header.contains(name))
      throw_input_error(path.string() + ": tensor name '" + excerpt(name, 128) + "' appears twice");
    header[name] = {{"dtype", safetensors_dtype_name(type)},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text += ' ';  // data starts 8-byte aligned
  std::string content;
  content.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  content.append(reinterpret_cast<const char*>(&n), 8);
  content += text;
  for (const auto& item : items) {
    content.append(reinterpret_cast<const char*>(std::get<3>(item)), std::get<4>(item));
  }
  write_file_atomic(path, content, "safetensors file");
}

}  // namespace

void write_safetensors(const std::filesystem::path& path,
                       const std::vector<std::pair<std::string, const HostTensor*>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<std::tuple<std::string, ElemType, std::vector<int64_t>, const std::byte*, size_t>>
      items;
  for (const auto& [name, t] : tensors) {
    items.emplace_back(name, from_dtype(t->dtype()), t->shape(), t->data(), t->nbytes());
  }
  write_entries(path, items, metadata);
}

void write_safetensors_any(const std::filesystem::path& path,
                           const std::vector<std::pair<std::string, const AnyTensor*>>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::vector<std::tuple<std::string, ElemType, std::vector<int64_t>, const std::byte*, size_t>>
      items;
  for (const auto& [name, t] : tensors) {
    items.emplace_back(name, t->type, t->shape, t->bytes.data(), t->bytes.size());
  }
  write_entries(path, items, metadata);
}

}  // namespace nvdet
