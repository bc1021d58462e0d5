// The lexical half of the CEL parser (cel/parse.h): text to tokens, with CEL's string
// literals decoded. Internal to cel/; the first problem ends the token list.
#ifndef GPU_TENANCY_CEL_LEX_H_
#define GPU_TENANCY_CEL_LEX_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cel {

enum class CelTok {
  kEnd,
  kIdent,
  kInt,
  kString,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kDot,
  kComma,
  kQuestion,
  kColon,
  kNot,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kPercent,
};

struct CelToken {
  CelTok kind = CelTok::kEnd;
  size_t offset = 0;
  std::string text;     // identifier name, or the decoded string literal
  uint64_t number = 0;  // an int literal's magnitude (up to 2^63, for -9223372036854775808)
};

// The tokens of `text`, ending in one kEnd. On a problem, `error` says what and where
// ("syntax error at 4: unterminated string", or an unsupported literal: "double literal") and
// the tokens are incomplete.
std::vector<CelToken> LexCel(absl::string_view text, std::string* error);

}  // namespace cel

#endif  // GPU_TENANCY_CEL_LEX_H_
