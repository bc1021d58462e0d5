// webhook/verdict: the one-line denial texts every rule shares.
#include "webhook/verdict.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace {

using webhook::DenialMessage;
using webhook::MakeViolation;
using webhook::OneLine;
using webhook::TenantPhrase;
using webhook::Violation;

TEST(VerdictTest, OneLineTurnsControlCharactersIntoSpaces) {
  EXPECT_EQ(OneLine("plain text"), "plain text");
  EXPECT_EQ(OneLine("a\nb\r\tc"), "a b  c");
  EXPECT_EQ(OneLine(std::string("nul\0here\x7f", 9)), "nul here ");
  EXPECT_EQ(OneLine("naïve"), "naïve") << "UTF-8 bytes above 0x7f stay";
  EXPECT_EQ(OneLine(""), "");
}

TEST(VerdictTest, AViolationCarriesItsRuleFirstOnOneLine) {
  Violation v = MakeViolation("tier-shared", "container \"engine\"\nrequests 2");
  EXPECT_EQ(v.rule, "tier-shared");
  EXPECT_EQ(v.message, "[tier-shared] container \"engine\" requests 2");
}

TEST(VerdictTest, TheDenialIsTheFirstViolationAndHowManyMore) {
  EXPECT_EQ(DenialMessage({}), "");
  std::vector<Violation> one = {MakeViolation("device-access", "privileged")};
  EXPECT_EQ(DenialMessage(one), "[device-access] privileged");
  std::vector<Violation> three = {MakeViolation("a", "first"), MakeViolation("b", "second"),
                                  MakeViolation("c", "third")};
  EXPECT_EQ(DenialMessage(three), "[a] first (and 2 more)");
}

TEST(VerdictTest, TenantPhraseNamesTheTenantOrTheNamespace) {
  topology::Tier untrusted{"untrusted", {}, false, {}};
  topology::Tenant acme;
  acme.name = "acme";
  EXPECT_EQ(TenantPhrase({"acme", &acme, &untrusted}, "acme-prod"),
            "tenant \"acme\" (tier untrusted)");
  topology::Tier fallback{"default", {}, false, {}};
  EXPECT_EQ(TenantPhrase({"unknown", nullptr, &fallback}, "scratch"),
            "namespace \"scratch\" (no tenant, tier default)");
  EXPECT_EQ(TenantPhrase({"unknown", nullptr, nullptr}, "scratch"),
            "namespace \"scratch\" (no tenant, tier none)");
}

}  // namespace
