#include "webhook/device_annotation_rules.h"

#include "absl/strings/str_cat.h"
#include "webhook/claim_rule_checks.h"
#include "webhook/pod_rule_checks.h"

namespace webhook {

std::string NodeAgentUsername(const topology::NodeAgent& agent) {
  return absl::StrCat("system:serviceaccount:", agent.service_account_namespace, ":",
                      agent.service_account_name);
}

std::optional<Violation> CheckDeviceAnnotation(const topology::NodeAgent& agent,
                                               const UserIdentity& user,
                                               const DeviceAnnotationChange& change) {
  if (change.old_value == change.new_value) return std::nullopt;
  const char* verb = !change.old_value ? "add" : !change.new_value ? "remove" : "change";
  const std::string what =
      absl::StrCat(verb, " annotation ", change.annotation, " of ", change.object);
  if (user.username != NodeAgentUsername(agent)) {
    return MakeViolation(
        kDeviceAnnotationRule,
        absl::StrCat("user \"", user.username, "\" may not ", what,
                     ": only the node agent (ServiceAccount ", agent.service_account_namespace, "/",
                     agent.service_account_name, ") writes it, for its own node"));
  }
  if (user.node_names.size() != 1) {
    const std::string names = user.node_names.empty()
                                  ? std::string("names no node")
                                  : absl::StrCat("names ", user.node_names.size(), " nodes");
    return MakeViolation(
        kDeviceAnnotationRule,
        absl::StrCat("the node agent may not ", what, " with a token that ", names,
                     " (userInfo.extra ", kNodeNameExtra,
                     "): it must use its pod's own ServiceAccount token, which names its node "
                     "(Kubernetes 1.30 or later)"));
  }
  const std::string& agent_node = user.node_names.front();
  if (change.node.empty()) {
    return MakeViolation(kDeviceAnnotationRule,
                         absl::StrCat("the node agent on node \"", agent_node, "\" may not ", what,
                                      ": the pod is not bound to a node yet"));
  }
  if (change.node != agent_node) {
    return MakeViolation(
        kDeviceAnnotationRule,
        absl::StrCat(
            "the node agent on node \"", agent_node, "\" may not ", what,
            change.is_node ? "" : absl::StrCat(", which runs on node \"", change.node, "\""),
            ": an agent writes only its own node's annotations"));
  }
  return std::nullopt;
}

namespace pod_rules_internal {

void CheckDevicesAnnotation(const PodRuleContext& ctx, std::vector<Violation>& out) {
  if (!ctx.user || !ctx.devices_annotation) return;
  if (std::optional<Violation> v =
          CheckDeviceAnnotation(ctx.policy.node_agent, *ctx.user, *ctx.devices_annotation)) {
    out.push_back(*std::move(v));
  }
}

}  // namespace pod_rules_internal

namespace claim_rules_internal {

void CheckNodeDevicesAnnotation(const NodeRuleContext& ctx, Findings& out) {
  if (std::optional<Violation> v =
          CheckDeviceAnnotation(ctx.policy.node_agent, ctx.user, ctx.devices_annotation)) {
    out.violations.push_back(*std::move(v));
  }
}

}  // namespace claim_rules_internal
}  // namespace webhook
