#include "kube/binder.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kube/objects.h"
#include "wire/k8s_codec.h"

namespace kube {

absl::StatusOr<topology::PodFacts> ApiBinder::LookupPod(const wire::BindingArgs& args) {
  if (gate_ && !gate_()) {
    return absl::FailedPreconditionError(
        "this replica is not the extender leader (or its cache is still catching up); retry");
  }
  if (std::optional<topology::PodFacts> cached = state_.PendingPod(args.pod_uid)) return *cached;
  absl::StatusOr<ApiResponse> r =
      client_.Get(absl::StrCat("/api/v1/namespaces/", args.pod_namespace, "/pods/", args.pod_name));
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return absl::NotFoundError(
        absl::StrCat("pod ", args.pod_namespace, "/", args.pod_name, ": ", DescribeError(*r)));
  }
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(r->body);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<topology::PodFacts> pod = wire::ParsePod(*doc);
  if (!pod.ok()) return pod.status();
  if (pod->uid != args.pod_uid) {
    return absl::NotFoundError(absl::StrCat("pod ", args.pod_namespace, "/", args.pod_name,
                                            " has UID ", pod->uid, ", not ", args.pod_uid));
  }
  return pod;
}

absl::StatusOr<topology::PlaceOutcome> ApiBinder::Assume(const topology::PodFacts& pod,
                                                         const std::string& node) {
  return state_.Assume(pod, node, clock_->Now() + assume_ttl_);
}

absl::Status ApiBinder::PostBinding(const wire::BindingArgs& args,
                                    const topology::Labels& annotations) {
  state_.Posting(args.pod_uid);
  absl::StatusOr<ApiResponse> r = client_.Post(
      absl::StrCat("/api/v1/namespaces/", args.pod_namespace, "/pods/", args.pod_name, "/binding"),
      BindingJson(args, annotations));
  // Counted from the outcome, not from the bind: a Binding held past the client's timeout
  // (which the client retries once) may land a minute after the assumption was made.
  const Clock::TimePoint keep_until = clock_->Now() + assume_ttl_;
  if (!r.ok()) {
    state_.Posted(args.pod_uid, ClusterState::BindingPost::kUnknown, keep_until);
    return r.status();
  }
  if (r->status != 201 && r->status != 200) {
    const std::string why = DescribeError(*r);
    // Bound to this node already: an earlier attempt of this bind (the first of a retried
    // POST) may have landed, with this placement or an earlier one; the watch will tell.
    const bool here =
        r->status == 409 &&
        absl::StrContains(why, absl::StrCat("already assigned to node \"", args.node, "\""));
    state_.Posted(args.pod_uid,
                  here ? ClusterState::BindingPost::kUnknown : ClusterState::BindingPost::kRefused,
                  keep_until);
    return absl::FailedPreconditionError(absl::StrCat("Binding refused: ", why));
  }
  state_.Posted(args.pod_uid, ClusterState::BindingPost::kLanded);
  return absl::OkStatus();
}

void ApiBinder::Report(const wire::BindingArgs& args, const topology::Placement* placement,
                       absl::string_view error) {
  if (audit_) {
    common::BindAudit r;
    r.bound = placement != nullptr;
    r.namespace_name = args.pod_namespace;
    r.pod = args.pod_name;
    r.uid = args.pod_uid;
    r.node = args.node;
    if (placement) {
      r.tenant = {placement->tenant, placement->tier};
      r.pool = placement->pool;
      r.mig_profile = placement->mig_profile;
      r.gpu_index = placement->gpu_index;
    } else {
      r.error = std::string(error);
      // A failed bind has no placement; the tenant still comes from the namespace.
      if (std::shared_ptr<const topology::ModelState> s = state_.Current()) {
        topology::TenantRef t = topology::ResolveTenant(
            *s->policy, args.pod_namespace, s->snapshot->NamespaceLabels(args.pod_namespace));
        r.tenant = {t.name, t.tier ? t.tier->name : ""};
      }
    }
    audit_->Write(r);
  }
  if (!events_) return;
  PodEvent e{args.pod_namespace, args.pod_name, args.pod_uid, placement == nullptr, "", ""};
  if (placement) {
    e.reason = "GpuTenancyBound";
    e.message = absl::StrCat(
        "Bound to ", placement->node, " for tenant ", placement->tenant,
        placement->tier.empty() ? "" : absl::StrCat(" (tier ", placement->tier, ")"),
        placement->pool.empty() ? "" : absl::StrCat(" in pool ", placement->pool),
        placement->mig_profile.empty() ? "" : absl::StrCat(", MIG ", placement->mig_profile),
        placement->gpu_index ? absl::StrCat(", GPU ", *placement->gpu_index) : "");
  } else {
    e.reason = "GpuTenancyBindFailed";
    e.message = std::string(error);
  }
  events_->Record(std::move(e));
}

}  // namespace kube
