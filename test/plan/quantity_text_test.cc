// Sizes as people read them: needs round up, capacities round down (as nvidia-smi prints).
#include "plan/quantity_text.h"

#include "gtest/gtest.h"

namespace plan {
namespace {

TEST(GiBTextTest, NeedsRoundUpCapacitiesRoundDown) {
  EXPECT_EQ(GiBText(9984 * kMiB, false), "9.75 GiB");
  EXPECT_EQ(GiBText(20096 * kMiB, false), "19.62 GiB");  // as nvidia-smi -lgip prints it
  EXPECT_EQ(GiBText(20096 * kMiB, true), "19.63 GiB");
  EXPECT_EQ(GiBText(kGiB - 1, true), "1.00 GiB");
  EXPECT_EQ(GiBText(0, true), "0.00 GiB");
}

TEST(MiQuantityTest, AMiBCountAsAKubernetesQuantity) {
  EXPECT_EQ(MiQuantity(40960), "40960Mi");
  EXPECT_EQ(MiQuantity(0), "0Mi");
}

TEST(CeilDivTest, AnyRemainderTakesOneMore) {
  EXPECT_EQ(CeilDiv(80, 40), 2);
  EXPECT_EQ(CeilDiv(81, 40), 3);
  EXPECT_EQ(CeilDiv(1, 40), 1);
}

}  // namespace
}  // namespace plan
