// The device annotations' trust rule as a table: only the agent's ServiceAccount, with a token
// naming exactly the object's node, may add, change or remove the annotation.
#include "webhook/device_annotation_rules.h"

#include "gtest/gtest.h"

namespace webhook {
namespace {

TEST(DeviceAnnotationRuleTest, Table) {
  const topology::NodeAgent agent;
  const std::string sa = "system:serviceaccount:gpu-tenancy-system:gpu-tenancy-node-agent";
  struct Row {
    const char* name;
    UserIdentity user;
    std::optional<std::string> old_value, new_value;
    std::string node;
    bool denied;
  };
  const Row rows[] = {
      {"tenant adds", {"alice", {}}, std::nullopt, "{}", "n1", true},
      {"tenant changes", {"alice", {}}, "{}", "{\"a\":1}", "n1", true},
      {"tenant removes", {"alice", {}}, "{}", std::nullopt, "n1", true},
      {"tenant leaves it alone", {"alice", {}}, "{}", "{}", "n1", false},
      {"agent on its node", {sa, {"n1"}}, std::nullopt, "{}", "n1", false},
      {"agent on another node", {sa, {"n2"}}, std::nullopt, "{}", "n1", true},
      {"agent without node extra", {sa, {}}, std::nullopt, "{}", "n1", true},
      {"agent with two nodes", {sa, {"n1", "n1"}}, std::nullopt, "{}", "n1", true},
      {"agent, unbound pod", {sa, {"n1"}}, std::nullopt, "{}", "", true},
      {"another SA",
       {"system:serviceaccount:acme:gpu-tenancy-node-agent", {"n1"}},
       std::nullopt,
       "{}",
       "n1",
       true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    DeviceAnnotationChange change;
    change.annotation = "gpu-tenancy.io/devices";
    change.object = "pod \"acme/p\"";
    change.old_value = row.old_value;
    change.new_value = row.new_value;
    change.node = row.node;
    std::optional<Violation> v = CheckDeviceAnnotation(agent, row.user, change);
    EXPECT_EQ(v.has_value(), row.denied);
    if (v) {
      EXPECT_EQ(v->rule, "device-annotation");
      EXPECT_EQ(v->message.rfind("[device-annotation] ", 0), 0u) << v->message;
    }
  }
}

}  // namespace
}  // namespace webhook
