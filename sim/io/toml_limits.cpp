#include "sim/io/toml_limits.hpp"

namespace clustersim::sim {

namespace {

/// Characters that end a bare token (a bare key part, a number, a date, a boolean).
bool ends_bare(char c) {
  switch (c) {
    case ' ': case '\t': case '\r': case '\n': case '#': case '"': case '\'': case '.': case '=': case '[':
    case ']': case '{': case '}': case ',':
      return true;
    default:
      return false;
  }
}

/// The single pass of check_toml_limits.
class LimitScanner {
 public:
  explicit LimitScanner(std::string_view text) : text_(text) {}

  std::optional<TomlLimitViolation> run() {
    while (i_ < text_.size() && !violation_) step();
    return violation_;
  }

 private:
  [[nodiscard]] int64_t column(std::size_t at) const { return static_cast<int64_t>(at - line_start_) + 1; }
  [[nodiscard]] char peek(std::size_t at) const { return at < text_.size() ? text_[at] : '\0'; }

  void violate(int64_t line, int64_t col, std::string message) {
    if (!violation_) violation_ = TomlLimitViolation{line, col, std::move(message)};
  }

  void end_chain() {
    in_chain_ = false;
    pending_dot_ = false;
  }

  /// A key part or value token over [start, end) (strings with their quotes).
  void token(std::size_t start, int64_t start_line, int64_t start_col, std::size_t end) {
    if (in_chain_ && pending_dot_) {
      pending_dot_ = false;
      if (++parts_ > kMaxTomlKeyParts) {
        violate(chain_line_, chain_col_,
                "a key of more than " + std::to_string(kMaxTomlKeyParts) + " dotted parts (the loader's limit)");
      }
    } else {
      in_chain_ = true;
      pending_dot_ = false;
      parts_ = 1;
      chain_start_ = start;
      chain_line_ = start_line;
      chain_col_ = start_col;
    }
    chain_end_ = end;
  }

  /// The chain just read is a key (before '=' or closing a header): checks its length.
  void key_ends() {
    if (in_chain_ && !pending_dot_ && chain_end_ - chain_start_ > kMaxTomlKeyBytes) {
      violate(chain_line_, chain_col_,
              "a key of " + std::to_string(chain_end_ - chain_start_) + " bytes, over the loader's limit of " +
                  std::to_string(kMaxTomlKeyBytes));
    }
    end_chain();
  }

  void open_value(int64_t col) {
    if (++depth_ > kMaxTomlValueNesting) {
      violate(line_, col, "arrays or inline tables nested more than " + std::to_string(kMaxTomlValueNesting) +
                              " deep (the loader's limit)");
    }
  }

  /// Skips a string starting at i_ (a quote), counting the lines of a multi-line one.
  void skip_string() {
    const char quote = text_[i_];
    const bool basic = quote == '"';
    const bool multi = peek(i_ + 1) == quote && peek(i_ + 2) == quote;
    i_ += multi ? 3 : 1;
    while (i_ < text_.size()) {
      const char c = text_[i_];
      if (basic && c == '\\') {
        if (peek(i_ + 1) == '\n') {
          ++line_;
          line_start_ = i_ + 2;
        }
        i_ += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi) return;  // unterminated: the parser says so
        ++line_;
        line_start_ = i_ + 1;
        ++i_;
        continue;
      }
      if (c == quote) {
        if (!multi) {
          ++i_;
          return;
        }
        if (peek(i_ + 1) == quote && peek(i_ + 2) == quote) {
          i_ += 3;
          for (int extra = 0; extra < 2 && peek(i_) == quote; ++extra) ++i_;  // """a"""" ends with a quote
          return;
        }
      }
      ++i_;
    }
  }

  void step() {
    const char c = text_[i_];
    const bool line_start = at_line_start_;
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') at_line_start_ = false;
    switch (c) {
      case '\n':
        end_chain();
        header_ = false;
        ++line_;
        line_start_ = ++i_;
        at_line_start_ = true;
        return;
      case ' ': case '\t': case '\r':
        ++i_;
        return;
      case '#':
        end_chain();
        while (i_ < text_.size() && text_[i_] != '\n') ++i_;
        return;
      case '"': case '\'': {
        const std::size_t start = i_;
        const int64_t start_line = line_, start_col = column(i_);
        skip_string();
        token(start, start_line, start_col, i_);
        return;
      }
      case '.':
        if (in_chain_ && !pending_dot_) {
          pending_dot_ = true;
        } else {
          end_chain();
        }
        ++i_;
        return;
      case '=':
        key_ends();
        ++i_;
        return;
      case '[':
        end_chain();
        if (line_start && depth_ == 0) {
          header_ = true;
          if (peek(i_ + 1) == '[') ++i_;
        } else {
          open_value(column(i_));
        }
        ++i_;
        return;
      case ']':
        if (header_) {
          key_ends();
          header_ = false;
          if (peek(i_ + 1) == ']') ++i_;
        } else {
          end_chain();
          if (depth_ > 0) --depth_;
        }
        ++i_;
        return;
      case '{':
        end_chain();
        open_value(column(i_));
        ++i_;
        return;
      case '}':
        end_chain();
        if (depth_ > 0) --depth_;
        ++i_;
        return;
      case ',':
        end_chain();
        ++i_;
        return;
      default: {
        const std::size_t start = i_;
        while (i_ < text_.size() && !ends_bare(text_[i_])) ++i_;
        token(start, line_, column(start), i_);
        return;
      }
    }
  }

  std::string_view text_;
  std::size_t i_ = 0;
  int64_t line_ = 1;
  std::size_t line_start_ = 0;
  bool at_line_start_ = true;
  bool header_ = false;   ///< inside a table header's brackets (not a value's)
  int64_t depth_ = 0;     ///< open arrays and inline tables of the current value
  bool in_chain_ = false;  ///< a run of dotted tokens is being read
  bool pending_dot_ = false;
  int64_t parts_ = 0;
  std::size_t chain_start_ = 0, chain_end_ = 0;
  int64_t chain_line_ = 1, chain_col_ = 1;
  std::optional<TomlLimitViolation> violation_;
};

}  // namespace

std::optional<TomlLimitViolation> check_toml_limits(std::string_view text) { return LimitScanner(text).run(); }

}  // namespace clustersim::sim
