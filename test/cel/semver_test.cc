// Semantic versions as semver 2.0.0 defines them: what parses, and precedence (section 11).
#include "cel/semver.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace cel {
namespace {

TEST(SemverTest, ParsesStrictVersions) {
  std::optional<Semver> v = Semver::Parse("1.22.333-rc.1.beta+build.7");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->major, 1u);
  EXPECT_EQ(v->minor, 22u);
  EXPECT_EQ(v->patch, 333u);
  EXPECT_EQ(v->pre_release, (std::vector<std::string>{"rc", "1", "beta"}));
  EXPECT_EQ(v->build, "build.7");
  EXPECT_EQ(v->ToString(), "1.22.333-rc.1.beta+build.7");
  ASSERT_TRUE(Semver::Parse("0.0.0").has_value());
  EXPECT_TRUE(Semver::Parse("18446744073709551615.0.0").has_value());
}

TEST(SemverTest, RefusesWhatSemverRefuses) {
  for (const char* text : {"", "1", "1.2", "1.2.3.4", "v1.2.3", "01.2.3", "1.02.3", "1.2.03",
                           "1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3-a_b", " 1.2.3",
                           "1.2.3 ", "18446744073709551616.0.0", "-1.2.3", "1.2.x"}) {
    EXPECT_FALSE(Semver::Parse(text).has_value()) << "\"" << text << "\"";
  }
}

TEST(SemverTest, PrecedenceOfTheSpecsExample) {
  // Section 11's chain, each lower than the next.
  const std::vector<std::string> chain = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
                                          "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
                                          "1.0.0-rc.1",  "1.0.0",         "1.0.1",
                                          "1.1.0",       "2.0.0",         "10.0.0"};
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    std::optional<Semver> a = Semver::Parse(chain[i]), b = Semver::Parse(chain[i + 1]);
    ASSERT_TRUE(a && b) << chain[i] << " " << chain[i + 1];
    EXPECT_EQ(Semver::Compare(*a, *b), -1) << chain[i] << " < " << chain[i + 1];
    EXPECT_EQ(Semver::Compare(*b, *a), 1) << chain[i + 1] << " > " << chain[i];
  }
  EXPECT_EQ(Semver::Compare(*Semver::Parse("1.0.0+a"), *Semver::Parse("1.0.0+b")), 0)
      << "build metadata never affects precedence";
}

}  // namespace
}  // namespace cel
