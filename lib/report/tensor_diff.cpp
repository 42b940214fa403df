#include "lib/report/tensor_diff.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <limits>
#include <map>
#include <memory>

#include "lib/compare/any_compare.h"
#include "lib/core/bounded_file.h"
#include "lib/core/error.h"
#include "lib/core/text_excerpt.h"
#include "lib/report/json_report.h"
#include "lib/tensorio/npy.h"
#include "lib/tensorio/safetensors.h"

namespace nvdet {
namespace {

namespace fs = std::filesystem;

// One tensor a side offers: its pairing key, a label for messages, and how to load it.
struct Source {
  std::string key;   // tensor name, "<file in folder>:<name>", or "" for a .npy
  std::string name;  // tensor name ("" for a .npy), matched by --tensor
  std::string label;
  std::function<AnyTensor()> load;
};

bool is_npy(const fs::path& p) {
  if (p.extension() == ".npy") return true;
  if (p.extension() == ".safetensors") return false;
  // Sniffed through the non-blocking regular-file check: a FIFO or device without an extension
  // is refused here instead of blocking the open (or reading without end).
  uint64_t size = 0;
  const int fd = open_regular_file(p, "tensor file", &size);
  char magic[6] = {};
  ssize_t got = 0;
  do got = ::pread(fd, magic, sizeof magic, 0);
  while (got < 0 && errno == EINTR);
  ::close(fd);
  return got == 6 && std::string_view(magic, 6) == "\x93NUMPY";
}

void add_safetensors(const fs::path& p, const std::string& prefix, const DiffOptions& o,
                     std::vector<Source>& out) {
  // One file object shared by every tensor's loader: copying it into each loader would copy its
  // whole index per tensor (memory quadratic in the tensor count).
  const auto f = std::make_shared<const SafetensorsFile>(SafetensorsFile::open(p));
  for (const std::string& name : f->names()) {
    // Names come from the file: shown escaped (no control bytes reach a terminal or a log).
    const std::string label = p.string() + ":" + excerpt(name, 128);
    out.push_back({prefix + name, name, label, [f, name, label, as = o.as] {
                     AnyTensor t = f->read_any(name);
                     return as ? reinterpret_as(std::move(t), *as, label) : t;
                   }});
  }
}

std::vector<Source> sources_of(const fs::path& p, const DiffOptions& o) {
  std::error_code ec;
  if (!fs::exists(p, ec)) throw_input_error(p.string() + ": no such file or folder");
  std::vector<Source> out;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(p, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path());
    }
    if (ec) throw_input_error(p.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) add_safetensors(f, fs::relative(f, p).string() + ":", o, out);
    if (out.empty()) throw_input_error(p.string() + ": the folder holds no .safetensors tensors");
    return out;
  }
  if (is_npy(p)) {
    const AnyTensor t = read_npy(p, o.as);  // read now: a corrupt file is reported up front
    out.push_back({"", "", p.string(), [t] { return t; }});
    return out;
  }
  add_safetensors(p, "", o, out);
  if (out.empty()) throw_input_error(p.string() + ": the file holds no tensors");
  return out;
}

std::string names_of(const std::vector<Source>& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 5; ++i) out += (i ? ", " : "") + excerpt(s[i].name);
  if (s.size() > 5) out += ", ...";
  return out;
}

std::vector<Source> only_named(std::vector<Source> s, const std::string& name,
                               const fs::path& side) {
  if (s.size() == 1 && s[0].name.empty()) return s;  // a .npy: its one tensor
  std::erase_if(s, [&](const Source& x) { return x.name != name; });
  if (s.empty())
    throw_input_error(side.string() + " holds no tensor named '" + excerpt(name) + "'");
  return s;
}

std::string coords_text(const std::vector<int64_t>& c) {
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
  return "(" + s + ")";
}

// Nine significant digits tell any two floats apart (the audit's precision); doubles need 17.
std::string describe(const FirstMismatch& f, ElemType type) {
  const int digits =
      type == ElemType::kF64 || type == ElemType::kI64 || type == ElemType::kU64 ? 17 : 9;
  const std::string ulp = f.ulp == std::numeric_limits<uint64_t>::max()
                              ? std::string("NaN involved")
                              : fmt::format("{} ulp", f.ulp);
  return fmt::format("element {} [flat {}]: {:.{}g} vs {:.{}g} (bits {} vs {}, {})",
                     coords_text(f.coords), f.flat_index, f.a, digits, f.b, digits, f.a_bits,
                     f.b_bits, ulp);
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

DiffResult diff_tensor_files(const fs::path& a, const fs::path& b, const DiffOptions& o) {
  std::vector<Source> sa = sources_of(a, o), sb = sources_of(b, o);
  if (!o.tensor.empty()) {
    sa = only_named(std::move(sa), o.tensor, a);
    sb = only_named(std::move(sb), o.tensor, b);
  }
  std::vector<std::pair<const Source*, const Source*>> pairs;
  DiffResult r;
  r.a = a.string();
  r.b = b.string();
  r.atol = o.atol;
  if (sa.size() == 1 && sb.size() == 1) {
    pairs.emplace_back(&sa[0], &sb[0]);
  } else if ((sa.size() == 1 && sa[0].key.empty()) || (sb.size() == 1 && sb[0].key.empty())) {
    const bool a_single = sa.size() == 1 && sa[0].key.empty();
    const auto& many = a_single ? sb : sa;
    throw_input_error((a_single ? b : a).string() + " holds " + std::to_string(many.size()) +
                      " tensors (" + names_of(many) + "); name one with --tensor");
  } else {
    std::map<std::string, const Source*> in_b;
    for (const Source& s : sb) in_b[s.key] = &s;
    for (const Source& s : sa) {
      auto it = in_b.find(s.key);
      if (it == in_b.end()) {
        r.only_in_a.push_back(s.key);
        continue;
      }
      pairs.emplace_back(&s, it->second);
      in_b.erase(it);
    }
    for (const Source& s : sb) {
      if (in_b.count(s.key)) r.only_in_b.push_back(s.key);
    }
    if (pairs.empty()) throw_input_error(r.a + " and " + r.b + " have no tensor name in common");
  }
  for (const auto& [x, y] : pairs) {
    const AnyTensor ta = x->load(), tb = y->load();
    TensorDiff d;
    d.name = x->key.empty() ? y->key : x->key;
    d.a_label = x->label;
    d.b_label = y->label;
    d.type = ta.type;
    d.shape = ta.shape;
    d.cmp = compare_any(ta, tb, x->label, y->label);
    d.passed = d.cmp.identical || (o.atol && d.cmp.max_abs_diff <= *o.atol);
    r.identical = r.identical && d.cmp.identical;
    r.passed = r.passed && d.passed;
    r.tensors.push_back(std::move(d));
  }
  const bool one_sided = !r.only_in_a.empty() || !r.only_in_b.empty();
  r.identical = r.identical && !one_sided;
  r.passed = r.passed && !one_sided;
  return r;
}

std::string render_diff_text(const DiffResult& r, bool rows) {
  std::string s;
  const bool many = r.tensors.size() > 1 || !r.only_in_a.empty() || !r.only_in_b.empty();
  int differing = 0;
  for (const TensorDiff& d : r.tensors) {
    AnyTensor shape_only;
    shape_only.shape = d.shape;
    const std::string what =
        fmt::format("{} {}", elem_type_name(d.type), shape_only.shape_string());
    const std::string title = many ? excerpt(d.name, 128) + ": " : "";
    if (d.cmp.identical) {
      if (many && r.tensors.size() > 10) continue;  // a dump folder: the count below says it
      s += fmt::format("{}identical: {} and {} hold the same {} tensor, bit for bit\n", title,
                       d.a_label, d.b_label, what);
      continue;
    }
    ++differing;
    s += fmt::format("{}DIFFERENT: {} of {} elements of the {} tensors {} and {} differ\n", title,
                     d.cmp.mismatch_count, numel_of(d.shape), what, d.a_label, d.b_label);
    s += "  first mismatch: " + describe(*d.cmp.first, d.type) + "\n";
    s += fmt::format("  max |diff| {:.3g}, max relative diff {:.3g}\n", d.cmp.max_abs_diff,
                     d.cmp.max_rel_diff);
    if (rows) {
      const int64_t n_rows = d.shape.size() >= 2 ? d.shape[0] : 1;
      s += fmt::format("  rows: first differing row {}; {} of {} rows differ\n",
                       d.cmp.first_mismatch_row, d.cmp.mismatched_rows, n_rows);
    }
    if (r.atol) {
      s += fmt::format("  {} --atol {:g}\n", d.passed ? "within" : "NOT within", *r.atol);
    }
  }
  for (const std::string& k : r.only_in_a) s += "only in " + r.a + ": " + excerpt(k, 128) + "\n";
  for (const std::string& k : r.only_in_b) s += "only in " + r.b + ": " + excerpt(k, 128) + "\n";
  if (many) {
    s += fmt::format(
        "{} of {} tensors differ{}\n", differing, r.tensors.size(),
        r.only_in_a.size() + r.only_in_b.size()
            ? fmt::format(", {} on one side only", r.only_in_a.size() + r.only_in_b.size())
            : std::string());
  }
  return s;
}

nlohmann::ordered_json diff_to_json(const DiffResult& r) {
  using ojson = nlohmann::ordered_json;
  ojson tensors = ojson::array();
  ojson first = nullptr;
  for (const TensorDiff& d : r.tensors) {
    ojson fm = d.cmp.first ? ojson(first_mismatch_to_json(*d.cmp.first)) : ojson(nullptr);
    if (first.is_null() && !fm.is_null()) first = fm;
    tensors.push_back({{"name", d.name},
                       {"a", d.a_label},
                       {"b", d.b_label},
                       {"dtype", elem_type_name(d.type)},
                       {"shape", d.shape},
                       {"identical", d.cmp.identical},
                       {"passed", d.passed},
                       {"first_mismatch", fm},
                       {"max_abs_diff", ojson(json_number(d.cmp.max_abs_diff))},
                       {"max_rel_diff", ojson(json_number(d.cmp.max_rel_diff))},
                       {"mismatch_count", d.cmp.mismatch_count},
                       {"first_mismatch_row", d.cmp.first_mismatch_row},
                       {"mismatched_rows", d.cmp.mismatched_rows},
                       {"rows", d.shape.size() >= 2 ? d.shape[0] : 1}});
  }
  ojson j = {{"a", r.a}, {"b", r.b}, {"identical", r.identical}, {"passed", r.passed}};
  if (r.atol) j["atol"] = *r.atol;
  j["first_mismatch"] = first;
  j["tensors"] = tensors;
  j["only_in_a"] = r.only_in_a;
  j["only_in_b"] = r.only_in_b;
  return j;
}

}  // namespace nvdet
