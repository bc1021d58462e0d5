#include "extender/bind.h"

#include "absl/strings/str_cat.h"
#include "topology/occupancy.h"

namespace extender {

topology::Labels PlacementAnnotations(const topology::Placement& p) {
  topology::Labels out;
  out.emplace(topology::kTenantAnnotation, p.tenant);
  if (!p.tier.empty()) out.emplace(topology::kTierAnnotation, p.tier);
  if (!p.pool.empty()) out.emplace(topology::kPoolAnnotation, p.pool);
  if (p.gpu_index) out.emplace(topology::kGpuIndexAnnotation, absl::StrCat(*p.gpu_index));
  if (!p.mig_profile.empty()) out.emplace(topology::kMigProfileAnnotation, p.mig_profile);
  if (!p.share.empty()) out.emplace(topology::kShareAnnotation, p.share);
  return out;
}

VerbReply Bind(absl::string_view body, BindBackend& backend) {
  absl::StatusOr<wire::BindingArgs> args = wire::ParseBindingArgs(body);
  if (!args.ok()) return VerbReply{400, wire::EncodeHttpError(args.status().message())};
  auto fail = [&](absl::string_view why) {
    backend.Report(*args, nullptr, why);
    VerbReply r{200, wire::EncodeBindingResult(why)};
    r.failed = 1;
    return r;
  };
  absl::StatusOr<topology::PodFacts> pod = backend.LookupPod(*args);
  if (!pod.ok()) return fail(absl::StrCat("gpu-tenancy bind: ", pod.status().message()));
  absl::StatusOr<topology::PlaceOutcome> placed = backend.Assume(*pod, args->node);
  if (!placed.ok()) return fail(absl::StrCat("gpu-tenancy bind: ", placed.status().message()));
  if (!placed->placed()) {
    // A quota, a limit or what fair sharing lends is the tenant's budget, not the node's room:
    // the reason says so on its own.
    if (topology::IsTenantCapRule(placed->rule) || placed->rule == topology::Rule::kGroupLimit ||
        placed->rule == topology::Rule::kBorrowOwed) {
      return fail(absl::StrCat("gpu-tenancy bind: ", placed->reason));
    }
    return fail(
        absl::StrCat("gpu-tenancy bind: node ", args->node, " no longer fits: ", placed->reason));
  }
  const topology::Placement& placement = placed->placement;
  absl::Status posted = backend.PostBinding(*args, PlacementAnnotations(placement));
  if (!posted.ok()) {
    backend.Forget(args->pod_uid);
    return fail(absl::StrCat("gpu-tenancy bind: ", posted.message()));
  }
  backend.Report(*args, &placement, "");
  VerbReply ok{200, wire::EncodeBindingResult("")};
  ok.kept = 1;
  ok.gpu_pod = true;
  return ok;
}

}  // namespace extender
