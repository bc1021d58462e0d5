// The policy loader: YAML text in (common::LoadPolicy), a validated topology::Policy or an
// InvalidArgument out. The same bytes also go through common::LoadCatalog (the other YAML
// config loader, same Fields reader). A policy that loads must be usable: every namespace of
// the demo cluster resolves to a tenant whose tier exists, and the demo cluster's snapshot can
// be built with it (pool derivation, canary reserve).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"

namespace {

const topology::ClusterData& Demo() {
  static const topology::ClusterData* const data =
      new topology::ClusterData(fuzz::MustLoadDemoCluster());
  return *data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(text);
  if (policy.ok()) {
    const topology::ClusterData& demo = Demo();
    for (const auto& [ns, labels] : demo.namespace_labels) {
      topology::TenantRef ref = topology::ResolveTenant(*policy, ns, labels);
      if (ref.tier) FUZZ_CHECK(policy->FindTier(ref.tier->name) == ref.tier, ns);
    }
    topology::ClusterSnapshot snapshot =
        topology::BuildSnapshot(demo, common::BuiltinCatalog(), *policy);
    (void)snapshot;
  } else {
    FUZZ_CHECK(policy.status().code() == absl::StatusCode::kInvalidArgument,
               policy.status().ToString());
  }
  absl::StatusOr<topology::Catalog> catalog = common::LoadCatalog(text);
  if (!catalog.ok()) {
    FUZZ_CHECK(catalog.status().code() == absl::StatusCode::kInvalidArgument,
               catalog.status().ToString());
  }
  return 0;
}
