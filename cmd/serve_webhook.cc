#include "cmd/serve_webhook.h"

#include <utility>

#include "absl/strings/match.h"
#include "wire/extender_codec.h"

namespace cmd {

bool MayReserveQuota(absl::string_view body) {
  // The kind as a JSON string value, wherever it stands and however the JSON is spaced;
  // "ResourceClaimTemplate" and the pod field "resourceClaims" do not match.
  return absl::StrContains(body, "ResourceClaim\"");
}

WebhookService::WebhookService(const kube::ClusterState& state, webhook::RecordUpdate records,
                               common::AuditLog* audit, std::function<int64_t()> now_unix)
    : state_(state), records_(std::move(records)), audit_(audit), now_unix_(std::move(now_unix)) {}

std::vector<server::PostRoute> WebhookService::Routes() {
  std::vector<server::PostRoute> routes;
  for (auto [path, kind] : {std::pair{"/webhook/validate", webhook::ReviewKind::kValidate},
                            std::pair{"/webhook/mutate", webhook::ReviewKind::kMutate}}) {
    // A denial's audit line is a write(2) that a full disk or pipe can stall.
    server::PostRoute route{
        path, [this, kind = kind](absl::string_view body) { return Review(body, kind); },
        /*waits_on_io=*/audit_ != nullptr};
    if (!audit_ && records_ && kind == webhook::ReviewKind::kValidate) {
      // A claim's quota reservation is a round trip to the API server, and only a
      // ResourceClaim's validation makes one; every other review (pods, templates, all
      // mutations) is answered on the connection's loop, sparing two thread wake-ups.
      route.waits_on_io = server::WaitsOnIo(MayReserveQuota);
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
