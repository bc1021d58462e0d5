#include "cmd/serve_webhook.h"

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "wire/extender_codec.h"

namespace cmd {

namespace {

// The string values of every "namespace" key in a JSON text, in order; nullopt when one is not
// a plain string (escapes: not a name kube-apiserver accepts, so not worth reading here).
std::optional<std::vector<absl::string_view>> NamespacesNamed(absl::string_view body) {
  constexpr absl::string_view kKey = "\"namespace\"";
  std::vector<absl::string_view> names;
  for (size_t at = body.find(kKey); at != absl::string_view::npos; at = body.find(kKey, at)) {
    size_t i = at + kKey.size();
    at = i;
    while (i < body.size() && absl::ascii_isspace(static_cast<unsigned char>(body[i]))) ++i;
    if (i == body.size() || body[i] != ':') continue;  // "namespace" as a value, not a key
    ++i;
    while (i < body.size() && absl::ascii_isspace(static_cast<unsigned char>(body[i]))) ++i;
    if (i == body.size() || body[i] != '"') return std::nullopt;
    const size_t end = body.find_first_of("\"\\", i + 1);
    if (end == absl::string_view::npos || body[end] != '"') return std::nullopt;
    names.push_back(body.substr(i + 1, end - i - 1));
  }
  return names;
}

// Names this process's admission budgets in the usage records: random, so that a restarted
// replica never mistakes its previous run's budget for its own (webhook/claim_budget.h).
std::string ProcessToken() {
  std::random_device random;
  return absl::StrFormat("%08x%08x", random(), random());
}

}  // namespace

bool MayReserveQuota(absl::string_view body, const topology::Policy& policy,
                     const topology::ClusterSnapshot& snapshot) {
  // The kind as a JSON string value, wherever it stands and however the JSON is spaced;
  // "ResourceClaimTemplate" and the pod field "resourceClaims" do not match.
  if (!absl::StrContains(body, "ResourceClaim\"")) return false;
  std::optional<std::vector<absl::string_view>> names = NamespacesNamed(body);
  if (!names || names->empty()) return true;
  for (absl::string_view ns : *names) {
    if (webhook::ClaimCountsAgainstRecord(
            topology::ResolveTenant(policy, ns, snapshot.NamespaceLabels(ns)))) {
      return true;
    }
  }
  return false;
}

WebhookService::WebhookService(const kube::ClusterState& state, webhook::RecordUpdate records,
                               common::AuditLog* audit, std::function<int64_t()> now_unix)
    : state_(state),
      records_(std::move(records)),
      budgets_(ProcessToken()),
      audit_(audit),
      now_unix_(std::move(now_unix)) {}

std::vector<server::PostRoute> WebhookService::Routes() {
  std::vector<server::PostRoute> routes;
  for (auto [path, kind] : {std::pair{"/webhook/validate", webhook::ReviewKind::kValidate},
                            std::pair{"/webhook/mutate", webhook::ReviewKind::kMutate}}) {
    // A denial's audit line is a write(2) that a full disk or pipe can stall.
    server::PostRoute route{
        path, [this, kind = kind](absl::string_view body) { return Review(body, kind); },
        /*waits_on_io=*/audit_ != nullptr};
    if (!audit_ && records_ && kind == webhook::ReviewKind::kValidate) {
      // A claim's quota reservation is a round trip to the API server, and only the validation
      // of a ResourceClaim of a tenant with a record makes one; every other review (pods,
      // templates, all mutations, claims of tenants without a quota) is answered on the
      // connection's loop, sparing two thread wake-ups.
      route.waits_on_io = server::WaitsOnIo([this](absl::string_view body) {
        std::shared_ptr<const topology::ModelState> s = state_.Current();
        return !s || MayReserveQuota(body, *s->policy, *s->snapshot);
      });
    }
    routes.push_back(std::move(route));
  }
  return routes;
}

server::Reply WebhookService::Review(absl::string_view body, webhook::ReviewKind kind) {
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
  webhook::ReviewOutcome r = webhook::Review(body, kind, *s->policy, *s->snapshot, claim_quota);
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
