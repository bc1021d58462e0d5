// The admission webhook's entry point: raw AdmissionReview bytes in, verdict out
// (webhook::Review), for both the validating and the mutating webhook, with the webhook tests'
// policy and the demo cluster's namespace labels. Invariants: the status is 200 or 400 and the
// body is a JSON object; a 200 reply echoes response.uid and response.allowed; the mutating
// webhook never denies; a patch is only on mutate replies, is a JSON array, and applies cleanly
// to request.object.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/escaping.h"
#include "common/json.h"
#include "fuzz/fuzz_util.h"
#include "webhook/json_patch.h"
#include "webhook/review.h"

namespace {

using Fixture = fuzz::WebhookFixture;

void Check(absl::string_view body, webhook::ReviewKind kind, const Fixture& f) {
  webhook::ReviewOutcome out = webhook::Review(body, kind, f.policy, f.snapshot);
  FUZZ_CHECK(out.http_status == 200 || out.http_status == 400, out.body);
  absl::StatusOr<rapidjson::Document> reply = common::ParseJson(out.body);
  FUZZ_CHECK(reply.ok() && reply->IsObject(), out.body);
  if (out.http_status != 200) {
    FUZZ_CHECK(common::FindMember(*reply, "error") != nullptr, out.body);
    return;
  }
  const common::JsonValue* response = common::FindMember(*reply, "response");
  FUZZ_CHECK(response && response->IsObject(), out.body);
  const common::JsonValue* allowed = common::FindMember(*response, "allowed");
  FUZZ_CHECK(allowed && allowed->IsBool() && allowed->GetBool() == out.allowed, out.body);
  FUZZ_CHECK(!common::StringOr(*response, "uid").empty(), out.body);
  const common::JsonValue* patch = common::FindMember(*response, "patch");
  if (kind == webhook::ReviewKind::kValidate) {
    FUZZ_CHECK(patch == nullptr && out.patch_json.empty(), out.body);
    return;
  }
  FUZZ_CHECK(out.allowed, "the mutating webhook denied");
  if (!patch) {
    FUZZ_CHECK(out.patch_json.empty(), out.body);
    return;
  }
  std::string decoded;
  FUZZ_CHECK(patch->IsString() && absl::Base64Unescape(common::AsStringView(*patch), &decoded),
             out.body);
  FUZZ_CHECK(decoded == out.patch_json, decoded);
  absl::StatusOr<rapidjson::Document> ops = common::ParseJson(decoded);
  FUZZ_CHECK(ops.ok() && ops->IsArray() && !ops->Empty(), decoded);
  // The patch must apply to the object it was computed for.
  absl::StatusOr<rapidjson::Document> request = common::ParseJson(body);
  FUZZ_CHECK(request.ok(), "reparse");
  const common::JsonValue* req = common::FindMember(*request, "request");
  const common::JsonValue* object = req ? common::FindMember(*req, "object") : nullptr;
  FUZZ_CHECK(object != nullptr, "patch without request.object");
  rapidjson::Document patched;
  patched.CopyFrom(*object, patched.GetAllocator());
  absl::Status applied = webhook::ApplyPatch(*ops, patched);
  FUZZ_CHECK(applied.ok(), std::string(applied.message()) + "\npatch: " + decoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  const Fixture& f = fuzz::GetWebhookFixture();
  Check(body, webhook::ReviewKind::kValidate, f);
  Check(body, webhook::ReviewKind::kMutate, f);
  return 0;
}
