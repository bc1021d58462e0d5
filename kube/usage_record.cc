#include "kube/usage_record.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "kube/objects.h"

namespace kube {
namespace {

absl::Status ReplyError(absl::string_view what, const ApiResponse& r) {
  return absl::UnavailableError(absl::StrCat(what, ": HTTP ", r.status, ": ", DescribeError(r)));
}

}  // namespace

ConfigMapRecords::ConfigMapRecords(Api& api, std::string namespace_name, int max_attempts)
    : api_(api), namespace_name_(std::move(namespace_name)), max_attempts_(max_attempts) {}

absl::Status ConfigMapRecords::Update(const std::string& name,
                                      const std::function<std::optional<Data>(const Data&)>& decide,
                                      bool dry_run) {
  const std::string collection =
      absl::StrCat("/api/v1/namespaces/", namespace_name_, "/configmaps");
  const std::string path = absl::StrCat(collection, "/", name);
  absl::Status last_error;
  for (int attempt = 0; attempt < max_attempts_; ++attempt) {
    absl::StatusOr<ApiResponse> got = api_.Get(path);
    if (!got.ok()) {
      last_error = got.status();  // a dropped connection: read again on a new one
      continue;
    }
    Data data;
    std::string resource_version;
    if (got->status == 200) {
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(got->body);
      if (!doc.ok() || !doc->IsObject()) {
        return absl::UnavailableError(absl::StrCat("configmap ", name, ": unreadable reply"));
      }
      if (const common::JsonValue* meta = common::FindNonNull(*doc, "metadata")) {
        resource_version = std::string(common::StringOr(*meta, "resourceVersion"));
      }
      if (const common::JsonValue* d = common::FindNonNull(*doc, "data"); d && d->IsObject()) {
        for (const auto& m : d->GetObject()) {
          data.emplace(common::AsStringView(m.name), common::AsStringView(m.value));
        }
      }
      if (resource_version.empty()) {
        return absl::UnavailableError(absl::StrCat("configmap ", name, ": no resourceVersion"));
      }
    } else if (got->status != 404) {
      return ReplyError(absl::StrCat("get configmap ", name), *got);
    }
    std::optional<Data> next = decide(data);
    if (!next || dry_run) return absl::OkStatus();
    const std::string body = ConfigMapJson(namespace_name_, name, resource_version, *next);
    absl::StatusOr<ApiResponse> put =
        resource_version.empty() ? api_.Post(collection, body) : api_.Put(path, body);
    if (!put.ok()) {
      // Whether the write landed is unknown; deciding again on what is there is safe, since
      // the claim's own entry is replaced, not added twice.
      last_error = put.status();
      continue;
    }
    if (put->status == 200 || put->status == 201) return absl::OkStatus();
    // 409: Conflict (someone wrote since our read) or AlreadyExists (someone created it).
    if (put->status != 409) return ReplyError(absl::StrCat("write configmap ", name), *put);
  }
  if (!last_error.ok()) return last_error;
  return absl::AbortedError(
      absl::StrCat("configmap ", name, ": still conflicting after ", max_attempts_, " attempts"));
}

}  // namespace kube
