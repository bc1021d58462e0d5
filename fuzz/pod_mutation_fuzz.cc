// The mutating webhook on Pods (webhook/pod_mutation.h through webhook::ReviewObject, as
// `gpu-tenancy check` and the AdmissionReview path call it) and the JSON Patch it produces
// (webhook/json_patch.h). Input: one Pod, JSON or YAML. For every pod the webhook accepts
// (CREATE and UPDATE, namespace from metadata.namespace, else "acme"):
//   - the patch applies cleanly to the pod (webhook::ApplyPatch);
//   - the patched pod serialises to JSON that parses again, and is still a Pod the codec
//     (wire::ParsePod) and the webhook (validating review) can read;
//   - mutating the patched pod again yields no patch (idempotence).
// Any violation traps, so libFuzzer keeps the pod.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "fuzz/fuzz_util.h"
#include "webhook/json_patch.h"
#include "webhook/review.h"
#include "wire/k8s_codec.h"

namespace {

using Fixture = fuzz::WebhookFixture;

webhook::ObjectRequest PodRequest(const rapidjson::Value& pod, const std::string& ns,
                                  const char* operation, const rapidjson::Value* old) {
  webhook::ObjectRequest r;
  r.object = &pod;
  r.old_object = old;
  r.version = "v1";
  r.kind = "Pod";
  r.operation = operation;
  r.namespace_name = ns;
  return r;
}

void MutateApplyCheck(const rapidjson::Document& pod, const std::string& ns, bool update,
                      const Fixture& f) {
  const topology::Labels& labels = f.snapshot.NamespaceLabels(ns);
  const char* op = update ? "UPDATE" : "CREATE";
  absl::StatusOr<webhook::ObjectOutcome> mutated =
      webhook::ReviewObject(PodRequest(pod, ns, op, update ? &pod : nullptr),
                            webhook::ReviewKind::kMutate, f.policy, labels);
  if (!mutated.ok()) return;  // not a readable Pod: HTTP 400, nothing to patch
  FUZZ_CHECK(mutated->handled && mutated->allowed, "mutate must handle and allow a Pod");
  if (mutated->patch.empty()) return;

  const std::string patch_json = mutated->patch.ToJson();
  rapidjson::Document patched;
  patched.CopyFrom(pod, patched.GetAllocator());
  absl::Status applied = webhook::ApplyPatch(mutated->patch.ops(), patched);
  FUZZ_CHECK(applied.ok(), std::string(applied.message()) + "\npatch: " + patch_json +
                               "\npod: " + common::ToJson(pod));

  // Valid JSON, and still a Pod for the codecs.
  const std::string text = common::ToJson(patched);
  absl::StatusOr<rapidjson::Document> reparsed = common::ParseJson(text);
  FUZZ_CHECK(reparsed.ok(), std::string(reparsed.status().message()) + "\n" + text);
  // Not compared with `patched` for equality: RapidJSON's == pairs duplicate keys (which YAML
  // input may have) by name, and its default number parsing may move a double such as 59e99 by
  // one ULP, so neither the DOMs nor the texts need be identical.
  absl::StatusOr<topology::PodFacts> facts = wire::ParsePod(*reparsed);
  FUZZ_CHECK(facts.ok(), std::string(facts.status().message()) + "\n" + text);
  absl::StatusOr<webhook::ObjectOutcome> validated =
      webhook::ReviewObject(PodRequest(*reparsed, ns, op, update ? &pod : nullptr),
                            webhook::ReviewKind::kValidate, f.policy, labels);
  FUZZ_CHECK(validated.ok(), std::string(validated.status().message()) + "\n" + text);

  // Idempotent: the mutated pod needs no further mutation.
  absl::StatusOr<webhook::ObjectOutcome> again =
      webhook::ReviewObject(PodRequest(*reparsed, ns, op, update ? &*reparsed : nullptr),
                            webhook::ReviewKind::kMutate, f.policy, labels);
  FUZZ_CHECK(again.ok(), std::string(again.status().message()) + "\n" + text);
  FUZZ_CHECK(again->patch.empty(), "not idempotent\nfirst: " + patch_json +
                                       "\nsecond: " + again->patch.ToJson() + "\npod: " + text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rapidjson::Document> pod = wire::ParseObjectText(text);
  if (!pod.ok() || !pod->IsObject()) return 0;
  std::string ns = "acme";
  if (const common::JsonValue* meta = common::FindNonNull(*pod, "metadata")) {
    absl::string_view given = common::StringOr(*meta, "namespace");
    if (!given.empty()) ns = std::string(given);
  }
  const Fixture& f = fuzz::GetWebhookFixture();
  MutateApplyCheck(*pod, ns, /*update=*/false, f);
  MutateApplyCheck(*pod, ns, /*update=*/true, f);
  return 0;
}
