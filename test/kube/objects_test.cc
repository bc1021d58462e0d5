// kube/objects: the Lease and ConfigMap bodies (the Binding and Event have their own tests
// beside their writers): optional fields are left out, a resource version is the precondition.
#include "kube/objects.h"

#include <string>

#include "common/json.h"
#include "gtest/gtest.h"

namespace {

const common::JsonValue& At(const common::JsonValue& v, const char* key) {
  const common::JsonValue* found = common::FindMember(v, key);
  EXPECT_NE(found, nullptr) << key;
  static const common::JsonValue kNull;
  return found ? *found : kNull;
}

TEST(ObjectsTest, ALeaseCarriesItsHolderAndLeavesOutWhatIsUnset) {
  kube::LeaseObject lease;
  lease.namespace_name = "gpu-tenancy";
  lease.name = "gpu-tenancy-extender";
  lease.holder = "replica-a";
  lease.duration_seconds = 15;
  lease.renew_time = "2026-12-04T10:00:00.000000Z";
  lease.transitions = 2;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(kube::LeaseJson(lease));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "apiVersion"), "coordination.k8s.io/v1");
  EXPECT_EQ(common::StringOr(*doc, "kind"), "Lease");
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "namespace"), "gpu-tenancy");
  EXPECT_EQ(common::FindMember(At(*doc, "metadata"), "resourceVersion"), nullptr);
  const common::JsonValue& spec = At(*doc, "spec");
  EXPECT_EQ(common::StringOr(spec, "holderIdentity"), "replica-a");
  EXPECT_EQ(At(spec, "leaseDurationSeconds").GetInt64(), 15);
  EXPECT_EQ(At(spec, "leaseTransitions").GetInt64(), 2);
  EXPECT_EQ(common::FindMember(spec, "acquireTime"), nullptr);

  lease.resource_version = "41";
  doc = common::ParseJson(kube::LeaseJson(lease));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(At(*doc, "metadata"), "resourceVersion"), "41");
}

TEST(ObjectsTest, AConfigMapIsLabelledOursAndHoldsItsData) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(
      kube::ConfigMapJson("gpu-tenancy", "claim-quota", "7", {{"acme", "{\"gpus\":1}"}}));
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(common::StringOr(*doc, "kind"), "ConfigMap");
  const common::JsonValue& meta = At(*doc, "metadata");
  EXPECT_EQ(common::StringOr(meta, "resourceVersion"), "7");
  EXPECT_EQ(common::StringOr(At(meta, "labels"), "app.kubernetes.io/name"), "gpu-tenancy");
  EXPECT_EQ(common::StringOr(At(*doc, "data"), "acme"), "{\"gpus\":1}");
}

}  // namespace
