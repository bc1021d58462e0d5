#include "cel/lex.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace cel {
namespace {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits the text into tokens; the first problem ends it, with `error` set.
class Lexer {
 public:
  explicit Lexer(absl::string_view in) : in_(in) {}

  std::vector<CelToken> Run() {
    std::vector<CelToken> out;
    while (error_.empty()) {
      SkipSpaceAndComments();
      CelToken t;
      t.offset = pos_;
      if (pos_ >= in_.size()) {
        out.push_back(t);
        break;
      }
      if (!Next(&t)) break;
      out.push_back(std::move(t));
    }
    return out;
  }
  const std::string& error() const { return error_; }

 private:
  void Fail(size_t at, absl::string_view what) {
    if (error_.empty()) error_ = absl::StrCat("syntax error at ", at, ": ", what);
  }
  void Unsupported(absl::string_view what) {
    if (error_.empty()) error_ = std::string(what);
  }
  char At(size_t i) const { return i < in_.size() ? in_[i] : '\0'; }

  void SkipSpaceAndComments() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else if (c == '/' && At(pos_ + 1) == '/') {
        while (pos_ < in_.size() && in_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool Next(CelToken* t) {
    const char c = in_[pos_];
    const char d = At(pos_ + 1);
    auto two = [&](CelTok kind) {
      t->kind = kind;
      pos_ += 2;
      return true;
    };
    auto one = [&](CelTok kind) {
      t->kind = kind;
      ++pos_;
      return true;
    };
    if (absl::ascii_isalpha(c) || c == '_') return IdentOrString(t);
    if (absl::ascii_isdigit(c)) return Number(t);
    switch (c) {
      case '"':
      case '\'':
        return String(t, /*raw=*/false);
      case '(':
        return one(CelTok::kLParen);
      case ')':
        return one(CelTok::kRParen);
      case '[':
        return one(CelTok::kLBracket);
      case ']':
        return one(CelTok::kRBracket);
      case '{':
        return one(CelTok::kLBrace);
      case '}':
        return one(CelTok::kRBrace);
      case ',':
        return one(CelTok::kComma);
      case '?':
        return one(CelTok::kQuestion);
      case ':':
        return one(CelTok::kColon);
      case '+':
        return one(CelTok::kPlus);
      case '-':
        return one(CelTok::kMinus);
      case '*':
        return one(CelTok::kStar);
      case '/':
        return one(CelTok::kSlash);
      case '%':
        return one(CelTok::kPercent);
      case '.':
        if (absl::ascii_isdigit(d)) {
          Unsupported("double literal");
          return false;
        }
        return one(CelTok::kDot);
      case '!':
        return d == '=' ? two(CelTok::kNe) : one(CelTok::kNot);
      case '=':
        if (d == '=') return two(CelTok::kEq);
        break;
      case '<':
        return d == '=' ? two(CelTok::kLe) : one(CelTok::kLt);
      case '>':
        return d == '=' ? two(CelTok::kGe) : one(CelTok::kGt);
      case '&':
        if (d == '&') return two(CelTok::kAnd);
        break;
      case '|':
        if (d == '|') return two(CelTok::kOr);
        break;
      default:
        break;
    }
    Fail(pos_, absl::StrCat("unexpected character '", absl::CHexEscape(in_.substr(pos_, 1)), "'"));
    return false;
  }

  bool IdentOrString(CelToken* t) {
    size_t end = pos_;
    while (end < in_.size() && (absl::ascii_isalnum(in_[end]) || in_[end] == '_')) ++end;
    const absl::string_view word = in_.substr(pos_, end - pos_);
    const char next = At(end);
    if ((next == '"' || next == '\'') && word.size() <= 2) {
      std::string lower = absl::AsciiStrToLower(word);
      if (lower == "r") {
        pos_ = end;
        return String(t, /*raw=*/true);
      }
      if (lower == "b" || lower == "rb" || lower == "br") {
        Unsupported("bytes literal");
        return false;
      }
    }
    t->kind = CelTok::kIdent;
    t->text = std::string(word);
    pos_ = end;
    return true;
  }

  bool Number(CelToken* t) {
    const size_t start = pos_;
    uint64_t value = 0;
    bool overflow = false;
    auto add = [&](uint64_t base, int digit) {
      if (value > (UINT64_MAX - digit) / base) overflow = true;
      value = value * base + static_cast<uint64_t>(digit);
    };
    if (in_[pos_] == '0' && (At(pos_ + 1) == 'x' || At(pos_ + 1) == 'X')) {
      pos_ += 2;
      if (HexDigit(At(pos_)) < 0) {
        Fail(start, "hex literal without digits");
        return false;
      }
      while (HexDigit(At(pos_)) >= 0) add(16, HexDigit(in_[pos_++]));
    } else {
      while (absl::ascii_isdigit(At(pos_))) add(10, in_[pos_++] - '0');
      if ((At(pos_) == '.' && absl::ascii_isdigit(At(pos_ + 1))) || At(pos_) == 'e' ||
          At(pos_) == 'E') {
        Unsupported("double literal");
        return false;
      }
    }
    if (At(pos_) == 'u' || At(pos_) == 'U') {
      Unsupported("unsigned int literal");
      return false;
    }
    if (absl::ascii_isalnum(At(pos_)) || At(pos_) == '_') {
      Fail(pos_, "malformed number");
      return false;
    }
    if (overflow || value > (uint64_t{1} << 63)) {
      Fail(start, "int literal out of range");
      return false;
    }
    t->kind = CelTok::kInt;
    t->number = value;
    return true;
  }

  // At the opening quote. Handles '...', "...", '''...''', """...""" and the escapes of the
  // CEL spec (\\ \" \' \` \? \a \b \f \n \r \t \v, \xHH, \uHHHH, \UHHHHHHHH, octal \OOO).
  bool String(CelToken* t, bool raw) {
    const size_t start = pos_;
    const char quote = in_[pos_];
    const bool triple = At(pos_ + 1) == quote && At(pos_ + 2) == quote;
    pos_ += triple ? 3 : 1;
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) {
        Fail(start, "unterminated string");
        return false;
      }
      const char c = in_[pos_];
      if (c == quote && (!triple || (At(pos_ + 1) == quote && At(pos_ + 2) == quote))) {
        pos_ += triple ? 3 : 1;
        break;
      }
      if (!triple && (c == '\n' || c == '\r')) {
        Fail(start, "newline in string");
        return false;
      }
      if (c != '\\' || raw) {
        out.push_back(c);
        ++pos_;
        continue;
      }
      if (!Escape(&out)) return false;
    }
    t->kind = CelTok::kString;
    t->text = std::move(out);
    return true;
  }

  bool Escape(std::string* out) {
    const size_t at = pos_;
    const char e = At(pos_ + 1);
    pos_ += 2;
    switch (e) {
      case '\\':
        out->push_back('\\');
        return true;
      case '"':
        out->push_back('"');
        return true;
      case '\'':
        out->push_back('\'');
        return true;
      case '`':
        out->push_back('`');
        return true;
      case '?':
        out->push_back('?');
        return true;
      case 'a':
        out->push_back('\a');
        return true;
      case 'b':
        out->push_back('\b');
        return true;
      case 'f':
        out->push_back('\f');
        return true;
      case 'n':
        out->push_back('\n');
        return true;
      case 'r':
        out->push_back('\r');
        return true;
      case 't':
        out->push_back('\t');
        return true;
      case 'v':
        out->push_back('\v');
        return true;
      case 'x':
      case 'X':
      case 'u':
      case 'U': {
        const int digits = (e == 'x' || e == 'X') ? 2 : (e == 'u' ? 4 : 8);
        uint32_t cp = 0;
        for (int i = 0; i < digits; ++i) {
          const int h = HexDigit(At(pos_));
          if (h < 0) {
            Fail(at, "bad escape sequence");
            return false;
          }
          cp = cp * 16 + static_cast<uint32_t>(h);
          ++pos_;
        }
        if (digits == 2) {
          AppendUtf8(cp, out);
          return true;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          Fail(at, "invalid code point in escape");
          return false;
        }
        AppendUtf8(cp, out);
        return true;
      }
      default:
        break;
    }
    if (e >= '0' && e <= '3' && At(pos_) >= '0' && At(pos_) <= '7' && At(pos_ + 1) >= '0' &&
        At(pos_ + 1) <= '7') {
      const uint32_t cp = (e - '0') * 64 + (At(pos_) - '0') * 8 + (At(pos_ + 1) - '0');
      pos_ += 2;
      AppendUtf8(cp, out);
      return true;
    }
    Fail(at, "bad escape sequence");
    return false;
  }

  absl::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::vector<CelToken> LexCel(absl::string_view text, std::string* error) {
  Lexer lexer(text);
  std::vector<CelToken> tokens = lexer.Run();
  *error = lexer.error();
  return tokens;
}

}  // namespace cel
