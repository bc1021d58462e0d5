// kube-scheduler's ExtenderArgs: the body of POST /extender/filter and /extender/prioritize.
// Parses the bytes with wire::ParseExtenderArgs, then answers them with the real filter and
// prioritize verbs against the demo cluster (so the Pod codec, demand, fit and the encoders see
// the same input). Invariants: a 200 reply is valid JSON; a parsed request keeps every node name;
// re-encoding the parsed request with every node kept is valid JSON.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/json.h"
#include "extender/verbs.h"
#include "fuzz/fuzz_util.h"
#include "wire/extender_codec.h"

namespace {

const topology::ModelState& DemoState() {
  static const topology::ModelState* const state = [] {
    auto* s = new topology::ModelState();
    auto policy = std::make_shared<const topology::Policy>(fuzz::MustLoadPolicy(FuzzDemoPolicy()));
    s->catalog = &common::BuiltinCatalog();
    s->snapshot = std::make_shared<const topology::ClusterSnapshot>(
        topology::BuildSnapshot(fuzz::MustLoadDemoCluster(), *s->catalog, *policy));
    s->policy = std::move(policy);
    return s;
  }();
  return *state;
}

void CheckReply(const extender::VerbReply& reply, absl::string_view verb) {
  FUZZ_CHECK(reply.http_status == 200 || reply.http_status == 400, verb);
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(reply.body);
  FUZZ_CHECK(doc.ok(), reply.body);
  FUZZ_CHECK(doc->IsObject() || (reply.http_status == 200 && doc->IsArray()), reply.body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<wire::ExtenderArgs> args = wire::ParseExtenderArgs(body);
  if (args.ok()) {
    FUZZ_CHECK(args->pod != nullptr && args->pod->IsObject(), "Pod");
    FUZZ_CHECK(args->names_only || args->node_items.size() == args->node_names.size(), "items");
    wire::FilterReply all;
    for (size_t i = 0; i < args->node_names.size(); ++i) all.kept.push_back(i);
    std::string encoded = wire::EncodeFilterResult(*args, all);
    FUZZ_CHECK(common::ParseJson(encoded).ok(), encoded);
  }
  const topology::ModelState& state = DemoState();
  CheckReply(extender::Filter(body, &state), "filter");
  CheckReply(extender::Prioritize(body, &state), "prioritize");
  // Before the first cluster sync.
  CheckReply(extender::Filter(body, nullptr), "filter (not synced)");
  return 0;
}
