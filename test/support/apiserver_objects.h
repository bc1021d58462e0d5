// Test support, part of the kube-apiserver emulation (fake_apiserver.h): what a stored object
// looks like. The table of emulated resources (kind, plural, group, apiVersion, scope and the
// BOOKMARK object of each), small JSON accessors for documents the emulation stored itself,
// the member order kube-apiserver encodes, and the identity it mints (uid, generateName
// suffix, timestamps).
//
// Everything stored went through Normalize, so the accessors here may assume an object where
// they look; request bodies are parsed with common::ParseJson before they reach them.
#ifndef GPU_TENANCY_TEST_SUPPORT_APISERVER_OBJECTS_H_
#define GPU_TENANCY_TEST_SUPPORT_APISERVER_OBJECTS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "rapidjson/document.h"
#include "test/support/fake_apiserver.h"

namespace testing_support::apiserver {

using Alloc = rapidjson::Document::AllocatorType;
using rapidjson::Value;

struct ResourceInfo {
  Resource resource;
  const char* plural;       // "pods": URL segment and Status details.kind
  const char* kind;         // "Pod"
  const char* list_kind;    // "PodList"
  const char* group;        // "" for the core group
  const char* api_version;  // "v1", "coordination.k8s.io/v1"
  bool namespaced;
  // The object a BOOKMARK carries: the zero value of the Go type with only resourceVersion set,
  // as encoding/json writes it (see watch-pods.raw). %RV% is replaced, and %AV% by the
  // watch's apiVersion (resource.k8s.io is served in more than one version).
  const char* bookmark;
};

inline constexpr int kResourceCount = 16;

const ResourceInfo& Info(Resource r);
// "pods", "leases.coordination.k8s.io": how Status messages name a resource.
std::string Qualified(const ResourceInfo& info);
// False for kinds the emulation does not store.
bool ResourceForKind(absl::string_view kind, Resource* out);
// The store key: "NS/NAME" for namespaced resources, "NAME" for cluster-scoped ones.
std::string KeyFor(const ResourceInfo& info, absl::string_view ns, absl::string_view name);

// ---- JSON accessors.
std::string ToJson(const Value& v);
std::string JsonString(absl::string_view s);        // `s` as a JSON string literal, quotes included
Value* Mutable(Value& obj, absl::string_view key);  // nullptr when absent or not an object
// The object member `key`, created (or replaced if not an object).
Value& EnsureObject(Value& obj, absl::string_view key, Alloc& a);
void SetMember(Value& obj, absl::string_view key, Value value, Alloc& a);
void SetString(Value& obj, absl::string_view key, absl::string_view s, Alloc& a);
void EraseMember(Value& obj, absl::string_view key);
std::string StringAt(const Value& obj, absl::string_view key);    // "" unless a string
std::string MetaString(const Value& obj, absl::string_view key);  // metadata.KEY or ""
// The value at a dotted path as a field selector sees it: strings as-is, booleans and numbers
// printed, anything else (or missing) "".
std::string FieldValue(const Value& obj, absl::string_view path);
// What real lists do: items carry no kind/apiVersion.
std::string StripTypeMeta(const std::string& json);

// kind and apiVersion first, metadata members in the order kube-apiserver encodes them.
void Normalize(const ResourceInfo& info, rapidjson::Document& doc, absl::string_view api_version);

// ---- Identity.
std::string Now3339();       // "2026-12-01T10:00:00Z"
std::string NewUid();        // a random version 4 UUID
std::string RandomSuffix();  // five characters of k8s.io/apimachinery/pkg/util/rand

bool ParseBool(absl::string_view s);  // Go's strconv.ParseBool, true side

}  // namespace testing_support::apiserver

#endif  // GPU_TENANCY_TEST_SUPPORT_APISERVER_OBJECTS_H_
