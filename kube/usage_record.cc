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

// The resourceVersion of the ConfigMap in a reply's body, or "" when it has none.
std::string ResourceVersionOf(const rapidjson::Document& doc) {
  const common::JsonValue* meta = doc.IsObject() ? common::FindNonNull(doc, "metadata") : nullptr;
  return meta ? std::string(common::StringOr(*meta, "resourceVersion")) : std::string();
}

}  // namespace

ConfigMapRecords::ConfigMapRecords(Api& api, std::string namespace_name, int max_attempts)
    : api_(api), namespace_name_(std::move(namespace_name)), max_attempts_(max_attempts) {}

ConfigMapRecords::Known& ConfigMapRecords::KnownRecord(const std::string& name) {
  common::MutexLock lock(&mu_);
  std::unique_ptr<Known>& k = known_[name];
  if (!k) k = std::make_unique<Known>();
  return *k;  // never erased: the map holds one entry per tenant with a quota
}

absl::Status ConfigMapRecords::Read(const std::string& name, const std::string& path, Known& known,
                                    bool& dropped) {
  known.valid = false;
  absl::StatusOr<ApiResponse> got = api_.Get(path);
  dropped = !got.ok();
  if (!got.ok()) return got.status();
  known.data.clear();
  known.resource_version.clear();
  if (got->status == 404) {
    known.valid = true;
    return absl::OkStatus();
  }
  if (got->status != 200) return ReplyError(absl::StrCat("get configmap ", name), *got);
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(got->body);
  if (!doc.ok() || !doc->IsObject()) {
    return absl::UnavailableError(absl::StrCat("configmap ", name, ": unreadable reply"));
  }
  known.resource_version = ResourceVersionOf(*doc);
  if (known.resource_version.empty()) {
    return absl::UnavailableError(absl::StrCat("configmap ", name, ": no resourceVersion"));
  }
  if (const common::JsonValue* d = common::FindNonNull(*doc, "data"); d && d->IsObject()) {
    for (const auto& m : d->GetObject()) {
      known.data.emplace(common::AsStringView(m.name), common::AsStringView(m.value));
    }
  }
  known.valid = true;
  return absl::OkStatus();
}

absl::Status ConfigMapRecords::Update(const std::string& name,
                                      const std::function<std::optional<Data>(const Data&)>& decide,
                                      bool dry_run) {
  const std::string collection =
      absl::StrCat("/api/v1/namespaces/", namespace_name_, "/configmaps");
  const std::string path = absl::StrCat(collection, "/", name);
  Known& known = KnownRecord(name);
  common::MutexLock lock(&known.mu);
  absl::Status last_error;
  for (int attempt = 0; attempt < max_attempts_; ++attempt) {
    bool just_read = false;
    if (!known.valid || dry_run) {
      bool dropped = false;
      absl::Status read = Read(name, path, known, dropped);
      if (!read.ok() && !dropped) return read;
      if (!read.ok()) {
        last_error = read;  // a dropped connection: read again on a new one
        continue;
      }
      just_read = true;
    }
    std::optional<Data> next = decide(known.data);
    if (!next && !just_read) {
      known.valid = false;  // decide again on what the API server holds now
      continue;
    }
    if (!next || dry_run) return absl::OkStatus();
    const std::string body = ConfigMapJson(namespace_name_, name, known.resource_version, *next);
    absl::StatusOr<ApiResponse> put =
        known.resource_version.empty() ? api_.Post(collection, body) : api_.Put(path, body);
    known.valid = false;  // until the reply says what the record is now
    if (!put.ok()) {
      // Whether the write landed is unknown; deciding again on what is there is safe, since
      // the claim's own entry is replaced, not added twice.
      last_error = put.status();
      continue;
    }
    if (put->status == 200 || put->status == 201) {
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(put->body);
      const std::string written = doc.ok() ? ResourceVersionOf(*doc) : "";
      if (!written.empty()) {
        known.data = *std::move(next);
        known.resource_version = written;
        known.valid = true;
      }
      return absl::OkStatus();
    }
    // 409: Conflict (someone wrote since our read) or AlreadyExists (someone created it).
    if (put->status != 409) return ReplyError(absl::StrCat("write configmap ", name), *put);
  }
  if (!last_error.ok()) return last_error;
  return absl::AbortedError(
      absl::StrCat("configmap ", name, ": still conflicting after ", max_attempts_, " attempts"));
}

}  // namespace kube
