// Test support, part of the kube-apiserver emulation (fake_apiserver.h): PATCH bodies. JSON
// merge patch (RFC 7386), strategic merge patch taken as a merge patch (its $patch, $retainKeys
// and $setElementOrder directives are dropped), and JSON Patch (RFC 6902) through
// webhook::ApplyPatch, the applier the mutating webhook's own patches are checked with.
// Server-side apply (application/apply-patch+yaml) is 415, as any other media type.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_PATCH_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_PATCH_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "test/support/apiserver_status.h"

namespace testing_support::apiserver {

// RFC 7386 merge of `patch` into `target`; members whose name starts with "$" are skipped.
void ApplyMergePatch(rapidjson::Value& target, const rapidjson::Value& patch,
                     rapidjson::Document::AllocatorType& a);

// RFC 6902: add, remove, replace and test as webhook::ApplyPatch applies them, and move and
// copy, which it does not take: each becomes, once the operations before it are applied, an
// add of the value at "from" (after a remove of "from", for move). InvalidArgument when an
// operation fails (webhook::ApplyPatch's message); `doc` may then be partly patched.
[[nodiscard]] absl::Status ApplyJsonPatch(rapidjson::Document& doc, const rapidjson::Value& ops);

// Applies a PATCH request body of `content_type` (parameters already stripped) to `doc`:
// nullopt, or the reply that refuses it (400 malformed body or a merge patch that is not an
// object, 422 a JSON Patch that fails, 415 an unknown media type).
std::optional<Reply> ApplyPatchBody(absl::string_view content_type, absl::string_view body,
                                    rapidjson::Document& doc);

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_PATCH_H_
