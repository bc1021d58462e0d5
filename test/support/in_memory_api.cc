#include "test/support/in_memory_api.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"

namespace testing_support {

// A held stream's hold on the api: Stop() wakes the stream waiting in StreamLines.
class InMemoryApi::HeldStream final : public kube::Api::Stream::Connection {
 public:
  explicit HeldStream(InMemoryApi* api) : api_(api) {}
  void Stop() override {
    { std::lock_guard<std::mutex> lock(api_->mu_); }
    api_->stopped_.notify_all();
  }
  InMemoryApi* api() const { return api_; }

 private:
  InMemoryApi* const api_;
};

namespace {

using Allocator = rapidjson::Document::AllocatorType;

std::string WithoutQuery(const std::string& path) { return path.substr(0, path.find('?')); }

const char* ReasonOf(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 415:
      return "UnsupportedMediaType";
    case 429:
      return "TooManyRequests";
    default:
      return status >= 500 ? "InternalError" : "Unknown";
  }
}

// A meta/v1 Status, as kube-apiserver refuses.
kube::ApiResponse StatusReply(int status, absl::string_view message,
                              absl::string_view reason = "") {
  rapidjson::Document doc(rapidjson::kObjectType);
  Allocator& a = doc.GetAllocator();
  auto text = [&a](absl::string_view s) {
    return rapidjson::Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a);
  };
  doc.AddMember("kind", "Status", a);
  doc.AddMember("apiVersion", "v1", a);
  doc.AddMember("status", "Failure", a);
  doc.AddMember("message", text(message), a);
  doc.AddMember("reason", text(reason.empty() ? ReasonOf(status) : reason), a);
  doc.AddMember("code", status, a);
  return kube::ApiResponse{status, common::ToJson(doc)};
}

// Merges `patch` into `target` as RFC 7386 says: null removes, objects merge, the rest replaces.
void MergePatch(rapidjson::Value& target, const rapidjson::Value& patch, Allocator& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto m = patch.MemberBegin(); m != patch.MemberEnd(); ++m) {
    if (m->value.IsNull()) {
      target.RemoveMember(m->name);
      continue;
    }
    auto it = target.FindMember(m->name);
    if (it == target.MemberEnd()) {
      target.AddMember(rapidjson::Value(m->name, a), rapidjson::Value(), a);
      it = target.FindMember(m->name);
    }
    MergePatch(it->value, m->value, a);
  }
}

// The object's metadata, made an empty object when it is missing or is not one.
rapidjson::Value& Metadata(rapidjson::Document& doc) {
  auto it = doc.FindMember("metadata");
  if (it != doc.MemberEnd() && it->value.IsObject()) return it->value;
  if (it != doc.MemberEnd()) doc.RemoveMember(it);
  doc.AddMember("metadata", rapidjson::Value(rapidjson::kObjectType), doc.GetAllocator());
  return doc.FindMember("metadata")->value;
}

void SetString(rapidjson::Value& object, const char* key, absl::string_view value, Allocator& a) {
  object.RemoveMember(key);
  object.AddMember(
      rapidjson::StringRef(key),
      rapidjson::Value(value.data(), static_cast<rapidjson::SizeType>(value.size()), a), a);
}

}  // namespace

InMemoryApi::~InMemoryApi() = default;

void InMemoryApi::Reply(const std::string& method, const std::string& path_prefix, int status,
                        std::string body) {
  kube::ApiResponse response = body.empty()
                                   ? StatusReply(status, absl::StrCat("scripted HTTP ", status))
                                   : kube::ApiResponse{status, std::move(body)};
  std::lock_guard<std::mutex> lock(mu_);
  scripted_.push_back({method, path_prefix, absl::OkStatus(), std::move(response)});
}

void InMemoryApi::Fail(const std::string& method, const std::string& path_prefix,
                       absl::Status error) {
  std::lock_guard<std::mutex> lock(mu_);
  scripted_.push_back({method, path_prefix, std::move(error), {}});
}

std::string InMemoryApi::SetObject(const std::string& path, const std::string& json) {
  std::lock_guard<std::mutex> lock(mu_);
  return Store(path, json);
}

std::optional<std::string> InMemoryApi::Object(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(path);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

void InMemoryApi::ScriptStream(const std::string& path_prefix, std::vector<std::string> lines,
                               int status, bool hold_open) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back({path_prefix, std::move(lines), status, hold_open});
}

int InMemoryApi::RunningStreams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

std::vector<InMemoryApi::Call> InMemoryApi::Calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_;
}

std::vector<InMemoryApi::Call> InMemoryApi::Calls(absl::string_view method,
                                                  absl::string_view path_prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Call> out;
  for (const Call& c : calls_) {
    if (c.method == method && absl::StartsWith(c.path, path_prefix)) out.push_back(c);
  }
  return out;
}

void InMemoryApi::ClearCalls() {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.clear();
}

std::string InMemoryApi::Store(const std::string& path, const std::string& json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  if (!doc.ok() || !doc->IsObject()) return objects_[path] = json;
  SetString(Metadata(*doc), "resourceVersion", absl::StrCat(++resource_version_),
            doc->GetAllocator());
  return objects_[path] = common::ToJson(*doc);
}

kube::ApiResponse InMemoryApi::FromStore(const Call& call) {
  const std::string path = WithoutQuery(call.path);
  auto it = objects_.find(path);
  if (call.method == "POST") {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(call.body);
    if (!doc.ok() || !doc->IsObject()) return StatusReply(400, "the body is not a JSON object");
    rapidjson::Value& meta = Metadata(*doc);
    std::string name(common::StringOr(meta, "name"));
    if (name.empty()) {
      absl::string_view prefix = common::StringOr(meta, "generateName");
      if (prefix.empty()) return StatusReply(400, "name or generateName is required");
      name = absl::StrCat(prefix, ++generated_);
      SetString(meta, "name", name, doc->GetAllocator());
    }
    const std::string key = absl::StrCat(path, "/", name);
    if (objects_.count(key)) {
      return StatusReply(409, absl::StrCat("\"", name, "\" already exists"), "AlreadyExists");
    }
    return kube::ApiResponse{201, Store(key, common::ToJson(*doc))};
  }
  if (it == objects_.end()) return StatusReply(404, absl::StrCat(path, " not found"));
  if (call.method == "GET") return kube::ApiResponse{200, it->second};
  if (call.method == "DELETE") {
    kube::ApiResponse gone{200, it->second};
    objects_.erase(it);
    return gone;
  }
  if (call.method == "PUT") {
    absl::StatusOr<rapidjson::Document> body = common::ParseJson(call.body);
    absl::StatusOr<rapidjson::Document> stored = common::ParseJson(it->second);
    if (!body.ok() || !body->IsObject()) return StatusReply(400, "the body is not a JSON object");
    std::string wanted(common::StringOr(Metadata(*body), "resourceVersion"));
    std::string current =
        stored.ok() ? std::string(common::StringOr(Metadata(*stored), "resourceVersion")) : "";
    if (!wanted.empty() && wanted != current) {
      return StatusReply(409, absl::StrCat("Operation cannot be fulfilled on ", path,
                                           ": the object has been modified"));
    }
    return kube::ApiResponse{200, Store(path, call.body)};
  }
  if (call.method == "PATCH") {
    if (call.content_type != "application/merge-patch+json") {
      return StatusReply(415, absl::StrCat("patch type ", call.content_type, " not handled"));
    }
    absl::StatusOr<rapidjson::Document> patch = common::ParseJson(call.body);
    absl::StatusOr<rapidjson::Document> stored = common::ParseJson(it->second);
    if (!patch.ok() || !stored.ok()) return StatusReply(400, "the patch is not JSON");
    MergePatch(*stored, *patch, stored->GetAllocator());
    return kube::ApiResponse{200, Store(path, common::ToJson(*stored))};
  }
  return StatusReply(405, absl::StrCat(call.method, " not handled"), "MethodNotAllowed");
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Answer(Call call) {
  std::lock_guard<std::mutex> lock(mu_);
  calls_.push_back(call);
  for (auto it = scripted_.begin(); it != scripted_.end(); ++it) {
    if (it->method != call.method || !absl::StartsWith(call.path, it->path_prefix)) continue;
    Scripted s = std::move(*it);
    scripted_.erase(it);
    if (!s.error.ok()) return s.error;
    return s.response;
  }
  return FromStore(call);
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Get(const std::string& path) {
  return Answer({"GET", path, "", "", false});
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Post(const std::string& path,
                                                    const std::string& body) {
  return Answer({"POST", path, body, "application/json", false});
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Put(const std::string& path,
                                                   const std::string& body) {
  return Answer({"PUT", path, body, "application/json", false});
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Patch(const std::string& path,
                                                     const std::string& body,
                                                     const std::string& content_type) {
  return Answer({"PATCH", path, body, content_type, false});
}

absl::StatusOr<kube::ApiResponse> InMemoryApi::Delete(const std::string& path) {
  return Answer({"DELETE", path, "", "", false});
}

absl::StatusOr<int> InMemoryApi::StreamLines(const std::string& path,
                                             const std::function<bool(absl::string_view)>& on_line,
                                             Stream* cancel_handle, int /*read_timeout_seconds*/) {
  if (cancel_handle) {
    absl::Status begun = cancel_handle->Begin([this](std::unique_ptr<Stream::Connection>& kept) {
      auto* held = dynamic_cast<HeldStream*>(kept.get());
      if (held == nullptr || held->api() != this) {
        kept = std::make_unique<HeldStream>(this);
        held = static_cast<HeldStream*>(kept.get());
      }
      return held;
    });
    if (!begun.ok()) return begun;
  }
  std::optional<ScriptedStream> script;
  {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({"GET", path, "", "", true});
    for (auto it = streams_.begin(); it != streams_.end(); ++it) {
      if (!absl::StartsWith(path, it->path_prefix)) continue;
      script = std::move(*it);
      streams_.erase(it);
      break;
    }
  }
  auto stopping = [cancel_handle] { return cancel_handle && cancel_handle->stopping(); };
  int status = 404;
  if (!script) {
    on_line(StatusReply(404, absl::StrCat("no stream scripted for ", path)).body);
  } else {
    status = script->status;
    bool reader_done = false;  // on_line returned false
    for (const std::string& line : script->lines) {
      if (stopping()) break;
      if (!on_line(line)) {
        reader_done = true;
        break;
      }
    }
    if (script->hold_open && cancel_handle && !reader_done) {
      std::unique_lock<std::mutex> lock(mu_);
      ++running_;
      stopped_.wait(lock, stopping);
      --running_;
    }
  }
  if (cancel_handle) cancel_handle->End();
  if (cancel_handle && cancel_handle->cancelled()) return absl::CancelledError("watch cancelled");
  if (stopping()) return absl::AbortedError("watch interrupted");
  return status;
}

}  // namespace testing_support
