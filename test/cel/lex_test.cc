// The CEL lexer on its own: token kinds and offsets, the string literal forms CEL has (quotes,
// raw, triple-quoted, escapes), int literals up to -2^63, and the errors that end the list.
#include "cel/lex.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cel {
namespace {

std::vector<CelTok> Kinds(const std::vector<CelToken>& tokens) {
  std::vector<CelTok> out;
  for (const CelToken& t : tokens) out.push_back(t.kind);
  return out;
}

TEST(CelLexTest, TokensAndOffsets) {
  std::string error;
  std::vector<CelToken> t = LexCel("device.driver == 'a' && x[1] != -2", &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(Kinds(t),
            (std::vector<CelTok>{CelTok::kIdent, CelTok::kDot, CelTok::kIdent, CelTok::kEq,
                                 CelTok::kString, CelTok::kAnd, CelTok::kIdent, CelTok::kLBracket,
                                 CelTok::kInt, CelTok::kRBracket, CelTok::kNe, CelTok::kMinus,
                                 CelTok::kInt, CelTok::kEnd}));
  EXPECT_EQ(t[0].text, "device");
  EXPECT_EQ(t[2].offset, 7u);
  EXPECT_EQ(t[4].text, "a");
  EXPECT_EQ(t[8].number, 1u);
  EXPECT_EQ(t[12].number, 2u);
}

TEST(CelLexTest, EveryOperator) {
  std::string error;
  std::vector<CelToken> t = LexCel("( ) [ ] { } . , ? : ! == != < <= > >= && || + - * / %", &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(
      Kinds(t),
      (std::vector<CelTok>{
          CelTok::kLParen, CelTok::kRParen, CelTok::kLBracket, CelTok::kRBracket, CelTok::kLBrace,
          CelTok::kRBrace, CelTok::kDot,    CelTok::kComma,    CelTok::kQuestion, CelTok::kColon,
          CelTok::kNot,    CelTok::kEq,     CelTok::kNe,       CelTok::kLt,       CelTok::kLe,
          CelTok::kGt,     CelTok::kGe,     CelTok::kAnd,      CelTok::kOr,       CelTok::kPlus,
          CelTok::kMinus,  CelTok::kStar,   CelTok::kSlash,    CelTok::kPercent,  CelTok::kEnd}));
}

TEST(CelLexTest, StringLiteralsAreDecoded) {
  struct Case {
    std::string source;
    std::string decoded;
  };
  const std::vector<Case> cases = {
      {R"('single')", "single"},
      {R"("double")", "double"},
      {R"('it\'s')", "it's"},
      {R"("tab\there")", "tab\there"},
      {R"('\x41\101\u0042')", "AAB"},
      {R"(r'raw\n')", "raw\\n"},
      {R"(R"raw\x41")", "raw\\x41"},
      {"'''tri'ple'''", "tri'ple"},
      {"\"\"\"two\nlines\"\"\"", "two\nlines"},
      {R"('1g\x2e10gb')", "1g.10gb"},
  };
  for (const Case& c : cases) {
    std::string error;
    std::vector<CelToken> t = LexCel(c.source, &error);
    ASSERT_TRUE(error.empty()) << c.source << ": " << error;
    ASSERT_EQ(t.size(), 2u) << c.source;
    EXPECT_EQ(t[0].kind, CelTok::kString) << c.source;
    EXPECT_EQ(t[0].text, c.decoded) << c.source;
  }
}

TEST(CelLexTest, IntLiteralsUpToTheMostNegative) {
  std::string error;
  std::vector<CelToken> t = LexCel("9223372036854775808 0x1F 0", &error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(t[0].number, 9223372036854775808u);  // only valid after a unary minus
  EXPECT_EQ(t[1].number, 31u);
  EXPECT_EQ(t[2].number, 0u);
}

TEST(CelLexTest, ProblemsEndTheListAndSayWhere) {
  struct Case {
    std::string source;
    std::string error_has;
  };
  const std::vector<Case> cases = {
      {"'open", "unterminated"},
      {"a # b", "at 2"},
      {"1.5", "double"},
      {"18446744073709551616", "at 0"},
      {R"('\q')", "at 1: bad escape sequence"},
  };
  for (const Case& c : cases) {
    std::string error;
    LexCel(c.source, &error);
    EXPECT_NE(error.find(c.error_has), std::string::npos)
        << c.source << ": \"" << error << "\" lacks \"" << c.error_has << "\"";
  }
}

}  // namespace
}  // namespace cel
