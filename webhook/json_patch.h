// JSON Patch (RFC 6902) for the mutating webhook: a small builder for the operations we emit,
// RFC 6901 pointer escaping, the base64 form the API server expects, and an applier for add /
// replace / remove (used by `gpu-tenancy check` to see an object as the validating webhook
// would, and by the tests to prove that a patch does what it says and that mutation is
// idempotent).
//
//   JsonPatch patch;
//   patch.Add(PointerJoin("/metadata/labels", "gpu-tenancy.io/tenant"), "acme");
//   std::string wire = patch.ToBase64();  // standard, padded
//
// Not thread-safe; one builder per review.
#ifndef GPU_TENANCY_WEBHOOK_JSON_PATCH_H_
#define GPU_TENANCY_WEBHOOK_JSON_PATCH_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"

namespace webhook {

// One reference token escaped per RFC 6901: "~" -> "~0", then "/" -> "~1".
std::string EscapePointerToken(absl::string_view token);
// The reverse: "~1" -> "/", then "~0" -> "~".
std::string UnescapePointerToken(absl::string_view token);
// `pointer` + "/" + escaped `token`.
std::string PointerJoin(absl::string_view pointer, absl::string_view token);
std::string PointerJoin(absl::string_view pointer, size_t index);

class JsonPatch {
 public:
  JsonPatch();
  JsonPatch(JsonPatch&&) = default;
  JsonPatch& operator=(JsonPatch&&) = default;

  // The value is deep-copied into the patch.
  void Add(absl::string_view path, const rapidjson::Value& value);
  void Add(absl::string_view path, absl::string_view value);
  void Replace(absl::string_view path, const rapidjson::Value& value);
  void Replace(absl::string_view path, absl::string_view value);
  void Remove(absl::string_view path);

  bool empty() const { return ops_.Empty(); }
  size_t size() const { return ops_.Size(); }
  // The operations as a JSON array.
  const rapidjson::Document& ops() const { return ops_; }
  // Allocator of the patch document, for building values passed to Add/Replace cheaply.
  rapidjson::Document::AllocatorType& allocator() { return ops_.GetAllocator(); }

  std::string ToJson() const;
  std::string ToBase64() const;

 private:
  void Push(absl::string_view op, absl::string_view path, const rapidjson::Value* value);
  // Small chunks (common::kSmallJsonChunkBytes): a patch is a few hundred bytes. Held by pointer
  // so that a moved patch's document still finds it.
  std::unique_ptr<rapidjson::MemoryPoolAllocator<>> pool_;
  rapidjson::Document ops_;
};

// Makes the string map `object[key]` (found at JSON pointer `pointer` + "/" + key) hold each
// of `entries`: adds the whole map when it is missing or null, else adds or replaces single
// entries that differ. Emits nothing when all already hold. `object` is the current value at
// `pointer`, e.g. the pod's metadata for pointer "/metadata" and key "labels".
void EnsureMapEntries(const rapidjson::Value& object, absl::string_view pointer,
                      absl::string_view key,
                      const std::vector<std::pair<std::string, std::string>>& entries,
                      JsonPatch& patch);

// Applies a JSON Patch array to `doc` in place. Supports add, replace and remove (the operations
// this project emits) and test; InvalidArgument naming the operation index for anything else,
// for a path whose parent is missing, for replace/remove of a missing member, and for array
// indexes out of range. On error `doc` may be partly patched.
[[nodiscard]] absl::Status ApplyPatch(const rapidjson::Value& patch, rapidjson::Document& doc);

}  // namespace webhook

#endif  // GPU_TENANCY_WEBHOOK_JSON_PATCH_H_
