#include "tc/error.h"

#include <algorithm>

namespace ptb::tc {

namespace {

// The length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one. Overlong
// forms and surrogates are rejected, as Python's decoder does, so the result always decodes.
size_t utf8_sequence_length(const std::string& s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string sanitize_for_message(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < out.size();) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t') || c == 0x7F) out[i] = '?';
      ++i;
      continue;
    }
    size_t n = utf8_sequence_length(out, i);
    if (n == 0) {
      out[i] = '?';
      ++i;
    } else {
      i += n;
    }
  }
  return out;
}

SourceText::SourceText(std::string text) : text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string SourceText::line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return "";
  size_t begin = line_starts_[line - 1];
  size_t end = text_.find('\n', begin);
  if (end == std::string::npos) end = text_.size();
  if (end > begin && text_[end - 1] == '\r') --end;  // Windows line endings
  return text_.substr(begin, end - begin);
}

namespace {

// A long line is quoted around the caret only (a generated 1500-term body echoed 65 KB).
constexpr size_t kQuotedBytes = 120;

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

TCError SourceText::make_error(SourcePos pos, const std::string& message) const {
  std::string src = sanitize_for_message(line(pos.line));
  std::string msg = sanitize_for_message(message);
  size_t upto = pos.col > 0 ? static_cast<size_t>(pos.col - 1) : 0;
  // The part of the line quoted: all of it, or kQuotedBytes around the caret (cut at character
  // boundaries, "..." where cut).
  size_t from = 0, to = src.size();
  if (src.size() > kQuotedBytes) {
    from = upto > kQuotedBytes / 2 ? std::min(upto - kQuotedBytes / 2, src.size()) : 0;
    while (from > 0 && from < src.size() && continuation_byte(src[from])) --from;
    to = std::min(src.size(), from + kQuotedBytes);
    while (to < src.size() && continuation_byte(src[to])) ++to;
  }
  std::string quoted =
      (from > 0 ? "..." : "") + src.substr(from, to - from) + (to < src.size() ? "..." : "");
  // The caret sits under byte `col` of the line. Tabs are copied so the caret lines up in a
  // terminal; a multi-byte character takes one column, so its continuation bytes are skipped.
  std::string pad(from > 0 ? 3 : 0, ' ');
  for (size_t i = from; i < upto && i < src.size(); ++i) {
    char c = src[i];
    if (c == '\t') {
      pad += '\t';
    } else if (!continuation_byte(c)) {
      pad += ' ';
    }
  }
  if (upto > src.size()) pad.append(upto - src.size(), ' ');
  std::string formatted = str_cat("line ", pos.line, ", column ", pos.col, ": ", msg, "\n    ",
                                  quoted, "\n    ", pad, "^");
  return TCError(pos.line, pos.col, msg, src, formatted);
}

}  // namespace ptb::tc
