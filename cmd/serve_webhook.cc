#include "cmd/serve_webhook.h"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "wire/extender_codec.h"

namespace cmd {

namespace {

// Names this process's admission budgets in the usage records: random, so that a restarted
// replica never mistakes its previous run's budget for its own (webhook/claim_budget.h).
std::string ProcessToken() {
  std::random_device random;
  return absl::StrFormat("%08x%08x", random(), random());
}

}  // namespace

WebhookService::WebhookService(const kube::ClusterState& state, webhook::RecordUpdate records,
                               common::AuditLog* audit, std::function<int64_t()> now_unix)
    : state_(state),
      records_(std::move(records)),
      budgets_(ProcessToken()),
      audit_(audit),
      now_unix_(std::move(now_unix)) {
  if (records_) refiller_ = std::thread([this] { RefillBudgets(); });
}

WebhookService::~WebhookService() {
  {
    common::MutexLock lock(&refill_mu_);
    stopping_ = true;
  }
  refill_asked_.NotifyAll();
  if (refiller_.joinable()) refiller_.join();
}

void WebhookService::AskRefill(const std::string& tenant, const topology::QuotaUsage& shape) {
  {
    common::MutexLock lock(&refill_mu_);
    refills_.insert_or_assign(tenant, shape);
  }
  refill_asked_.NotifyOne();
}

void WebhookService::RefillBudgets() {
  common::NameThisThread("budget-refill");
  while (true) {
    std::string tenant;
    topology::QuotaUsage shape;
    {
      common::MutexLock lock(&refill_mu_);
      while (!stopping_ && refills_.empty()) refill_asked_.Wait(&refill_mu_);
      if (stopping_) return;
      auto next = refills_.extract(refills_.begin());
      tenant = std::move(next.key());
      shape = std::move(next.mapped());
    }
    std::shared_ptr<const topology::ModelState> s = state_.Current();
    if (!s) continue;
    webhook::ClaimQuotaContext context;
    context.update = records_;
    context.now_unix = now_unix_();
    context.counts = &claim_counts_;
    context.budgets = &budgets_;
    absl::Status refilled =
        webhook::RefillClaimBudget(*s->snapshot, *s->policy, tenant, shape, context);
    if (!refilled.ok()) {
      // The budget stays closed: the tenant's next claim goes through the record and is denied
      // with the reason if the record still cannot be written.
      common::Log(common::LogLevel::kWarn, "admission budget refill failed",
                  {{"tenant", tenant}, {"error", refilled.message()}});
    }
  }
}

std::vector<server::PostRoute> WebhookService::Routes() {
  std::vector<server::PostRoute> routes;
  for (auto [path, kind] : {std::pair{"/webhook/validate", webhook::ReviewKind::kValidate},
                            std::pair{"/webhook/mutate", webhook::ReviewKind::kMutate}}) {
    // Only the validation of a ResourceClaim may reserve quota in a usage record, a round trip
    // to the API server; a denial's audit line is a write(2) that a full disk or pipe can stall.
    const bool writes_records = records_ && kind == webhook::ReviewKind::kValidate;
    server::PostRoute route{
        path, [this, kind = kind](absl::string_view body) { return *Review(body, kind, true); },
        /*waits_on_io=*/audit_ != nullptr || writes_records};
    if (!audit_ && writes_records) {
      // Most claims of a tenant with a quota are admitted from the replica's budget, in memory
      // (webhook/claim_budget.h), and every other review touches no record: tried on the
      // connection's loop first, sparing two thread wake-ups; a worker takes what needs the
      // record.
      route.on_loop_first = [this, kind = kind](absl::string_view body) {
        return Review(body, kind, false);
      };
    }
    routes.push_back(std::move(route));
  }
  return routes;
}

std::optional<server::Reply> WebhookService::Review(absl::string_view body,
                                                    webhook::ReviewKind kind, bool may_wait) {
  std::shared_ptr<const topology::ModelState> s = state_.Current();
  if (!s) {
    // Tenants resolve through namespace labels: without them we cannot judge, and failing
    // closed is the policy's promise.
    return server::Reply{503, wire::EncodeHttpError("gpu-tenancy: cache not synced"), {}};
  }
  webhook::ClaimQuotaContext claim_quota;
  claim_quota.now_unix = now_unix_();
  claim_quota.update = records_;
  claim_quota.counts = &claim_counts_;
  claim_quota.budgets = records_ ? &budgets_ : nullptr;
  if (records_) {
    claim_quota.refill_ahead = [this](const std::string& tenant,
                                      const topology::QuotaUsage& shape) {
      AskRefill(tenant, shape);
    };
  }
  bool stopped_for_io = false;
  if (!may_wait) claim_quota.stopped_for_io = &stopped_for_io;
  std::shared_ptr<const webhook::TenantSelectorPlans> plans = selector_plans_.load();
  if (!plans || &plans->policy() != s->policy.get()) {
    plans = std::make_shared<const webhook::TenantSelectorPlans>(s->policy);
    selector_plans_.store(plans);
  }
  webhook::ReviewOutcome r =
      webhook::Review(body, kind, *s->policy, *s->snapshot, claim_quota, plans.get());
  if (stopped_for_io) return std::nullopt;
  const bool validate = kind == webhook::ReviewKind::kValidate;
  if (r.http_status == 200) {
    admissions_.Add({validate ? "validate" : "mutate", r.allowed ? "true" : "false", r.rule});
  }
  if (audit_ && r.http_status == 200 && !r.allowed) {
    common::AdmissionDenialAudit a;
    a.webhook = validate ? common::AdmissionDenialAudit::Webhook::kValidate
                         : common::AdmissionDenialAudit::Webhook::kMutate;
    a.kind = r.kind;
    a.namespace_name = r.namespace_name;
    a.name = r.name;
    a.tenant = {r.tenant, r.tier};
    a.rule = r.rule;
    a.message = r.message;
    audit_->Write(a);
  }
  return server::Reply{r.http_status, std::move(r.body), {}};
}

}  // namespace cmd
