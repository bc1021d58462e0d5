// serve's guard against stale webhook conditions. The matchConditions of the two webhook
// configurations are generated from the policy (webhook/match_conditions.h); when the policy
// changes and nobody applies `gpu-tenancy webhook-config` again, kube-apiserver keeps skipping
// requests the rules would now act on, and nothing else would say so. Against a live API
// server, serve GETs its own configurations at start, after each policy reload and every
// resync period, compares them with what its policy makes, and reports a mismatch as an error
// log line and the gauge gpu_tenancy_webhook_conditions_current{webhook} (1 current, 0 stale or
// missing; no sample before the first answer, or while the configuration cannot be read).
// Readiness does not depend on it: a stale condition must not take the webhooks down.
//
//   WebhookGuard guard(*api, {"gpu-tenancy", "gpu-tenancy", std::chrono::minutes(5)});
//   guard.Start(policy);        // checks at once, then every period
//   guard.Recheck(new_policy);  // after a reload
//   guard.Collect(metrics_text);
//
// Thread-safe. The gauge's values are atomics; everything else the checking thread shares is
// guarded by mu_.
#ifndef GPU_TENANCY_CMD_WEBHOOK_GUARD_H_
#define GPU_TENANCY_CMD_WEBHOOK_GUARD_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "common/prometheus_text.h"
#include "kube/api.h"
#include "topology/policy.h"

namespace cmd {

struct WebhookGuardOptions {
  std::string validating_config = "gpu-tenancy";  // ValidatingWebhookConfiguration name
  std::string mutating_config = "gpu-tenancy";    // MutatingWebhookConfiguration name
  std::chrono::milliseconds period{std::chrono::minutes(5)};
};

class WebhookGuard {
 public:
  WebhookGuard(kube::Api& api, WebhookGuardOptions options);
  ~WebhookGuard();  // Stop()

  void Start(std::shared_ptr<const topology::Policy> policy);
  // Checks again now, against `policy` (a reload).
  void Recheck(std::shared_ptr<const topology::Policy> policy);
  void Stop();

  // The gauge, one sample per webhook whose configuration has been read.
  void Collect(common::MetricsText& out) const;

 private:
  void Run();
  void CheckAll(const topology::Policy& policy);

  kube::Api& api_;
  const WebhookGuardOptions options_;
  // Guards the policy to check against and the requests to the checking thread (a recheck, a
  // stop); wake_ tells that thread one of them changed. Never held across an API call.
  common::Mutex mu_;
  common::CondVar wake_;
  std::shared_ptr<const topology::Policy> policy_ ABSL_GUARDED_BY(mu_);
  bool recheck_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
  // Per webhook (validate, mutate): -1 unknown, 0 stale or missing, 1 current.
  std::atomic<int> current_[2] = {-1, -1};
};

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_WEBHOOK_GUARD_H_
