// Errors in Tensor Comprehensions source.
//
// A TCError points at one token: it carries the line and column (both 1-based) and a message
// that already shows the offending source line with a caret under the token, so it reads well
// whether it is printed from C++ or raised in Python (as pytvmbridge.tc.TCError, a ValueError).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "support/error.h"

namespace ptb::tc {

// A position in TC source: line and column, 1-based; column counts bytes.
struct SourcePos {
  int line = 0;
  int col = 0;
};

class TCError : public UserError {
 public:
  TCError(int line, int col, std::string message, std::string source_line,
          const std::string& formatted)
      : UserError(ErrorKind::kValue, formatted),
        line_(line),
        col_(col),
        message_(std::move(message)),
        source_line_(std::move(source_line)) {}

  int line() const { return line_; }
  int col() const { return col_; }
  // The message alone, without the position and the source excerpt.
  const std::string& message() const { return message_; }
  // The offending line of source, sanitised for printing (no control or invalid UTF-8 bytes).
  const std::string& source_line() const { return source_line_; }

 private:
  int line_;
  int col_;
  std::string message_;
  std::string source_line_;
};

// The text being compiled, with what error messages need: lines by number and formatting.
class SourceText {
 public:
  explicit SourceText(std::string text);
  const std::string& text() const { return text_; }
  // Line `line` (1-based) without its newline; empty when out of range.
  std::string line(int line) const;
  // Builds (without throwing) the error for `message` at `pos`.
  TCError make_error(SourcePos pos, const std::string& message) const;
  [[noreturn]] void fail(SourcePos pos, const std::string& message) const {
    throw make_error(pos, message);
  }

 private:
  std::string text_;
  std::vector<size_t> line_starts_;
};

// Replaces bytes that cannot be printed (control characters, NUL, invalid UTF-8) by '?', so a
// message built from arbitrary input is always a valid Python str. Tabs are kept.
std::string sanitize_for_message(const std::string& s);

}  // namespace ptb::tc
