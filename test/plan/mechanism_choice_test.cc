// The mechanism decision table, and warnings that say what is missing.
#include "plan/mechanism_choice.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace plan {
namespace {

using ::testing::HasSubstr;

TEST(ChooseMechanismTest, DecisionTable) {
  struct Row {
    std::string name;
    Trust trust;
    Latency latency;
    bool training;
    bool vm;
    SharingHint hint;
    bool mig;
    Mechanism want;
    bool warns;
  };
  const Trust T = Trust::kTrusted, U = Trust::kUntrusted;
  const Latency S = Latency::kSla, B = Latency::kBestEffort;
  const SharingHint A = SharingHint::kAuto;
  const std::vector<Row> rows = {
      {"untrusted SLA inference on MIG", U, S, false, false, A, true, Mechanism::kMig, false},
      {"untrusted best-effort still gets a boundary", U, B, false, false, A, true, Mechanism::kMig,
       false},
      {"trusted SLA inference on MIG", T, S, false, false, A, true, Mechanism::kMig, false},
      {"trusted best-effort time-slices", T, B, false, false, A, true, Mechanism::kTimeslice,
       false},
      {"trusted best-effort asks for MPS", T, B, false, false, SharingHint::kMps, true,
       Mechanism::kMps, false},
      {"training takes whole GPUs", T, B, true, false, A, true, Mechanism::kExclusive, false},
      {"untrusted training takes whole GPUs", U, S, true, false, A, true, Mechanism::kExclusive,
       false},
      {"untrusted without MIG gets whole GPUs", U, S, false, false, A, false, Mechanism::kExclusive,
       true},
      {"trusted SLA without MIG falls back to MPS", T, S, false, false, A, false, Mechanism::kMps,
       true},
      {"trusted SLA without MIG, time-slicing asked", T, S, false, false, SharingHint::kTimeslice,
       false, Mechanism::kTimeslice, true},
      {"trusted best-effort without MIG", T, B, false, false, A, false, Mechanism::kTimeslice,
       true},
      {"VM boundary is reported, not placed", U, S, false, true, A, true, Mechanism::kVmBoundary,
       true},
      {"VM boundary wins over training", T, B, true, true, A, true, Mechanism::kVmBoundary, true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    WorkloadSpec w;
    w.name = "w";
    w.tenant = "t";
    w.trust = row.trust;
    w.latency = row.latency;
    w.training = row.training;
    w.vm_boundary = row.vm;
    w.sharing = row.hint;
    MechanismChoice c = ChooseMechanism(w, row.mig ? "H100-80GB" : "L4", row.mig);
    EXPECT_EQ(c.mechanism, row.want) << MechanismName(c.mechanism);
    EXPECT_EQ(!c.warnings.empty(), row.warns) << absl::StrJoin(c.warnings, "; ");
    EXPECT_FALSE(c.reasons.empty());
  }
}

TEST(ChooseMechanismTest, WarningsSayWhatIsMissing) {
  WorkloadSpec w;
  w.name = "chat";
  w.tenant = "acme";
  w.trust = Trust::kTrusted;
  w.latency = Latency::kSla;
  MechanismChoice c = ChooseMechanism(w, "L4", false);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("no hardware boundary"));
  w.vm_boundary = true;
  c = ChooseMechanism(w, "H100-80GB", true);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("licensed per concurrent vGPU"));
  EXPECT_THAT(c.warnings[0], HasSubstr("NVIDIA AI Enterprise"));
}

}  // namespace
}  // namespace plan
