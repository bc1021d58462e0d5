// Test support, part of the kube-apiserver emulation: replies and the metav1.Status bodies of
// its errors (see apiserver_status.h).
#include "test/support/apiserver_status.h"

#include <map>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace testing_support::apiserver {
namespace {

constexpr char kOptimisticLock[] =
    "the object has been modified; please apply your changes to the latest version and try again";

}  // namespace

Reply StatusReply(int code, absl::string_view reason, absl::string_view message,
                  const Details* details, absl::string_view list_continue) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&w](absl::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartObject();
  w.Key("kind");
  w.String("Status");
  w.Key("apiVersion");
  w.String("v1");
  w.Key("metadata");
  w.StartObject();
  if (!list_continue.empty()) {
    w.Key("continue");
    str(list_continue);
  }
  w.EndObject();
  w.Key("status");
  w.String(code < 300 ? "Success" : "Failure");
  if (!message.empty()) {
    w.Key("message");
    str(message);
  }
  if (!reason.empty()) {
    w.Key("reason");
    str(reason);
  }
  if (details != nullptr) {
    w.Key("details");
    w.StartObject();
    if (!details->name.empty()) {
      w.Key("name");
      str(details->name);
    }
    if (!details->group.empty()) {
      w.Key("group");
      str(details->group);
    }
    if (!details->kind.empty()) {
      w.Key("kind");
      str(details->kind);
    }
    if (!details->uid.empty()) {
      w.Key("uid");
      str(details->uid);
    }
    if (!details->cause_reason.empty()) {
      w.Key("causes");
      w.StartArray();
      w.StartObject();
      w.Key("reason");
      str(details->cause_reason);
      w.Key("message");
      str(details->cause_message);
      w.Key("field");
      str(details->cause_field);
      w.EndObject();
      w.EndArray();
    }
    if (details->retry_after >= 0) {
      w.Key("retryAfterSeconds");
      w.Int(details->retry_after);
    }
    w.EndObject();
  }
  w.Key("code");
  w.Int(code);
  w.EndObject();
  Reply r;
  r.code = code;
  r.body.assign(buf.GetString(), buf.GetSize());
  return r;
}

Reply ObjectReply(int code, std::string json) {
  Reply r;
  r.code = code;
  r.body = std::move(json);
  return r;
}

Details ResourceDetails(const ResourceInfo& info, absl::string_view name) {
  Details d;
  d.name = std::string(name);
  d.group = info.group;
  d.kind = info.plural;
  return d;
}

Reply NotFound(const ResourceInfo& info, absl::string_view name) {
  Details d = ResourceDetails(info, name);
  return StatusReply(404, "NotFound", absl::StrCat(Qualified(info), " \"", name, "\" not found"),
                     &d);
}

Reply AlreadyExists(const ResourceInfo& info, absl::string_view name) {
  Details d = ResourceDetails(info, name);
  return StatusReply(409, "AlreadyExists",
                     absl::StrCat(Qualified(info), " \"", name, "\" already exists"), &d);
}

Reply Conflict(absl::string_view qualified, absl::string_view group, absl::string_view kind,
               absl::string_view name, absl::string_view why) {
  Details d;
  d.name = std::string(name);
  d.group = std::string(group);
  d.kind = std::string(kind);
  return StatusReply(
      409, "Conflict",
      absl::StrCat("Operation cannot be fulfilled on ", qualified, " \"", name, "\": ", why), &d);
}

Reply ModifiedConflict(const ResourceInfo& info, absl::string_view name) {
  return Conflict(Qualified(info), info.group, info.plural, name, kOptimisticLock);
}

Reply BadRequest(absl::string_view message) {
  return StatusReply(400, "BadRequest", message, nullptr);
}

Reply Invalid(absl::string_view qualified_kind, absl::string_view group, absl::string_view kind,
              absl::string_view name, absl::string_view field, absl::string_view cause_reason,
              absl::string_view detail) {
  Details d;
  d.name = std::string(name);
  d.group = std::string(group);
  d.kind = std::string(kind);
  d.cause_reason = std::string(cause_reason);
  d.cause_message = std::string(detail);
  d.cause_field = std::string(field);
  return StatusReply(
      422, "Invalid",
      absl::StrCat(qualified_kind, " \"", name, "\" is invalid: ", field, ": ", detail), &d);
}

Reply UnknownPath() {
  Details d;
  return StatusReply(404, "NotFound", "the server could not find the requested resource", &d);
}

Reply MethodNotAllowed() {
  Details d;
  return StatusReply(405, "MethodNotAllowed",
                     "the server does not allow this method on the requested resource", &d);
}

Reply InjectedFailure(int code) {
  static const std::map<int, std::pair<const char*, const char*>> kReasons = {
      {400, {"BadRequest", "injected bad request"}},
      {403, {"Forbidden", "injected forbidden"}},
      {404, {"NotFound", "injected not found"}},
      {409, {"Conflict", "injected conflict"}},
      {410, {"Expired", "injected expired"}},
      {429,
       {"TooManyRequests",
        "The server has received too many requests and has asked "
        "us to try again later"}},
      {500, {"InternalError", "Internal error occurred: injected failure"}},
      {503, {"ServiceUnavailable", "the server is currently unable to handle the request"}},
      {504, {"Timeout", "the server was unable to return a response in the time allotted"}},
  };
  auto r = kReasons.find(code);
  Details d;
  if (code == 429 || code == 503 || code == 504) d.retry_after = 1;
  Reply reply = StatusReply(code, r == kReasons.end() ? "" : r->second.first,
                            r == kReasons.end() ? "injected failure" : r->second.second,
                            d.retry_after >= 0 ? &d : nullptr);
  if (code == 429 || code == 503) reply.headers.emplace_back("Retry-After", "1");
  return reply;
}

absl::Status ToStatus(const Reply& reply) {
  if (reply.code < 300) return absl::OkStatus();
  std::string message = reply.body;
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(reply.body);
  if (doc.ok()) message = StringAt(*doc, "message");
  switch (reply.code) {
    case 404:
      return absl::NotFoundError(message);
    case 409:
      return absl::StrContains(reply.body, "AlreadyExists") ? absl::AlreadyExistsError(message)
                                                            : absl::AbortedError(message);
    case 400:
    case 415:
    case 422:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(absl::StrCat("HTTP ", reply.code, ": ", message));
  }
}

}  // namespace testing_support::apiserver
