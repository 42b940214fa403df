#include "lib/probe/served_output.h"

#include <absl/types/span.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "lib/core/error.h"
#include "lib/core/json_input.h"
#include "lib/core/text_excerpt.h"
#include "lib/hash/hash.h"

namespace nvdet {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool is_number(const json& v) { return v.is_number(); }

// A token id as servers give it: a JSON integer in int32's range.
std::optional<int32_t> token_id(const json& entry) {
  const auto it = entry.find("id");
  if (it == entry.end()) return std::nullopt;
  return json_integer<int32_t>(*it);
}

// ---- canonical bytes, for the hashes ----------------------------------------------------------

void put_bytes(std::string& out, std::string_view s) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out.append(s);
}
void put_double(std::string& out, double v) {
  const uint64_t bits = std::bit_cast<uint64_t>(v);
  out.append(reinterpret_cast<const char*>(&bits), sizeof bits);
}
void put_id(std::string& out, std::optional<int32_t> id) {
  out += id ? '\1' : '\0';
  const int32_t v = id.value_or(0);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string token_bytes(const ServedToken& t) {
  std::string b;
  put_bytes(b, t.text);
  put_id(b, t.id);
  b += t.logprob ? '\1' : '\0';
  put_double(b, t.logprob.value_or(0.0));
  put_double(b, static_cast<double>(t.top.size()));
  for (const ServedAlternative& a : t.top) {
    put_bytes(b, a.text);
    put_id(b, a.id);
    put_double(b, a.logprob);
  }
  return b;
}

Hash128 hash_of(const std::string& bytes) {
  return hash_bytes(
      absl::Span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

double top_gap(const ServedToken& t) {
  if (t.top.size() < 2) return kNaN;
  double best = -std::numeric_limits<double>::infinity(), second = best;
  for (const ServedAlternative& a : t.top) {
    if (a.logprob > best) {
      second = best;
      best = a.logprob;
    } else if (a.logprob > second) {
      second = a.logprob;
    }
  }
  return best - second;
}

// ---- comparison -------------------------------------------------------------------------------

// A log probability's bits and the ULP distance between two: as fp32 when both are fp32 values
// (what servers compute them in, printed exactly), else as fp64.
uint64_t ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  return bits & sign ? ~bits & (sign | (sign - 1)) : bits | sign;
}

void set_values(FirstMismatch& m, double a, double b) {
  m.a = a;
  m.b = b;
  if (std::isnan(a) || std::isnan(b)) {
    m.a_bits = std::isnan(a) ? "none" : fmt::format("0x{:016x}", std::bit_cast<uint64_t>(a));
    m.b_bits = std::isnan(b) ? "none" : fmt::format("0x{:016x}", std::bit_cast<uint64_t>(b));
    m.ulp = std::numeric_limits<uint64_t>::max();
    return;
  }
  const bool fp32 = static_cast<double>(static_cast<float>(a)) == a &&
                    static_cast<double>(static_cast<float>(b)) == b;
  if (fp32) {
    const uint32_t x = std::bit_cast<uint32_t>(static_cast<float>(a));
    const uint32_t y = std::bit_cast<uint32_t>(static_cast<float>(b));
    m.a_bits = fmt::format("0x{:08x}", x);
    m.b_bits = fmt::format("0x{:08x}", y);
    const uint64_t ox = ordered(x, 32), oy = ordered(y, 32);
    m.ulp = ox > oy ? ox - oy : oy - ox;
  } else {
    const uint64_t x = std::bit_cast<uint64_t>(a), y = std::bit_cast<uint64_t>(b);
    m.a_bits = fmt::format("0x{:016x}", x);
    m.b_bits = fmt::format("0x{:016x}", y);
    const uint64_t ox = ordered(x, 64), oy = ordered(y, 64);
    m.ulp = ox > oy ? ox - oy : oy - ox;
  }
}

bool same_bits(std::optional<double> a, std::optional<double> b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::bit_cast<uint64_t>(*a) == std::bit_cast<uint64_t>(*b);
}

bool same_choice(const ServedToken& a, const ServedToken& b) {
  return a.text == b.text && a.id == b.id;
}

// The first element of two equal-choice-or-not tokens whose value differs: rank 0 is the chosen
// token's log probability, rank r its r-th listed alternative's; -1 when every bit is the same.
int first_differing_rank(const ServedToken& a, const ServedToken& b) {
  if (!same_choice(a, b) || !same_bits(a.logprob, b.logprob)) return 0;
  const size_t n = std::max(a.top.size(), b.top.size());
  for (size_t r = 0; r < n; ++r) {
    if (r >= a.top.size() || r >= b.top.size()) return static_cast<int>(r) + 1;
    const ServedAlternative &x = a.top[r], &y = b.top[r];
    if (x.text != y.text || x.id != y.id || !same_bits(x.logprob, y.logprob))
      return static_cast<int>(r) + 1;
  }
  return -1;
}

double value_at(const ServedToken& t, int rank) {
  if (rank == 0) return t.logprob.value_or(kNaN);
  const size_t r = static_cast<size_t>(rank - 1);
  return r < t.top.size() ? t.top[r].logprob : kNaN;
}

std::optional<Divergence> compare_tokens(const ServedOutput& a, const ServedOutput& b) {
  const size_t n = std::min(a.tokens.size(), b.tokens.size());
  Divergence d;
  ServedDivergence s;
  int64_t first = -1, flip = -1;
  int64_t differing = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool equal = first_differing_rank(a.tokens[i], b.tokens[i]) < 0;
    if (!equal) {
      ++differing;
      if (first < 0) first = static_cast<int64_t>(i);
    }
    if (flip < 0 && !same_choice(a.tokens[i], b.tokens[i])) flip = static_cast<int64_t>(i);
  }
  differing += static_cast<int64_t>(std::max(a.tokens.size(), b.tokens.size()) - n);
  if (flip < 0 && a.tokens.size() != b.tokens.size()) flip = static_cast<int64_t>(n);
  if (first < 0 && a.tokens.size() != b.tokens.size()) first = static_cast<int64_t>(n);
  if (first < 0 && a.text == b.text && a.finish_reason == b.finish_reason) return std::nullopt;
  if (first < 0) first = static_cast<int64_t>(n);  // the same tokens, another text or ending
  d.token = first;
  d.first_mismatch.flat_index = first;
  if (first < static_cast<int64_t>(n)) {
    const int rank = first_differing_rank(a.tokens[first], b.tokens[first]);
    d.first_mismatch.coords = {first, rank};
    set_values(d.first_mismatch, value_at(a.tokens[first], rank), value_at(b.tokens[first], rank));
  } else {
    d.first_mismatch.coords = {first, 0};
    set_values(d.first_mismatch, kNaN, kNaN);
  }
  // How far the log probabilities drifted while both runs still chose the same tokens.
  const size_t same_until = flip < 0 ? n : static_cast<size_t>(flip);
  for (size_t i = 0; i < same_until; ++i) {
    if (a.tokens[i].logprob && b.tokens[i].logprob)
      d.max_abs_diff =
          std::max(d.max_abs_diff, std::fabs(*a.tokens[i].logprob - *b.tokens[i].logprob));
  }
  d.mismatch_count = differing;
  d.mismatched_tokens = differing;
  d.tokens = static_cast<int64_t>(b.tokens.size());
  s.by_token = true;
  s.position = flip;
  if (flip >= 0) {
    const auto side = [flip](const ServedOutput& o, std::string& piece, int32_t& id, double& lp) {
      if (flip < static_cast<int64_t>(o.tokens.size())) {
        const ServedToken& t = o.tokens[flip];
        piece = t.text;
        id = t.id.value_or(-1);
        lp = t.logprob.value_or(kNaN);
      } else {
        piece = "";  // the completion ended before
        lp = kNaN;
      }
    };
    side(a, s.baseline_piece, s.baseline_id, s.baseline_logprob);
    side(b, s.piece, s.id, s.logprob);
    s.baseline_top_gap =
        flip < static_cast<int64_t>(a.tokens.size()) ? top_gap(a.tokens[flip]) : kNaN;
  } else {
    s.baseline_logprob = s.logprob = s.baseline_top_gap = kNaN;
  }
  d.served = s;
  return d;
}

std::optional<Divergence> compare_text(const ServedOutput& a, const ServedOutput& b) {
  if (a.text == b.text && a.finish_reason == b.finish_reason) return std::nullopt;
  const size_t n = std::min(a.text.size(), b.text.size());
  size_t at = 0;
  while (at < n && a.text[at] == b.text[at]) ++at;
  Divergence d;
  d.token = static_cast<int64_t>(at);
  d.first_mismatch.flat_index = d.token;
  d.first_mismatch.coords = {d.token};
  const auto byte = [at](const std::string& t) {
    return at < t.size() ? static_cast<double>(static_cast<unsigned char>(t[at])) : -1.0;
  };
  d.first_mismatch.a = byte(a.text);
  d.first_mismatch.b = byte(b.text);
  const auto bits = [](double v) {
    return v < 0 ? std::string("end") : fmt::format("0x{:02x}", static_cast<int>(v));
  };
  d.first_mismatch.a_bits = bits(d.first_mismatch.a);
  d.first_mismatch.b_bits = bits(d.first_mismatch.b);
  d.first_mismatch.ulp = std::numeric_limits<uint64_t>::max();
  for (size_t i = at; i < n; ++i) d.mismatch_count += a.text[i] != b.text[i];
  d.mismatch_count += static_cast<int64_t>(std::max(a.text.size(), b.text.size()) - n);
  d.mismatched_tokens = d.mismatch_count;
  d.tokens = static_cast<int64_t>(b.text.size());
  ServedDivergence s;
  s.by_token = false;
  s.position = d.token;
  s.baseline_piece = a.text.substr(std::min(at, a.text.size()), 24);
  s.piece = b.text.substr(std::min(at, b.text.size()), 24);
  s.baseline_logprob = s.logprob = s.baseline_top_gap = kNaN;
  d.served = s;
  return d;
}

}  // namespace

// ---- reading ----------------------------------------------------------------------------------

bool ServedOutputReader::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  return false;
}

bool ServedOutputReader::add_text(std::string_view json_text) {
  json chunk;
  try {
    chunk = parse_json_input(json_text, "sent an answer that");  // "... is not valid JSON (...)"
  } catch (const Error& e) {
    return fail(e.what());
  }
  try {
    return add(chunk);
  } catch (
      const std::exception& e) {  // a JSON type nvdet did not check for: malformed all the same
    return fail(std::string("sent an answer nvdet could not read: ") + e.what());
  }
}

bool ServedOutputReader::add(const json& chunk) {
  if (!error_.empty()) return false;
  if (!chunk.is_object()) return fail("sent a JSON answer that is not an object");
  if (const auto it = chunk.find("error"); it != chunk.end()) {
    std::string message = it->is_string() ? it->get<std::string>() : "";
    if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
      message = (*it)["message"].get<std::string>();
    return fail("reported an error: " + excerpt(message.empty() ? it->dump() : message, 300));
  }
  const auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array())
    return fail("sent an answer without a 'choices' list");
  if (choices->empty()) return true;  // a closing chunk that carries usage only
  const json* first = &choices->front();
  for (const json& c : *choices) {
    if (c.is_object() && c.contains("index") && json_integer<int>(c["index"]) == 0) {
      first = &c;
      break;
    }
  }
  if (!first->is_object()) return fail("sent a choice that is not an object");
  return add_choice(*first);
}

bool ServedOutputReader::add_choice(const json& choice) {
  std::string piece;
  const auto text_of = [&](const json& v, const char* where) {
    if (v.is_null()) return true;
    if (!v.is_string()) return fail(std::string("sent a '") + where + "' that is not text");
    piece = v.get<std::string>();
    return true;
  };
  if (api_ == ServerApi::kCompletions) {
    if (choice.contains("text") && !text_of(choice["text"], "text")) return false;
  } else {
    for (const char* key : {"message", "delta"}) {
      if (!choice.contains(key)) continue;
      const json& m = choice[key];
      if (!m.is_object()) return fail(std::string("sent a '") + key + "' that is not an object");
      if (m.contains("content") && !text_of(m["content"], "content")) return false;
    }
  }
  out_.text += piece;
  if (const auto it = choice.find("finish_reason"); it != choice.end() && !it->is_null()) {
    if (!it->is_string()) return fail("sent a 'finish_reason' that is not text");
    out_.finish_reason = it->get<std::string>();
  }
  const size_t tokens_before = out_.tokens.size();
  if (const auto it = choice.find("logprobs"); it != choice.end() && !it->is_null()) {
    if (!add_logprobs(*it)) return false;
  }
  if (!piece.empty() || out_.tokens.size() > tokens_before) ++out_.chunks;
  return true;
}

bool ServedOutputReader::add_logprobs(const json& lp) {
  if (!lp.is_object()) return fail("sent 'logprobs' that are not an object");
  if (const auto content = lp.find("content"); content != lp.end()) {
    if (content->is_null()) return true;
    if (!content->is_array()) return fail("sent 'logprobs.content' that is not a list");
    for (const json& e : *content) {
      if (!e.is_object() || !e.contains("token") || !e["token"].is_string() ||
          !e.contains("logprob") || !is_number(e["logprob"]))
        return fail("sent a 'logprobs.content' entry without a token text and a logprob");
      ServedToken t;
      t.text = e["token"].get<std::string>();
      t.id = token_id(e);
      t.logprob = e["logprob"].get<double>();
      if (const auto top = e.find("top_logprobs"); top != e.end() && !top->is_null()) {
        if (!top->is_array()) return fail("sent 'top_logprobs' that are not a list");
        for (const json& x : *top) {
          if (!x.is_object() || !x.contains("token") || !x["token"].is_string() ||
              !x.contains("logprob") || !is_number(x["logprob"]))
            return fail("sent a 'top_logprobs' entry without a token text and a logprob");
          t.top.push_back({x["token"].get<std::string>(), token_id(x), x["logprob"].get<double>()});
        }
      }
      out_.tokens.push_back(std::move(t));
    }
    return true;
  }
  // The legacy completions shape: parallel lists.
  const auto tokens = lp.find("tokens");
  if (tokens == lp.end() || !tokens->is_array())
    return fail("sent 'logprobs' with neither a 'content' nor a 'tokens' list");
  // A list given (not null) holds one entry per token.
  const json none = json::array();
  const auto list = [&lp, &none](const char* key) -> const json& {
    return lp.contains(key) && !lp[key].is_null() ? lp[key] : none;
  };
  const json& logprobs = list("token_logprobs");
  const json& top = list("top_logprobs");
  const auto given = [&lp](const char* key) { return lp.contains(key) && !lp[key].is_null(); };
  if (!logprobs.is_array() || !top.is_array() ||
      (given("token_logprobs") && logprobs.size() != tokens->size()) ||
      (given("top_logprobs") && top.size() != tokens->size()))
    return fail("sent 'logprobs' lists of different lengths");
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!(*tokens)[i].is_string()) return fail("sent a 'logprobs.tokens' entry that is not text");
    ServedToken t;
    t.text = (*tokens)[i].get<std::string>();
    if (!logprobs.empty() && !logprobs[i].is_null()) {
      if (!is_number(logprobs[i]))
        return fail("sent a 'token_logprobs' entry that is not a number");
      t.logprob = logprobs[i].get<double>();
    }
    if (!top.empty() && !top[i].is_null()) {
      if (!top[i].is_object()) return fail("sent a 'top_logprobs' entry that is not an object");
      for (const auto& [text, value] : top[i].items()) {
        if (!is_number(value)) return fail("sent a 'top_logprobs' value that is not a number");
        t.top.push_back({text, std::nullopt, value.get<double>()});
      }
      std::stable_sort(t.top.begin(), t.top.end(),
                       [](const ServedAlternative& x, const ServedAlternative& y) {
                         return x.logprob > y.logprob;
                       });
    }
    out_.tokens.push_back(std::move(t));
  }
  return true;
}

// ---- levels, records, comparison --------------------------------------------------------------

std::string served_level(const ServedOutput& o) {
  if (o.tokens.empty()) return "text";
  const bool logprobs = std::all_of(o.tokens.begin(), o.tokens.end(),
                                    [](const ServedToken& t) { return t.logprob.has_value(); });
  return logprobs ? "logprobs" : "tokens";
}

std::vector<std::string> served_coord_names(const std::string& level) {
  if (level == "text") return {"byte"};
  return {"token", "rank"};
}

RequestRecord served_record(int64_t request, const ServedOutput& o) {
  RequestRecord r;
  r.request = request;
  std::string all;
  put_bytes(all, o.text);
  put_bytes(all, o.finish_reason);
  put_double(all, static_cast<double>(o.tokens.size()));
  ServedCompletion c;
  c.text = o.text;
  c.finish_reason = o.finish_reason;
  const bool ids = !o.tokens.empty() && std::all_of(o.tokens.begin(), o.tokens.end(),
                                                    [](const ServedToken& t) { return t.id; });
  for (const ServedToken& t : o.tokens) {
    const std::string bytes = token_bytes(t);
    all += bytes;
    r.token_hashes.push_back(hash_of(bytes));
    if (ids) r.completion.push_back(*t.id);
    c.tokens.push_back(t.text);
    c.top_gaps.push_back(top_gap(t));
  }
  if (served_level(o) == "logprobs")
    for (const ServedToken& t : o.tokens) c.logprobs.push_back(*t.logprob);
  r.hash = hash_of(all);
  r.served = std::move(c);
  return r;
}

std::optional<Divergence> compare_served(const ServedOutput& baseline, const ServedOutput& run) {
  if (!baseline.tokens.empty() && !run.tokens.empty()) return compare_tokens(baseline, run);
  std::optional<Divergence> d = compare_text(baseline, run);
  if (!d && baseline.tokens.size() != run.tokens.size()) {
    // The same text, with tokens on one side only: the server answered at another level.
    d = Divergence{};
    d->first_mismatch.coords = {0};
    d->first_mismatch.a = d->first_mismatch.b = kNaN;
    d->first_mismatch.a_bits = baseline.tokens.empty() ? "text" : "tokens";
    d->first_mismatch.b_bits = run.tokens.empty() ? "text" : "tokens";
    d->first_mismatch.ulp = std::numeric_limits<uint64_t>::max();
    d->mismatch_count = d->mismatched_tokens = 1;
    ServedDivergence s;
    s.by_token = false;
    s.baseline_logprob = s.logprob = s.baseline_top_gap = kNaN;
    d->served = s;
  }
  return d;
}

}  // namespace nvdet
