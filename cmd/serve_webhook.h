// serve's admission routes: /webhook/validate and /webhook/mutate over the live state, with
// the per-tenant claim quota records (when there is an API server), the audit line of each
// denial and the review counter (labelled by webhook, outcome and rule code). Testable alone:
// give it a state, the records (or none) and an audit log (or none), call its routes' handlers.
//
//   WebhookService webhooks(cluster.state(), cluster.usage_records(), audit);
//   std::vector<server::PostRoute> routes = webhooks.Routes();
//
// The routes and Collect are thread-safe; the service must outlive the server serving them.
#ifndef GPU_TENANCY_CMD_SERVE_WEBHOOK_H_
#define GPU_TENANCY_CMD_SERVE_WEBHOOK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/audit_log.h"
#include "common/mutex.h"
#include "common/prometheus_text.h"
#include "kube/cluster_state.h"
#include "server/metrics.h"
#include "server/server.h"
#include "webhook/claim_quota.h"
#include "webhook/claim_selectors.h"
#include "webhook/review.h"

namespace cmd {

class WebhookService {
 public:
  // `records` empty: claim quotas count against the state alone (a fixed cluster). `now_unix`
  // dates the reservations in the records.
  WebhookService(const kube::ClusterState& state, webhook::RecordUpdate records,
                 common::AuditLog* audit, std::function<int64_t()> now_unix);
  ~WebhookService();  // stops the budget refills, after the one under way
  WebhookService(const WebhookService&) = delete;
  WebhookService& operator=(const WebhookService&) = delete;

  std::vector<server::PostRoute> Routes();
  void Collect(common::MetricsText& out) const { admissions_.Collect(out); }

 private:
  // `may_wait` false: on an event loop; nullopt when the review needs a usage record.
  std::optional<server::Reply> Review(absl::string_view body, webhook::ReviewKind kind,
                                      bool may_wait);
  // The "budget-refill" thread: replaces the budgets reviews found due, one at a time, so that
  // the write is off every claim's path (webhook::RefillClaimBudget).
  void RefillBudgets();
  void AskRefill(const std::string& tenant, const topology::QuotaUsage& shape);

  const kube::ClusterState& state_;
  webhook::RecordUpdate records_;
  webhook::ClaimCountCache claim_counts_;
  // The claim selectors of the policy reviews last saw, replaced when a review sees another.
  std::atomic<std::shared_ptr<const webhook::TenantSelectorPlans>> selector_plans_;
  webhook::ClaimBudgets budgets_;  // used only with `records_`
  common::AuditLog* audit_;
  std::function<int64_t()> now_unix_;
  common::Mutex refill_mu_;
  common::CondVar refill_asked_;
  std::map<std::string, topology::QuotaUsage> refills_ ABSL_GUARDED_BY(refill_mu_);  // by tenant
  bool stopping_ ABSL_GUARDED_BY(refill_mu_) = false;
  std::thread refiller_;  // with `records_` only
  server::LabeledCounter admissions_{"gpu_tenancy_admission_reviews_total",
                                     "Admission reviews answered, by webhook, outcome and rule.",
                                     {"webhook", "allowed", "rule"}};
};

}  // namespace cmd

#endif  // GPU_TENANCY_CMD_SERVE_WEBHOOK_H_
