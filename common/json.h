// Safe access to untrusted JSON. RapidJSON's operator[] asserts on a missing member and is
// undefined in release builds, so every lookup here goes through FindMember and returns either a
// value, a default, or an InvalidArgument status that names the JSON path.
//
//   ASSIGN_OR_RETURN(rapidjson::Document doc, common::ParseJson(body));
//   ASSIGN_OR_RETURN(absl::string_view uid, common::RequireString(request, "uid", "request"));
#ifndef GPU_TENANCY_COMMON_JSON_H_
#define GPU_TENANCY_COMMON_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {

using JsonValue = rapidjson::Value;

// The writer our encoders use, and its key and string calls taking a string_view (which need
// not end in '\0').
using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;
inline void WriteKey(JsonWriter& w, absl::string_view key) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}
inline void WriteString(JsonWriter& w, absl::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// A string value holding a copy of `s`, made in `alloc`.
inline JsonValue JsonString(absl::string_view s, rapidjson::Document::AllocatorType& alloc) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

// Parses with the iterative parser (bounded stack, so deep nesting cannot overflow it).
// InvalidArgument with the parser's message and byte offset on malformed input or trailing junk,
// and for nesting deeper than 512 levels (encoders and copies recurse per level).
[[nodiscard]] absl::StatusOr<rapidjson::Document> ParseJson(absl::string_view text);
// Same result, faster for request bodies: the document's strings point into one copy of `text`
// held by the document's own allocator, instead of a copy per string. Values of such a document
// must not be copied into a document that outlives it (RapidJSON copies only the pointer of
// these strings), so use it for documents that are only read, such as a request being decided.
// With `pool`, the document (and the copy of `text`) lives in that allocator, which must
// outlive it; big transient documents use a pool with large chunks (see kube/reflector.cc).
[[nodiscard]] absl::StatusOr<rapidjson::Document> ParseJsonInPlace(
    absl::string_view text, rapidjson::MemoryPoolAllocator<>* pool = nullptr);

// Chunk size for the pool of a small document built per request (a patch, an annotation).
// RapidJSON's default pool takes 64 KiB at its first value, a size that general-purpose
// allocators serve from their slow path (jemalloc's arenas, not its per-thread cache), and that
// would be paid on every review.
inline constexpr size_t kSmallJsonChunkBytes = 4096;

// The member, or nullptr if `object` is not an object or lacks the key.
const JsonValue* FindMember(const JsonValue& object, absl::string_view key);
// Same, ASCII case-insensitive (Go's encoding/json matching, used for extender wrapper keys).
const JsonValue* FindMemberIgnoreCase(const JsonValue& object, absl::string_view key);
// The member if present and not null.
const JsonValue* FindNonNull(const JsonValue& object, absl::string_view key);

absl::string_view AsStringView(const JsonValue& value);  // "" for non-strings
absl::string_view StringOr(const JsonValue& object, absl::string_view key,
                           absl::string_view fallback = "");

// `path` is the JSON path of `object`, used in the error ("request.uid: missing").
[[nodiscard]] absl::StatusOr<absl::string_view> RequireString(const JsonValue& object,
                                                              absl::string_view key,
                                                              absl::string_view path);
[[nodiscard]] absl::StatusOr<const JsonValue*> RequireObject(const JsonValue& object,
                                                             absl::string_view key,
                                                             absl::string_view path);
// An optional object: absent or null gives nullptr; any other non-object is an error.
[[nodiscard]] absl::StatusOr<const JsonValue*> OptionalObject(const JsonValue& object,
                                                              absl::string_view key,
                                                              absl::string_view path);
[[nodiscard]] absl::StatusOr<const JsonValue*> OptionalArray(const JsonValue& object,
                                                             absl::string_view key,
                                                             absl::string_view path);

// Compact serialisation.
std::string ToJson(const JsonValue& value);

std::string JoinPath(absl::string_view path, absl::string_view key);
std::string IndexPath(absl::string_view path, size_t index);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_JSON_H_
