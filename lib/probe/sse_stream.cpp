#include "lib/probe/sse_stream.h"

namespace nvdet {

void SseStream::feed(std::string_view bytes, const OnEvent& on_event) {
  for (const char c : bytes) {
    if (done_) return;
    // A line ends at "\r\n", "\n" or "\r": the '\n' after a '\r' ends nothing more.
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = c == '\r';
    if (c == '\n' || c == '\r') {
      line(partial_, on_event);
      partial_.clear();
    } else {
      partial_ += c;
    }
  }
}

void SseStream::finish(const OnEvent& on_event) {
  if (!partial_.empty()) line(partial_, on_event);
  partial_.clear();
  if (!done_) dispatch(on_event);
}

void SseStream::line(std::string_view text, const OnEvent& on_event) {
  if (done_) return;
  if (text.empty()) {
    dispatch(on_event);
    return;
  }
  if (text[0] == ':') return;  // a comment (keep-alives)
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (field != "data") return;
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

void SseStream::dispatch(const OnEvent& on_event) {
  if (!has_data_) return;
  has_data_ = false;
  if (data_ == "[DONE]") {
    done_ = true;
    data_.clear();
    return;
  }
  on_event(data_);
  data_.clear();
}

}  // namespace nvdet
