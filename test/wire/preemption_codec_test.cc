// kube-scheduler's preempt call (wire/preemption_codec): the captured v1.36 request, both
// victim encodings, Go's key spellings, the reply, and malformed bodies.
#include "wire/preemption_codec.h"

#include <string>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"

namespace wire {

using common::FindMember;
using common::StringOr;
namespace {

using testing_support::Testdata;

std::vector<std::string> Strings(const std::vector<absl::string_view>& in) {
  return std::vector<std::string>(in.begin(), in.end());
}

TEST(PreemptionCodecTest, ParsesTheCapturedRequest) {
  absl::StatusOr<PreemptionArgs> args =
      ParsePreemptionArgs(Testdata("extender/preempt-nodecache-true.v1.36.request.json"));
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->meta);
  EXPECT_EQ(StringOr(*FindMember(*args->pod, "metadata"), "name"), "high-preemptor");
  ASSERT_EQ(args->nodes.size(), 1u);
  EXPECT_EQ(args->nodes[0].name, "node-a");
  EXPECT_EQ(Strings(args->nodes[0].uids),
            std::vector<std::string>{"5a47f278-f893-42af-bec7-7b473aab820a"});
  EXPECT_TRUE(args->nodes[0].pods.empty());
  EXPECT_EQ(args->nodes[0].pdb_violations, 0);
}

TEST(PreemptionCodecTest, FullPodVictimsUnderEitherSpelling) {
  for (const char* key : {"NodeNameToVictims", "nodeToVictims"}) {
    SCOPED_TRACE(key);
    std::string body =
        std::string(R"({"Pod":{"metadata":{"name":"p"}},"NodeNameToMetaVictims":null,")") + key +
        R"(":{"b":{"Pods":[{"metadata":{"name":"v","uid":"u-1"}}],"NumPDBViolations":2},)"
        R"("a":{"pods":[],"numPDBViolations":0}}})";
    absl::StatusOr<PreemptionArgs> args = ParsePreemptionArgs(body);
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_FALSE(args->meta);
    ASSERT_EQ(args->nodes.size(), 2u);
    EXPECT_EQ(args->nodes[0].name, "a");  // sorted by name
    EXPECT_TRUE(args->nodes[0].uids.empty());
    EXPECT_EQ(args->nodes[1].name, "b");
    EXPECT_EQ(Strings(args->nodes[1].uids), std::vector<std::string>{"u-1"});
    ASSERT_EQ(args->nodes[1].pods.size(), 1u);
    EXPECT_EQ(args->nodes[1].pdb_violations, 2);
  }
}

TEST(PreemptionCodecTest, EncodesMetaVictims) {
  std::string reply = EncodePreemptionResult({{"node-a", {"u-1", "u-2"}, 1}, {"node-b", {}, 0}});
  EXPECT_EQ(reply, R"({"NodeNameToMetaVictims":{"node-a":{"Pods":[{"UID":"u-1"},{"UID":"u-2"}],)"
                   R"("NumPDBViolations":1},"node-b":{"Pods":[],"NumPDBViolations":0}}})");
  EXPECT_EQ(EncodePreemptionResult({}), R"({"NodeNameToMetaVictims":{}})");
}

TEST(PreemptionCodecTest, MalformedBodiesNameTheField) {
  struct Row {
    const char* body;
    const char* error;
  };
  const Row rows[] = {
      {"not json", ""},
      {"[]", "ExtenderPreemptionArgs: expected a JSON object"},
      {R"({"NodeNameToMetaVictims":{}})", "ExtenderPreemptionArgs.Pod: missing or not an object"},
      {R"({"Pod":{},"NodeNameToMetaVictims":null,"NodeNameToVictims":null})",
       "ExtenderPreemptionArgs: NodeNameToMetaVictims and NodeNameToVictims are both missing or "
       "null"},
      {R"({"Pod":{},"NodeNameToMetaVictims":[]})",
       "ExtenderPreemptionArgs.NodeNameToMetaVictims: expected an object"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"n":{"Pods":[{}]}}})",
       "ExtenderPreemptionArgs.NodeNameToMetaVictims[\"n\"].Pods[0].UID: missing"},
      {R"({"Pod":{},"NodeNameToVictims":{"n":{"Pods":[{"metadata":{}}]}}})",
       "ExtenderPreemptionArgs.NodeNameToVictims[\"n\"].Pods[0].metadata.uid: missing"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"n":{"NumPDBViolations":"x"}}})",
       "ExtenderPreemptionArgs.NodeNameToMetaVictims[\"n\"].NumPDBViolations: expected an "
       "integer"},
      {R"({"Pod":{},"NodeNameToMetaVictims":{"n":{},"n":{}}})",
       "ExtenderPreemptionArgs.NodeNameToMetaVictims: node \"n\" appears twice"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.body);
    absl::StatusOr<PreemptionArgs> args = ParsePreemptionArgs(row.body);
    ASSERT_FALSE(args.ok());
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
    if (*row.error) {
      EXPECT_EQ(args.status().message(), row.error);
    }
  }
}

}  // namespace
}  // namespace wire
