// Shared by the libFuzzer targets: the fixed inputs every run needs (the demo cluster, the demo
// and webhook-test policies, embedded at build time like the binary embeds its demo data) and a
// check that crashes loudly, so libFuzzer records the input that broke an invariant.
#ifndef GPU_TENANCY_FUZZ_FUZZ_UTIL_H_
#define GPU_TENANCY_FUZZ_FUZZ_UTIL_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config_loader.h"
#include "topology/policy.h"
#include "topology/snapshot.h"
#include "wire/k8s_codec.h"

absl::string_view FuzzDemoCluster();    // cmd/demo/cluster.yaml
absl::string_view FuzzDemoPolicy();     // cmd/demo/policy.yaml
absl::string_view FuzzWebhookPolicy();  // test/testdata/webhook/policy.yaml

namespace fuzz {

// An invariant broke: print what and crash (libFuzzer saves the input as crash-<sha1>).
[[noreturn]] inline void Fail(absl::string_view what, absl::string_view detail = "") {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  __builtin_trap();
}

#define FUZZ_CHECK(cond, detail)                                  \
  do {                                                            \
    if (!(cond)) ::fuzz::Fail("FUZZ_CHECK(" #cond ")", (detail)); \
  } while (0)

// The built-in data must load; if it does not the fuzz build itself is broken.
inline topology::Policy MustLoadPolicy(absl::string_view text) {
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(text);
  if (!policy.ok()) Fail("embedded policy does not load", policy.status().message());
  return *std::move(policy);
}

inline topology::ClusterData MustLoadDemoCluster() {
  absl::StatusOr<topology::ClusterData> data = wire::ParseClusterText(FuzzDemoCluster());
  if (!data.ok()) Fail("embedded demo cluster does not load", data.status().message());
  return *std::move(data);
}

// The webhook targets' setting: the webhook tests' policy and the demo cluster's namespace
// labels (bank-prod is tenant bank by label). Built once per process.
struct WebhookFixture {
  topology::Policy policy;
  topology::ClusterSnapshot snapshot;
};

inline const WebhookFixture& GetWebhookFixture() {
  static const WebhookFixture* const f = [] {
    auto* out = new WebhookFixture{MustLoadPolicy(FuzzWebhookPolicy()), {}};
    out->snapshot =
        topology::BuildSnapshot(MustLoadDemoCluster(), common::BuiltinCatalog(), out->policy);
    return out;
  }();
  return *f;
}

}  // namespace fuzz

#endif  // GPU_TENANCY_FUZZ_FUZZ_UTIL_H_
