// What a DeviceClass hands out, read from the devices the cluster publishes: the modes, MIG
// profiles and examples admission judges a selector-less way in by (topology/dra/class_offer.h).
#include "topology/dra/class_offer.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "test/topology/dra/devices.h"

namespace class_offer_test {
namespace {

using testing_dra::NodeSlice;
using testing_dra::NvidiaDevice;
using testing_dra::SharedGpu;
using topology::DraClassOffer;
using topology::DraDeviceClass;
using topology::DraState;
using topology::MakeDraState;
using topology::OfferOfClass;
using topology::SharingMode;

constexpr char kGpus[] = "device.attributes['gpu.nvidia.com'].type == 'gpu'";
constexpr char kMig[] = "device.attributes['gpu.nvidia.com'].type == 'mig'";

// node-a: two whole GPUs, one of them multi-allocatable; node-b: three MIG devices, two of
// one profile. Classes: whole GPUs, MIG devices, everything of the driver, and one whose
// selector reads an attribute no device has (an error for every device, so none is counted).
DraState Cluster() {
  std::vector<topology::DraSlice> slices = {
      NodeSlice("node-a", {NvidiaDevice("node-a", "gpu-0"), SharedGpu("node-a", "gpu-1", 80)}),
      NodeSlice("node-b", {NvidiaDevice("node-b", "mig-0", "mig", "3g.40gb"),
                           NvidiaDevice("node-b", "mig-1", "mig", "1g.10gb"),
                           NvidiaDevice("node-b", "mig-2", "mig", "1g.10gb")})};
  std::vector<DraDeviceClass> classes = {
      {"gpu.nvidia.com", {kGpus}, ""},
      {"mig.nvidia.com", {kMig}, ""},
      {"all.nvidia.com", {"device.driver == 'gpu.nvidia.com'"}, ""},
      {"broken.example.com", {"device.attributes['example.com'].missing == 'x'"}, ""}};
  return MakeDraState(slices, {}, std::move(classes));
}

TEST(ClassOfferTest, WholeGpusAreExclusiveAndAMultiAllocatableOneIsShared) {
  const DraState dra = Cluster();
  const DraClassOffer offer = OfferOfClass(dra, "gpu.nvidia.com");
  EXPECT_TRUE(offer.class_exists);
  EXPECT_EQ(offer.devices, 2);
  EXPECT_TRUE(offer.modes.Has(SharingMode::kExclusive));
  EXPECT_TRUE(offer.modes.Has(SharingMode::kTimeslice));
  EXPECT_FALSE(offer.modes.Has(SharingMode::kMig));
  EXPECT_TRUE(offer.mig_profiles.empty());
  const std::vector<std::pair<SharingMode, std::string>> examples = {
      {SharingMode::kExclusive, "gpu.nvidia.com/node-a/gpu-0"},
      {SharingMode::kTimeslice, "gpu.nvidia.com/node-a/gpu-1"}};
  EXPECT_EQ(offer.examples, examples);
}

TEST(ClassOfferTest, MigProfilesAreSortedAndListedOnce) {
  const DraState dra = Cluster();
  const DraClassOffer offer = OfferOfClass(dra, "mig.nvidia.com");
  EXPECT_EQ(offer.devices, 3);
  EXPECT_TRUE(offer.modes.Has(SharingMode::kMig));
  EXPECT_FALSE(offer.modes.Has(SharingMode::kExclusive));
  EXPECT_EQ(offer.mig_profiles, (std::vector<std::string>{"1g.10gb", "3g.40gb"}));
  ASSERT_EQ(offer.examples.size(), 1u);
  EXPECT_EQ(offer.examples[0].second, "gpu.nvidia.com/node-b/mig-0");
}

TEST(ClassOfferTest, AClassOfEverythingOffersEveryMode) {
  const DraState dra = Cluster();
  const DraClassOffer offer = OfferOfClass(dra, "all.nvidia.com");
  EXPECT_EQ(offer.devices, 5);
  EXPECT_TRUE(offer.modes.Has(SharingMode::kExclusive));
  EXPECT_TRUE(offer.modes.Has(SharingMode::kTimeslice));
  EXPECT_TRUE(offer.modes.Has(SharingMode::kMig));
  EXPECT_EQ(offer.examples.size(), 3u);
}

TEST(ClassOfferTest, AnUnknownClassOrUndecidableSelectorOffersNothing) {
  const DraState dra = Cluster();
  const DraClassOffer unknown = OfferOfClass(dra, "nope.example.com");
  EXPECT_FALSE(unknown.class_exists);
  EXPECT_EQ(unknown.devices, 0);
  const DraClassOffer broken = OfferOfClass(dra, "broken.example.com");
  EXPECT_TRUE(broken.class_exists);
  EXPECT_EQ(broken.devices, 0);
  EXPECT_TRUE(broken.examples.empty());
  EXPECT_EQ(OfferOfClass(DraState{}, "gpu.nvidia.com").devices, 0);
}

TEST(ClassOfferTest, ModesAndWellKnownClassNames) {
  topology::DraDevice mig = NvidiaDevice("n", "m", "mig", "1g.10gb");
  EXPECT_EQ(topology::DraDeviceMode(mig), SharingMode::kMig);
  mig.allow_multiple_allocations = true;
  EXPECT_EQ(topology::DraDeviceMode(mig), SharingMode::kMigShared);
  EXPECT_EQ(topology::DraModeWords(SharingMode::kMigShared),
            "a MIG device other claims may hold at the same time");
  EXPECT_EQ(topology::WellKnownClassDeviceType("gpu.nvidia.com"), "gpu");
  EXPECT_EQ(topology::WellKnownClassDeviceType("mig.nvidia.com"), "mig");
  EXPECT_EQ(topology::WellKnownClassDeviceType("vfio.gpu.nvidia.com"), "vfio");
  EXPECT_EQ(topology::WellKnownClassDeviceType("example.com"), "");
}

}  // namespace
}  // namespace class_offer_test
