#include "test/support/fake_apiserver.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/json.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/serve_process.h"

namespace testing_support {
namespace {

using Clock = std::chrono::steady_clock;
using Alloc = rapidjson::Document::AllocatorType;
using rapidjson::Value;

// ---------------------------------------------------------------------------------------------
// Resources

struct ResourceInfo {
  Resource resource;
  const char* plural;       // "pods": URL segment and Status details.kind
  const char* kind;         // "Pod"
  const char* list_kind;    // "PodList"
  const char* group;        // "" for the core group
  const char* api_version;  // "v1", "coordination.k8s.io/v1"
  bool namespaced;
  // The object a BOOKMARK carries: the zero value of the Go type with only resourceVersion set,
  // as encoding/json writes it (see watch-pods.raw). %RV% is replaced.
  const char* bookmark;
};

constexpr int kResourceCount = 5;
const ResourceInfo kInfos[kResourceCount] = {
    {Resource::kNodes, "nodes", "Node", "NodeList", "", "v1", false,
     R"({"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}})"},
    {Resource::kPods, "pods", "Pod", "PodList", "", "v1", true,
     R"({"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{"containers":null},"status":{}})"},
    {Resource::kNamespaces, "namespaces", "Namespace", "NamespaceList", "", "v1", false,
     R"({"kind":"Namespace","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{},"status":{}})"},
    {Resource::kLeases, "leases", "Lease", "LeaseList", "coordination.k8s.io",
     "coordination.k8s.io/v1", true,
     R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"spec":{}})"},
    {Resource::kEvents, "events", "Event", "EventList", "", "v1", true,
     R"({"kind":"Event","apiVersion":"v1","metadata":{"resourceVersion":"%RV%","creationTimestamp":null},"involvedObject":{},"reason":"","message":"","source":{},"firstTimestamp":null,"lastTimestamp":null,"count":0,"type":"","eventTime":null,"reportingComponent":"","reportingInstance":""})"},
};

const ResourceInfo& Info(Resource r) { return kInfos[static_cast<int>(r)]; }

// "pods", "leases.coordination.k8s.io": how Status messages name a resource.
std::string Qualified(const ResourceInfo& info) {
  return info.group[0] == '\0' ? info.plural : absl::StrCat(info.plural, ".", info.group);
}

bool ResourceForKind(absl::string_view kind, Resource* out) {
  for (const ResourceInfo& info : kInfos) {
    if (kind == info.kind) {
      *out = info.resource;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Small JSON helpers. Everything the emulator stores went through Normalize, so lookups below
// are on trusted documents; request bodies are parsed with common::ParseJson.

std::string ToJson(const Value& v) { return common::ToJson(v); }

std::string JsonString(absl::string_view s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

Value::MemberIterator FindMut(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return Value::MemberIterator();
  Value name(rapidjson::StringRef(key.data(), key.size()));
  return obj.FindMember(name);
}

Value* Mutable(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return nullptr;
  auto it = FindMut(obj, key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

// The object member `key`, created (or replaced if not an object).
Value& EnsureObject(Value& obj, absl::string_view key, Alloc& a) {
  if (Value* v = Mutable(obj, key)) {
    if (!v->IsObject()) v->SetObject();
    return *v;
  }
  obj.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a),
                Value(rapidjson::kObjectType), a);
  return (obj.MemberEnd() - 1)->value;
}

void SetMember(Value& obj, absl::string_view key, Value value, Alloc& a) {
  if (Value* v = Mutable(obj, key)) {
    *v = std::move(value);
    return;
  }
  obj.AddMember(Value(key.data(), static_cast<rapidjson::SizeType>(key.size()), a), value, a);
}

void SetString(Value& obj, absl::string_view key, absl::string_view s, Alloc& a) {
  SetMember(obj, key, Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), a), a);
}

void EraseMember(Value& obj, absl::string_view key) {
  if (!obj.IsObject()) return;
  auto it = FindMut(obj, key);
  if (it != obj.MemberEnd()) obj.EraseMember(it);
}

std::string StringAt(const Value& obj, absl::string_view key) {
  return std::string(common::StringOr(obj, key));
}

std::string MetaString(const Value& obj, absl::string_view key) {
  const Value* meta = common::FindMember(obj, "metadata");
  return meta == nullptr ? "" : StringAt(*meta, key);
}

// The value at a dotted path as a field selector sees it: strings as-is, booleans and numbers
// printed, anything else (or missing) "".
std::string FieldValue(const Value& obj, absl::string_view path) {
  const Value* v = &obj;
  for (absl::string_view seg : absl::StrSplit(path, '.')) {
    v = common::FindMember(*v, seg);
    if (v == nullptr) return "";
  }
  if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
  if (v->IsBool()) return v->GetBool() ? "true" : "false";
  if (v->IsInt64()) return absl::StrCat(v->GetInt64());
  return "";
}

// Reorders an object's members: `first` in that order, then the rest as they were.
void Reorder(Value& obj, const std::vector<absl::string_view>& first, Alloc& a) {
  if (!obj.IsObject()) return;
  Value out(rapidjson::kObjectType);
  for (absl::string_view key : first) {
    auto it = FindMut(obj, key);
    if (it != obj.MemberEnd()) out.AddMember(Value(it->name, a), Value(it->value, a), a);
  }
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    absl::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (std::find(first.begin(), first.end(), name) == first.end()) {
      out.AddMember(Value(it->name, a), Value(it->value, a), a);
    }
  }
  obj = std::move(out);
}

// kind and apiVersion first, metadata members in the order kube-apiserver encodes them.
void Normalize(const ResourceInfo& info, rapidjson::Document& doc, absl::string_view api_version) {
  Alloc& a = doc.GetAllocator();
  SetString(doc, "kind", info.kind, a);
  SetString(doc, "apiVersion", api_version, a);
  Reorder(doc, {"kind", "apiVersion", "metadata"}, a);
  Value& meta = EnsureObject(doc, "metadata", a);
  Reorder(meta,
          {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
           "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
           "annotations", "ownerReferences", "finalizers", "managedFields"},
          a);
}

std::string Now3339() {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return rng;
}

std::string NewUid() {
  uint64_t hi = Rng()(), lo = Rng()();
  hi = (hi & ~0xF000ULL) | 0x4000ULL;                  // version 4
  lo = (lo & ~(0xC000ULL << 48)) | (0x8000ULL << 48);  // variant 10
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xFFFF),
                static_cast<unsigned long long>(hi & 0xFFFF),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

std::string RandomSuffix() {  // the alphabet of k8s.io/apimachinery/pkg/util/rand
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 5; ++i) out += kAlphabet[Rng()() % (sizeof(kAlphabet) - 1)];
  return out;
}

bool ParseBool(absl::string_view s) {  // Go's strconv.ParseBool, true side
  return s == "1" || s == "t" || s == "T" || s == "true" || s == "TRUE" || s == "True";
}

// ---------------------------------------------------------------------------------------------
// Replies and Status bodies

struct Reply {
  int code = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Details {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::string cause_reason, cause_message, cause_field;
  int retry_after = -1;
};

Reply StatusReply(int code, absl::string_view reason, absl::string_view message,
                  const Details* details, absl::string_view list_continue = "") {
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

// apierrors.NewConflict: `Operation cannot be fulfilled on QUALIFIED "NAME": WHY`.
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

constexpr char kOptimisticLock[] =
    "the object has been modified; please apply your changes to the latest version and try again";

Reply ModifiedConflict(const ResourceInfo& info, absl::string_view name) {
  return Conflict(Qualified(info), info.group, info.plural, name, kOptimisticLock);
}

Reply BadRequest(absl::string_view message) {
  return StatusReply(400, "BadRequest", message, nullptr);
}

// apierrors.NewInvalid with one cause.
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

Reply ObjectReply(int code, std::string json) {
  Reply r;
  r.code = code;
  r.body = std::move(json);
  return r;
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

// ---------------------------------------------------------------------------------------------
// Selectors (labelSelector and fieldSelector query parameters)

struct Requirement {
  enum Op { kEq, kNotEq, kExists, kNotExists, kIn, kNotIn } op = kEq;
  std::string key;
  std::vector<std::string> values;
};

struct Selector {
  std::vector<Requirement> labels;
  std::vector<Requirement> fields;
  bool empty() const { return labels.empty() && fields.empty(); }
};

std::vector<std::string> SplitTopLevel(absl::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool ParseSetValues(absl::string_view rest, std::vector<std::string>* values) {
  rest = absl::StripAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, "(") || !absl::ConsumeSuffix(&rest, ")")) return false;
  for (absl::string_view v : absl::StrSplit(rest, ',')) {
    values->push_back(std::string(absl::StripAsciiWhitespace(v)));
  }
  return true;
}

absl::StatusOr<std::vector<Requirement>> ParseLabelSelector(absl::string_view text) {
  std::vector<Requirement> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (const std::string& raw : SplitTopLevel(text)) {
    absl::string_view term = absl::StripAsciiWhitespace(raw);
    Requirement r;
    size_t at;
    if (absl::ConsumePrefix(&term, "!")) {
      r.op = Requirement::kNotExists;
      r.key = std::string(absl::StripAsciiWhitespace(term));
    } else if ((at = term.find(" notin ")) != absl::string_view::npos) {
      r.op = Requirement::kNotIn;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      if (!ParseSetValues(term.substr(at + 7), &r.values)) r.key.clear();
    } else if ((at = term.find(" in ")) != absl::string_view::npos) {
      r.op = Requirement::kIn;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      if (!ParseSetValues(term.substr(at + 4), &r.values)) r.key.clear();
    } else if ((at = term.find("!=")) != absl::string_view::npos) {
      r.op = Requirement::kNotEq;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + 2)))};
    } else if ((at = term.find('=')) != absl::string_view::npos) {
      size_t skip = term.substr(at).size() > 1 && term[at + 1] == '=' ? 2 : 1;
      r.op = Requirement::kEq;
      r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
      r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + skip)))};
    } else {
      r.op = Requirement::kExists;
      r.key = std::string(term);
    }
    if (r.key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unable to parse requirement: found '", raw, "'"));
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The fields kube-apiserver indexes for selection (GetAttrs / field label conversion funcs).
bool FieldSupported(Resource r, absl::string_view field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  static const std::map<Resource, std::vector<absl::string_view>> kFields = {
      {Resource::kPods,
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"}},
      {Resource::kNodes, {"spec.unschedulable"}},
      {Resource::kNamespaces, {"status.phase"}},
      {Resource::kEvents,
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
  };
  auto it = kFields.find(r);
  return it != kFields.end() &&
         std::find(it->second.begin(), it->second.end(), field) != it->second.end();
}

absl::StatusOr<std::vector<Requirement>> ParseFieldSelector(Resource resource,
                                                            absl::string_view text) {
  std::vector<Requirement> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (absl::string_view term : absl::StrSplit(text, ',')) {
    Requirement r;
    size_t at;
    size_t skip = 1;
    if ((at = term.find("!=")) != absl::string_view::npos) {
      r.op = Requirement::kNotEq;
      skip = 2;
    } else if ((at = term.find("==")) != absl::string_view::npos) {
      skip = 2;
    } else if ((at = term.find('=')) == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    r.key = std::string(absl::StripAsciiWhitespace(term.substr(0, at)));
    r.values = {std::string(absl::StripAsciiWhitespace(term.substr(at + skip)))};
    if (!FieldSupported(resource, r.key)) {
      return absl::InvalidArgumentError(absl::StrCat("field label not supported: ", r.key));
    }
    out.push_back(std::move(r));
  }
  return out;
}

bool Matches(const Selector& sel, const Value& obj) {
  const Value* meta = common::FindMember(obj, "metadata");
  const Value* labels = meta == nullptr ? nullptr : common::FindMember(*meta, "labels");
  for (const Requirement& r : sel.labels) {
    const Value* v = labels == nullptr ? nullptr : common::FindMember(*labels, r.key);
    bool has = v != nullptr && v->IsString();
    std::string value = has ? std::string(v->GetString(), v->GetStringLength()) : "";
    bool in = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    switch (r.op) {
      case Requirement::kEq:
      case Requirement::kIn:
        if (!has || !in) return false;
        break;
      case Requirement::kNotEq:
      case Requirement::kNotIn:
        if (has && in) return false;
        break;
      case Requirement::kExists:
        if (!has) return false;
        break;
      case Requirement::kNotExists:
        if (has) return false;
        break;
    }
  }
  for (const Requirement& r : sel.fields) {
    bool equal = FieldValue(obj, r.key) == r.values[0];
    if (equal != (r.op == Requirement::kEq)) return false;
  }
  return true;
}

bool MatchesJson(const Selector& sel, const std::string& json) {
  if (sel.empty()) return true;
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  return !doc.HasParseError() && Matches(sel, doc);
}

// ---------------------------------------------------------------------------------------------
// Patches

// RFC 7386. Strategic-merge directives ($patch, $retainKeys, $setElementOrder/...) are dropped.
void ApplyMergePatch(Value& target, const Value& patch, Alloc& a) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, a);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (auto m = patch.MemberBegin(); m != patch.MemberEnd(); ++m) {
    absl::string_view name(m->name.GetString(), m->name.GetStringLength());
    if (absl::StartsWith(name, "$")) continue;
    auto it = FindMut(target, name);
    if (m->value.IsNull()) {
      if (it != target.MemberEnd()) target.EraseMember(it);
      continue;
    }
    if (it == target.MemberEnd()) {
      Value v;
      ApplyMergePatch(v, m->value, a);
      target.AddMember(Value(m->name, a), v, a);
    } else {
      ApplyMergePatch(it->value, m->value, a);
    }
  }
}

// RFC 6901 pointer into `root`: the parent container and the last token (unescaped).
struct Pointer {
  Value* parent = nullptr;
  std::string last;
  bool root = false;
};

absl::StatusOr<Pointer> Resolve(Value& root, absl::string_view path) {
  Pointer p;
  if (path.empty()) {
    p.root = true;
    return p;
  }
  if (path[0] != '/') return absl::InvalidArgumentError(absl::StrCat("bad pointer ", path));
  std::vector<std::string> tokens;
  for (absl::string_view t : absl::StrSplit(path.substr(1), '/')) {
    std::string s(t);
    std::string u;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '~' && i + 1 < s.size()) {
        u += s[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        u += s[i];
      }
    }
    tokens.push_back(u);
  }
  Value* cur = &root;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    Value* next = nullptr;
    if (cur->IsObject()) {
      next = Mutable(*cur, tokens[i]);
    } else if (cur->IsArray()) {
      size_t idx;
      if (absl::SimpleAtoi(tokens[i], &idx) && idx < cur->Size()) next = &(*cur)[idx];
    }
    if (next == nullptr) return absl::InvalidArgumentError(absl::StrCat("missing path ", path));
    cur = next;
  }
  p.parent = cur;
  p.last = tokens.back();
  return p;
}

absl::StatusOr<Value> TakeAt(Value& root, absl::string_view path, bool remove, Alloc& a) {
  absl::StatusOr<Pointer> p = Resolve(root, path);
  if (!p.ok()) return p.status();
  if (p->root) return Value(root, a);
  Value* parent = p->parent;
  if (parent->IsObject()) {
    auto it = FindMut(*parent, p->last);
    if (it == parent->MemberEnd())
      return absl::InvalidArgumentError("missing path " + std::string(path));
    Value out(it->value, a);
    if (remove) parent->EraseMember(it);
    return out;
  }
  size_t idx;
  if (!parent->IsArray() || !absl::SimpleAtoi(p->last, &idx) || idx >= parent->Size()) {
    return absl::InvalidArgumentError(absl::StrCat("missing path ", path));
  }
  Value out((*parent)[idx], a);
  if (remove) parent->Erase(parent->Begin() + idx);
  return out;
}

absl::Status PutAt(Value& root, absl::string_view path, Value value, bool replace, Alloc& a) {
  absl::StatusOr<Pointer> p = Resolve(root, path);
  if (!p.ok()) return p.status();
  if (p->root) {
    root = std::move(value);
    return absl::OkStatus();
  }
  Value* parent = p->parent;
  if (parent->IsObject()) {
    if (replace && Mutable(*parent, p->last) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("missing path ", path));
    }
    SetMember(*parent, p->last, std::move(value), a);
    return absl::OkStatus();
  }
  if (!parent->IsArray()) return absl::InvalidArgumentError(absl::StrCat("missing path ", path));
  if (p->last == "-" && !replace) {
    parent->PushBack(value, a);
    return absl::OkStatus();
  }
  size_t idx;
  if (!absl::SimpleAtoi(p->last, &idx) || idx > parent->Size() ||
      (replace && idx == parent->Size())) {
    return absl::InvalidArgumentError(absl::StrCat("bad array index in ", path));
  }
  if (replace) {
    (*parent)[idx] = std::move(value);
    return absl::OkStatus();
  }
  parent->PushBack(value, a);
  for (size_t i = parent->Size() - 1; i > idx; --i) (*parent)[i].Swap((*parent)[i - 1]);
  return absl::OkStatus();
}

// RFC 6902: add, remove, replace, move, copy, test.
absl::Status ApplyJsonPatch(rapidjson::Document& doc, const Value& ops) {
  if (!ops.IsArray()) return absl::InvalidArgumentError("a JSON patch must be an array");
  Alloc& a = doc.GetAllocator();
  for (const Value& op : ops.GetArray()) {
    std::string kind = StringAt(op, "op");
    std::string path = StringAt(op, "path");
    const Value* value = common::FindMember(op, "value");
    absl::Status s;
    if (kind == "add" || kind == "replace") {
      if (value == nullptr) return absl::InvalidArgumentError(kind + " without value");
      s = PutAt(doc, path, Value(*value, a), kind == "replace", a);
    } else if (kind == "remove") {
      s = TakeAt(doc, path, true, a).status();
    } else if (kind == "move" || kind == "copy") {
      absl::StatusOr<Value> v = TakeAt(doc, StringAt(op, "from"), kind == "move", a);
      s = v.ok() ? PutAt(doc, path, std::move(*v), false, a) : v.status();
    } else if (kind == "test") {
      absl::StatusOr<Value> v = TakeAt(doc, path, false, a);
      if (!v.ok()) return v.status();
      if (value == nullptr || !(*v == *value)) {
        return absl::InvalidArgumentError(absl::StrCat("testing value ", path, " failed"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("Unexpected kind: ", kind));
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Connections

// Calls `fn(fd, peer_port)` for every accepted TCP connection on 127.0.0.1:local_port, found
// through /proc/self/fd (cpp-httplib does not expose its sockets); stops when fn returns false.
template <typename Fn>
void ForEachConnection(int local_port, Fn fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (dirent* e = readdir(dir)) {
    int fd;
    if (!absl::SimpleAtoi(e->d_name, &fd) || fd == dirfd(dir)) continue;
    sockaddr_in local{}, peer{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != local_port) {
      continue;
    }
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    if (!fn(fd, static_cast<int>(ntohs(peer.sin_port)))) break;
  }
  closedir(dir);
}

// The server side of the connection from remote_port; -1 if none. The socket stays ours while
// the request that asked is being served.
int FindConnectionFd(int local_port, int remote_port) {
  int found = -1;
  ForEachConnection(local_port, [&](int fd, int peer) {
    if (peer != remote_port) return true;
    found = fd;
    return false;
  });
  return found;
}

void ShutdownConnections(int local_port) {
  ForEachConnection(local_port, [](int fd, int) {
    shutdown(fd, SHUT_RDWR);
    return true;
  });
}

bool PeerClosed(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, static_cast<short>(POLLRDHUP), 0};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

std::string PeerCommonName(const httplib::Request& req) {
  if (req.ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) return "";
  std::string cn;
  if (SSL_get_verify_result(req.ssl) == X509_V_OK) {
    char buf[256] = {0};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf)) >
        0) {
      cn = buf;
    }
  }
  X509_free(cert);
  return cn;
}

// ---------------------------------------------------------------------------------------------
// Routes

struct Route {
  Resource resource = Resource::kPods;
  std::string ns;    // "" for cluster-scoped objects and all-namespace lists
  std::string name;  // "" for collections
  std::string sub;   // "binding", "status"
  std::string api_version;
};

bool ParseRoute(absl::string_view path, Route* route) {
  std::vector<std::string> segs;
  for (absl::string_view s : absl::StrSplit(path, '/', absl::SkipEmpty())) segs.emplace_back(s);
  std::vector<Resource> allowed;
  size_t base;
  if (segs.size() >= 2 && segs[0] == "api" && segs[1] == "v1") {
    allowed = {Resource::kNodes, Resource::kPods, Resource::kNamespaces, Resource::kEvents};
    route->api_version = "v1";
    base = 2;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "coordination.k8s.io" &&
             segs[2] == "v1") {
    allowed = {Resource::kLeases};
    route->api_version = "coordination.k8s.io/v1";
    base = 3;
  } else if (segs.size() >= 3 && segs[0] == "apis" && segs[1] == "events.k8s.io" &&
             segs[2] == "v1") {
    allowed = {Resource::kEvents};
    route->api_version = "events.k8s.io/v1";
    base = 3;
  } else {
    return false;
  }
  std::vector<std::string> rest(segs.begin() + base, segs.end());
  auto lookup = [&allowed](const std::string& plural, Resource* out) {
    for (Resource r : allowed) {
      if (plural == Info(r).plural) {
        *out = r;
        return true;
      }
    }
    return false;
  };
  Resource r;
  // /namespaces/NS/RESOURCE[/NAME[/SUB]]
  if (rest.size() >= 3 && rest[0] == "namespaces" && lookup(rest[2], &r) && Info(r).namespaced) {
    if (rest.size() > 5) return false;
    route->resource = r;
    route->ns = rest[1];
    if (rest.size() >= 4) route->name = rest[3];
    if (rest.size() == 5) route->sub = rest[4];
    return true;
  }
  // /RESOURCE[/NAME[/SUB]]: cluster-scoped objects, or all-namespace lists of namespaced ones.
  if (rest.empty() || rest.size() > 3 || !lookup(rest[0], &r)) return false;
  if (Info(r).namespaced && rest.size() > 1) return false;
  route->resource = r;
  if (rest.size() >= 2) route->name = rest[1];
  if (rest.size() == 3) route->sub = rest[2];
  return true;
}

std::string KeyFor(const ResourceInfo& info, absl::string_view ns, absl::string_view name) {
  return info.namespaced ? absl::StrCat(ns, "/", name) : std::string(name);
}

// What real lists do: items carry no kind/apiVersion.
std::string StripTypeMeta(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError()) return json;
  EraseMember(doc, "kind");
  EraseMember(doc, "apiVersion");
  return ToJson(doc);
}

std::string ContinueToken(int64_t rv, absl::string_view start) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("v");
  w.String("meta.k8s.io/v1");
  w.Key("rv");
  w.Int64(rv);
  w.Key("start");
  w.String(start.data(), static_cast<rapidjson::SizeType>(start.size()));
  w.EndObject();
  return absl::WebSafeBase64Escape(absl::string_view(buf.GetString(), buf.GetSize()));
}

}  // namespace

// -----------------------------------------------------------------------------------------------

class FakeApiServer::Impl {
 public:
  explicit Impl(Options options) : options_(std::move(options)) {
    tokens_ = options_.tokens;
    bookmark_interval_ = options_.bookmark_interval;
  }
  ~Impl() { Stop(); }

  absl::Status Init() {
    if (options_.cert_dir.empty()) {
      temp_ = std::make_unique<TempDir>();
      cert_dir_ = temp_->path();
      absl::Status s = MakeTestCerts(cert_dir_);
      if (!s.ok()) return s;
    } else {
      cert_dir_ = options_.cert_dir;
    }
    return Listen(options_.port);
  }

  // ---- server life

  absl::Status Listen(int port) {
    auto server = std::make_unique<httplib::SSLServer>(
        (cert_dir_ + "/tls.crt").c_str(), (cert_dir_ + "/tls.key").c_str(),
        options_.require_client_cert ? (cert_dir_ + "/ca.crt").c_str() : nullptr);
    if (!server->is_valid()) return absl::InternalError("cannot load the test certificates");
    int threads = options_.threads;
    server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    listen_fd_ = -1;
    server->set_socket_options([this](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_fd_ = sock;
    });
    server->set_tcp_nodelay(true);
    server->set_keep_alive_max_count(1000);
    server->set_read_timeout(10, 0);
    server->set_write_timeout(10, 0);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res);
    };
    server->Get(".*", handler);
    server->Post(".*", handler);
    server->Put(".*", handler);
    server->Patch(".*", handler);
    server->Delete(".*", handler);

    int bound = -1;
    if (port == 0) {
      bound = server->bind_to_any_port("127.0.0.1");
    } else {
      // The old listener may still be closing; SO_REUSEADDR covers TIME_WAIT.
      for (int i = 0; i < 100 && bound < 0; ++i) {
        if (server->bind_to_port("127.0.0.1", port)) {
          bound = port;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    }
    if (bound <= 0) {
      return absl::UnavailableError(absl::StrCat("cannot bind 127.0.0.1:", port));
    }
    // cpp-httplib listens with a backlog of 5; a burst of test clients needs more.
    if (listen_fd_ >= 0) ::listen(listen_fd_, 128);
    httplib::SSLServer* raw = server.get();
    std::thread thread([raw] { raw->listen_after_bind(); });
    // stop() is a no-op until the listen loop runs; wait so a quick Stop() cannot be lost.
    for (int i = 0; i < 5000 && !raw->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard<std::mutex> lock(mu_);
    port_ = bound;
    server_ = std::move(server);
    thread_ = std::move(thread);
    return absl::OkStatus();
  }

  void Stop() {
    std::unique_ptr<httplib::SSLServer> server;
    std::thread thread;
    int port;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (server_ == nullptr) return;
      stopping_ = true;
      server = std::move(server_);
      thread = std::move(thread_);
      port = port_;
      cv_.notify_all();
    }
    server->stop();
    // Idle keep-alive connections would otherwise hold the worker threads for their timeout.
    ShutdownConnections(port);
    thread.join();
    server.reset();
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }

  absl::Status Restart(bool keep_state) {
    Stop();
    if (!keep_state) {
      std::lock_guard<std::mutex> lock(mu_);
      for (Store& s : stores_) s = Store();
      compacted_ = rv_;
    }
    return Listen(port_);
  }

  bool running() const {
    std::lock_guard<std::mutex> lock(mu_);
    return server_ != nullptr;
  }

  // ---- scripting

  absl::Status Load(absl::string_view text) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
    if (!doc.ok()) return doc.status();
    std::string kind = StringAt(*doc, "kind");
    const Value* items = common::FindMember(*doc, "items");
    if (items == nullptr) {
      Resource r;
      if (!ResourceForKind(kind, &r)) {
        return absl::InvalidArgumentError(absl::StrCat("cannot store kind \"", kind, "\""));
      }
      return Upsert(r, text);
    }
    if (!items->IsArray()) return absl::InvalidArgumentError("items: expected an array");
    std::string item_kind(absl::StripSuffix(kind, "List"));
    for (const Value& item : items->GetArray()) {
      std::string k = StringAt(item, "kind");
      if (k.empty()) k = item_kind;
      Resource r;
      if (!ResourceForKind(k, &r)) {
        return absl::InvalidArgumentError(absl::StrCat("cannot store kind \"", k, "\""));
      }
      absl::Status s = Upsert(r, ToJson(item));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Add(Resource r, absl::string_view json) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
    if (!doc.ok()) return doc.status();
    std::lock_guard<std::mutex> lock(mu_);
    return ToStatus(CreateLocked(r, *doc, "", Info(r).api_version, /*from_api=*/false));
  }

  absl::Status Upsert(Resource r, absl::string_view json) {
    absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
    if (!doc.ok()) return doc.status();
    const ResourceInfo& info = Info(r);
    std::string api_version =
        r == Resource::kEvents && StringAt(*doc, "apiVersion") == "events.k8s.io/v1"
            ? "events.k8s.io/v1"
            : info.api_version;
    std::lock_guard<std::mutex> lock(mu_);
    std::string ns = info.namespaced ? MetaString(*doc, "namespace") : "";
    if (info.namespaced && ns.empty()) ns = "default";
    std::string name = MetaString(*doc, "name");
    if (Current(r, KeyFor(info, ns, name)) == nullptr) {
      return ToStatus(CreateLocked(r, *doc, "", api_version, false));
    }
    return ToStatus(UpdateLocked(r, *doc, ns, name, api_version, false));
  }

  absl::Status Delete(Resource r, absl::string_view ns, absl::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    return ToStatus(DeleteLocked(r, ns, name, false));
  }

  absl::Status MergePatch(Resource r, absl::string_view ns, absl::string_view name,
                          absl::string_view patch) {
    std::lock_guard<std::mutex> lock(mu_);
    return ToStatus(
        PatchLocked(r, ns, name, "application/merge-patch+json", patch, Info(r).api_version));
  }

  bool DeleteSilently(Resource r, absl::string_view ns, absl::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    const ResourceInfo& info = Info(r);
    std::string key = KeyFor(info, ns, name);
    const std::string* cur = Current(r, key);
    if (cur == nullptr) return false;
    std::string json = *cur;
    ++rv_;
    stores_[static_cast<int>(r)].objects[key].push_back({rv_, true, json});
    cv_.notify_all();
    return true;
  }

  std::string GetObject(Resource r, absl::string_view ns, absl::string_view name) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string* cur = Current(r, KeyFor(Info(r), ns, name));
    return cur == nullptr ? "" : *cur;
  }

  std::vector<std::string> ListObjects(Resource r, absl::string_view ns) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [key, revs] : stores_[static_cast<int>(r)].objects) {
      if (revs.empty() || revs.back().deleted) continue;
      if (!ns.empty() && !absl::StartsWith(key, absl::StrCat(ns, "/"))) continue;
      out.push_back(revs.back().json);
    }
    return out;
  }

  std::vector<std::string> Events() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<int64_t, std::string>> found;
    for (const auto& [key, revs] : stores_[static_cast<int>(Resource::kEvents)].objects) {
      if (revs.empty() || revs.back().deleted) continue;
      size_t first = revs.size() - 1;  // the revision that created the current incarnation
      while (first > 0 && !revs[first - 1].deleted) --first;
      found.emplace_back(revs[first].rv, revs.back().json);
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
  }

  // ---- watches and knobs

  void DropWatches(bool graceful) {
    std::lock_guard<std::mutex> lock(mu_);
    ++drop_generation_;
    drop_graceful_ = graceful;
    cv_.notify_all();
  }

  void Compact() {
    std::lock_guard<std::mutex> lock(mu_);
    compacted_ = rv_;
  }

  bool WaitForWatches(int count, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return open_watches_ >= count; });
  }

  void InjectFailure(absl::string_view method, absl::string_view prefix, int status, int times) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back({std::string(method), std::string(prefix), status, times});
  }

  int64_t CountRequests(absl::string_view method, absl::string_view prefix,
                        absl::string_view query) const {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t n = 0;
    for (const auto& [id, rec] : requests_) {
      if (!method.empty() && rec.method != method) continue;
      if (!absl::StartsWith(rec.path, prefix)) continue;
      size_t q = rec.target.find('?');
      absl::string_view raw_query =
          q == std::string::npos ? absl::string_view() : absl::string_view(rec.target).substr(q);
      if (!query.empty() && !absl::StrContains(raw_query, query)) continue;
      ++n;
    }
    return n;
  }

  // Everything below is guarded by mu_ (public members: the FakeApiServer forwarders use them).
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  Options options_;
  std::string cert_dir_;
  int port_ = 0;
  std::vector<std::string> tokens_;
  std::chrono::milliseconds bookmark_interval_;
  std::chrono::milliseconds latency_{0};
  int open_watches_ = 0;
  int bindings_in_flight_ = 0;
  int max_bindings_in_flight_ = 0;
  // etcd starts at revision 1, so no list ever reports "0" (which means "any" to a watch).
  int64_t rv_ = 1;
  std::deque<std::pair<uint64_t, RequestRecord>> requests_;

 private:
  struct Revision {
    int64_t rv;
    bool deleted;
    std::string json;
  };
  struct WatchEvent {
    int64_t rv;
    std::string type;
    std::string ns;
    std::string json;
    std::string prev_json;  // the object before a MODIFIED, for selector transitions
  };
  struct Store {
    std::map<std::string, std::vector<Revision>> objects;  // key -> revisions, oldest first
    std::vector<WatchEvent> events;                        // ascending rv, never trimmed
  };
  struct Failure {
    std::string method;
    std::string prefix;
    int status;
    int times;
  };
  struct Watch {
    Resource resource;
    std::string ns;
    Selector selector;
    int64_t cursor = 0;              // events up to here were sent
    std::deque<std::string> lines;   // initial state, or the ERROR event
    bool close_after_lines = false;  // the 410 case
    bool bookmarks = false;
    Clock::time_point deadline;
    Clock::time_point last_bookmark;
    uint64_t drop_generation = 0;
    int fd = -1;
  };

  const std::string* Current(Resource r, const std::string& key) const {
    const Store& s = stores_[static_cast<int>(r)];
    auto it = s.objects.find(key);
    if (it == s.objects.end() || it->second.empty() || it->second.back().deleted) return nullptr;
    return &it->second.back().json;
  }

  // Bumps the resourceVersion, stores the revision and records the watch event.
  std::string CommitLocked(Resource r, const std::string& key, absl::string_view type,
                           rapidjson::Document& doc, absl::string_view api_version,
                           const std::string* prev) {
    const ResourceInfo& info = Info(r);
    int64_t rv = ++rv_;
    Value& meta = EnsureObject(doc, "metadata", doc.GetAllocator());
    SetString(meta, "resourceVersion", absl::StrCat(rv), doc.GetAllocator());
    Normalize(info, doc, api_version);
    std::string json = ToJson(doc);
    Store& s = stores_[static_cast<int>(r)];
    s.objects[key].push_back({rv, type == "DELETED", json});
    s.events.push_back({rv, std::string(type), info.namespaced ? MetaString(doc, "namespace") : "",
                        json, prev == nullptr ? "" : *prev});
    cv_.notify_all();
    return json;
  }

  Reply CreateLocked(Resource r, rapidjson::Document& doc, absl::string_view url_ns,
                     absl::string_view api_version, bool from_api) {
    const ResourceInfo& info = Info(r);
    Alloc& a = doc.GetAllocator();
    if (!doc.IsObject()) return BadRequest("the body must be a JSON object");
    Value& meta = EnsureObject(doc, "metadata", a);
    std::string name = StringAt(meta, "name");
    if (name.empty() && !StringAt(meta, "generateName").empty()) {
      name = StringAt(meta, "generateName") + RandomSuffix();
      SetString(meta, "name", name, a);
    }
    if (name.empty()) {
      return Invalid(info.kind, "", info.kind, "", "metadata.name", "FieldValueRequired",
                     "Required value: name or generateName is required");
    }
    std::string ns;
    if (info.namespaced) {
      ns = StringAt(meta, "namespace");
      if (!url_ns.empty() && !ns.empty() && ns != url_ns) {
        return BadRequest(
            "the namespace of the provided object does not match the namespace sent on the "
            "request");
      }
      if (ns.empty()) ns = url_ns.empty() ? "default" : std::string(url_ns);
      SetString(meta, "namespace", ns, a);
    } else {
      EraseMember(meta, "namespace");
    }
    if (from_api && !StringAt(meta, "resourceVersion").empty()) {
      return StatusReply(500, "", "resourceVersion should not be set on objects to be created",
                         nullptr);
    }
    std::string key = KeyFor(info, ns, name);
    if (Current(r, key) != nullptr) return AlreadyExists(info, name);
    if (StringAt(meta, "uid").empty()) SetString(meta, "uid", NewUid(), a);
    const Value* created = common::FindMember(meta, "creationTimestamp");
    if (created == nullptr || !created->IsString()) {
      SetString(meta, "creationTimestamp", Now3339(), a);
    }
    if (from_api) Default(r, doc);
    return ObjectReply(201, CommitLocked(r, key, "ADDED", doc, api_version, nullptr));
  }

  // The few defaults clients notice.
  void Default(Resource r, rapidjson::Document& doc) {
    Alloc& a = doc.GetAllocator();
    if (r == Resource::kPods) {
      Value& status = EnsureObject(doc, "status", a);
      if (StringAt(status, "phase").empty()) SetString(status, "phase", "Pending", a);
    } else if (r == Resource::kNamespaces) {
      Value& status = EnsureObject(doc, "status", a);
      if (StringAt(status, "phase").empty()) SetString(status, "phase", "Active", a);
    }
  }

  // Keeps identity fields, and drops no-op writes as kube-apiserver does (same
  // resourceVersion, no event). `doc` has metadata.resourceVersion set to the expected value.
  Reply WriteUpdateLocked(Resource r, const std::string& key, rapidjson::Document& doc,
                          absl::string_view api_version, const std::string& old_json) {
    const ResourceInfo& info = Info(r);
    rapidjson::Document old;
    old.Parse(old_json.c_str(), old_json.size());
    Alloc& a = doc.GetAllocator();
    Value& meta = EnsureObject(doc, "metadata", a);
    for (absl::string_view field : {"name", "namespace", "uid", "creationTimestamp"}) {
      std::string v = MetaString(old, field);
      if (v.empty()) {
        EraseMember(meta, field);
      } else {
        SetString(meta, field, v, a);
      }
    }
    SetString(meta, "resourceVersion", MetaString(old, "resourceVersion"), a);
    Normalize(info, doc, api_version);
    if (ToJson(doc) == old_json) return ObjectReply(200, old_json);
    return ObjectReply(200, CommitLocked(r, key, "MODIFIED", doc, api_version, &old_json));
  }

  Reply UpdateLocked(Resource r, rapidjson::Document& doc, absl::string_view ns,
                     absl::string_view url_name, absl::string_view api_version, bool from_api) {
    const ResourceInfo& info = Info(r);
    if (!doc.IsObject()) return BadRequest("the body must be a JSON object");
    Alloc& a = doc.GetAllocator();
    Value& meta = EnsureObject(doc, "metadata", a);
    std::string name = StringAt(meta, "name");
    if (from_api && name != url_name) {
      return BadRequest(absl::StrCat("the name of the object (", name,
                                     ") does not match the name on the URL (", url_name, ")"));
    }
    if (from_api && info.namespaced) {
      std::string body_ns = StringAt(meta, "namespace");
      if (!body_ns.empty() && body_ns != ns) {
        return BadRequest(
            "the namespace of the provided object does not match the namespace sent on the "
            "request");
      }
      SetString(meta, "namespace", ns, a);
    }
    std::string key = KeyFor(info, ns, name);
    const std::string* cur = Current(r, key);
    if (cur == nullptr) {
      // Leases allow create-on-update (AllowCreateOnUpdate); the rest answer NotFound.
      if (from_api && r == Resource::kLeases) {
        EraseMember(meta, "resourceVersion");
        return CreateLocked(r, doc, ns, api_version, true);
      }
      return NotFound(info, name);
    }
    std::string old_json = *cur;
    std::string sent_rv = StringAt(meta, "resourceVersion");
    std::string stored_rv;
    {
      rapidjson::Document old;
      old.Parse(old_json.c_str(), old_json.size());
      stored_rv = MetaString(old, "resourceVersion");
    }
    if (from_api) {
      if (sent_rv.empty() && r == Resource::kLeases) {  // AllowUnconditionalUpdate() == false
        return Invalid(Qualified(info), info.group, info.plural, name, "metadata.resourceVersion",
                       "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update");
      }
      if (!sent_rv.empty() && sent_rv != stored_rv) return ModifiedConflict(info, name);
    }
    return WriteUpdateLocked(r, key, doc, api_version, old_json);
  }

  Reply PatchLocked(Resource r, absl::string_view ns, absl::string_view name,
                    absl::string_view content_type, absl::string_view body,
                    absl::string_view api_version) {
    const ResourceInfo& info = Info(r);
    std::string key = KeyFor(info, ns, name);
    const std::string* cur = Current(r, key);
    if (cur == nullptr) return NotFound(info, name);
    std::string old_json = *cur;
    rapidjson::Document doc;
    doc.Parse(old_json.c_str(), old_json.size());
    std::string stored_rv = MetaString(doc, "resourceVersion");
    absl::StatusOr<rapidjson::Document> patch = common::ParseJson(body);
    if (!patch.ok()) return BadRequest(patch.status().message());
    if (content_type == "application/merge-patch+json" ||
        content_type == "application/strategic-merge-patch+json") {
      if (!patch->IsObject()) return BadRequest("a merge patch must be a JSON object");
      ApplyMergePatch(doc, *patch, doc.GetAllocator());
    } else if (content_type == "application/json-patch+json") {
      absl::Status s = ApplyJsonPatch(doc, *patch);
      if (!s.ok()) {
        return StatusReply(422, "Invalid", s.message(), nullptr);
      }
    } else {
      return StatusReply(
          415, "UnsupportedMediaType",
          absl::StrCat("the body of the request was in an unknown format - accepted media types "
                       "include: application/json-patch+json, application/merge-patch+json, "
                       "application/apply-patch+yaml"),
          nullptr);
    }
    // A resourceVersion in the patch is a precondition.
    std::string patched_rv = MetaString(doc, "resourceVersion");
    if (!patched_rv.empty() && patched_rv != stored_rv) return ModifiedConflict(info, name);
    return WriteUpdateLocked(r, key, doc, api_version, old_json);
  }

  Reply DeleteLocked(Resource r, absl::string_view ns, absl::string_view name, bool from_api) {
    const ResourceInfo& info = Info(r);
    std::string key = KeyFor(info, ns, name);
    const std::string* cur = Current(r, key);
    if (cur == nullptr) return NotFound(info, name);
    std::string old_json = *cur;
    rapidjson::Document doc;
    doc.Parse(old_json.c_str(), old_json.size());
    std::string api_version = StringAt(doc, "apiVersion");
    std::string uid = MetaString(doc, "uid");
    if (from_api && r == Resource::kPods && !FieldValue(doc, "spec.nodeName").empty() &&
        MetaString(doc, "deletionTimestamp").empty()) {
      // A bound pod is marked first (deletionTimestamp, grace 0 as with --force), then removed:
      // the MODIFIED + DELETED pair of watch-pods.raw.
      Alloc& a = doc.GetAllocator();
      Value& meta = EnsureObject(doc, "metadata", a);
      SetString(meta, "deletionTimestamp", Now3339(), a);
      SetMember(meta, "deletionGracePeriodSeconds", Value(0), a);
      old_json = CommitLocked(r, key, "MODIFIED", doc, api_version, &old_json);
    }
    std::string json = CommitLocked(r, key, "DELETED", doc, api_version, nullptr);
    if (r == Resource::kLeases || r == Resource::kEvents) {
      Details d = ResourceDetails(info, name);
      d.uid = uid;
      return StatusReply(200, "", "", &d);
    }
    return ObjectReply(200, json);
  }

  Reply BindLocked(absl::string_view ns, absl::string_view name, absl::string_view body) {
    const ResourceInfo& info = Info(Resource::kPods);
    absl::StatusOr<rapidjson::Document> binding = common::ParseJson(body);
    if (!binding.ok()) return BadRequest(binding.status().message());
    std::string binding_name = MetaString(*binding, "name");
    if (binding_name != name) {
      return BadRequest("name in URL does not match name in Binding object");
    }
    std::string binding_ns = MetaString(*binding, "namespace");
    if (!binding_ns.empty() && binding_ns != ns) {
      return BadRequest(
          "the namespace of the provided object does not match the namespace sent on the "
          "request");
    }
    const Value* target = common::FindMember(*binding, "target");
    std::string node = target == nullptr ? "" : StringAt(*target, "name");
    std::string target_kind = target == nullptr ? "" : StringAt(*target, "kind");
    if (!target_kind.empty() && target_kind != "Node") {
      return Invalid("Binding", "", "Binding", name, "target.kind", "FieldValueNotSupported",
                     absl::StrCat("Unsupported value: \"", target_kind,
                                  "\": supported values: \"Node\", \"<empty>\""));
    }
    if (node.empty()) {
      return Invalid("Binding", "", "Binding", name, "target.name", "FieldValueRequired",
                     "Required value");
    }
    std::string key = KeyFor(info, ns, name);
    const std::string* cur = Current(Resource::kPods, key);
    if (cur == nullptr) return NotFound(info, name);
    std::string old_json = *cur;
    rapidjson::Document pod;
    pod.Parse(old_json.c_str(), old_json.size());
    Alloc& a = pod.GetAllocator();
    std::string uid = MetaString(*binding, "uid");
    if (!uid.empty() && uid != MetaString(pod, "uid")) {
      return Conflict("pods", "", "pods", name,
                      absl::StrCat("Precondition failed: UID in precondition: ", uid,
                                   ", UID in object meta: ", MetaString(pod, "uid")));
    }
    auto bind_conflict = [&](absl::string_view why) {
      return Conflict("pods/binding", "", "pods/binding", name, why);
    };
    if (!MetaString(pod, "deletionTimestamp").empty()) {
      return bind_conflict(
          absl::StrCat("pod ", name, " is being deleted, cannot be assigned to a host"));
    }
    std::string assigned = FieldValue(pod, "spec.nodeName");
    if (!assigned.empty()) {
      return bind_conflict(
          absl::StrCat("pod ", name, " is already assigned to node \"", assigned, "\""));
    }
    const Value* spec = common::FindMember(pod, "spec");
    const Value* gates = spec == nullptr ? nullptr : common::FindMember(*spec, "schedulingGates");
    if (gates != nullptr && gates->IsArray() && !gates->Empty()) {
      return bind_conflict(absl::StrCat("pod ", name, " has non-empty .spec.schedulingGates"));
    }
    SetString(EnsureObject(pod, "spec", a), "nodeName", node, a);
    const Value* bmeta = common::FindMember(*binding, "metadata");
    const Value* annotations =
        bmeta == nullptr ? nullptr : common::FindMember(*bmeta, "annotations");
    if (annotations != nullptr && annotations->IsObject()) {
      Value& pod_annotations = EnsureObject(EnsureObject(pod, "metadata", a), "annotations", a);
      for (auto m = annotations->MemberBegin(); m != annotations->MemberEnd(); ++m) {
        SetMember(pod_annotations,
                  absl::string_view(m->name.GetString(), m->name.GetStringLength()),
                  Value(m->value, a), a);
      }
    }
    // podutil.UpdatePodCondition(PodScheduled=True).
    Value& status = EnsureObject(pod, "status", a);
    Value* conditions = Mutable(status, "conditions");
    if (conditions == nullptr || !conditions->IsArray()) {
      SetMember(status, "conditions", Value(rapidjson::kArrayType), a);
      conditions = Mutable(status, "conditions");
    }
    Value* scheduled = nullptr;
    for (Value& c : conditions->GetArray()) {
      if (StringAt(c, "type") == "PodScheduled") scheduled = &c;
    }
    if (scheduled == nullptr) {
      Value c(rapidjson::kObjectType);
      SetString(c, "type", "PodScheduled", a);
      SetString(c, "status", "True", a);
      SetMember(c, "lastProbeTime", Value(), a);
      SetString(c, "lastTransitionTime", Now3339(), a);
      conditions->PushBack(c, a);
    } else if (StringAt(*scheduled, "status") != "True") {
      SetString(*scheduled, "status", "True", a);
      SetString(*scheduled, "lastTransitionTime", Now3339(), a);
      EraseMember(*scheduled, "reason");
      EraseMember(*scheduled, "message");
    }
    CommitLocked(Resource::kPods, key, "MODIFIED", pod, "v1", &old_json);
    return StatusReply(201, "", "", nullptr);
  }

  Reply GetLocked(Resource r, absl::string_view ns, absl::string_view name) const {
    const std::string* cur = Current(r, KeyFor(Info(r), ns, name));
    if (cur == nullptr) return NotFound(Info(r), name);
    return ObjectReply(200, *cur);
  }

  // The object as of resourceVersion `at`, or nullptr.
  static const std::string* AsOf(const std::vector<Revision>& revs, int64_t at) {
    for (auto it = revs.rbegin(); it != revs.rend(); ++it) {
      if (it->rv <= at) return it->deleted ? nullptr : &it->json;
    }
    return nullptr;
  }

  Reply ListLocked(const Route& route, const httplib::Request& req) const {
    const ResourceInfo& info = Info(route.resource);
    Selector sel;
    absl::StatusOr<std::vector<Requirement>> labels =
        ParseLabelSelector(req.get_param_value("labelSelector"));
    if (!labels.ok()) return BadRequest(labels.status().message());
    absl::StatusOr<std::vector<Requirement>> fields =
        ParseFieldSelector(route.resource, req.get_param_value("fieldSelector"));
    if (!fields.ok()) return BadRequest(fields.status().message());
    sel.labels = *std::move(labels);
    sel.fields = *std::move(fields);

    std::string rv_param = req.get_param_value("resourceVersion");
    std::string cont = req.get_param_value("continue");
    int64_t limit = 0;
    if (req.has_param("limit") && !absl::SimpleAtoi(req.get_param_value("limit"), &limit)) {
      return BadRequest("limit: invalid value");
    }
    std::string prefix = route.ns.empty() ? "" : route.ns + "/";
    std::string start;  // relative to prefix; first key to return is >= prefix+start
    int64_t at = rv_;
    if (!cont.empty()) {
      if (!rv_param.empty() && rv_param != "0") {
        return BadRequest("specifying resource version is not allowed when using continue");
      }
      std::string decoded;
      rapidjson::Document token;
      if (absl::WebSafeBase64Unescape(cont, &decoded)) token.Parse(decoded.c_str(), decoded.size());
      const Value* tok_rv =
          decoded.empty() || token.HasParseError() ? nullptr : common::FindMember(token, "rv");
      if (tok_rv == nullptr || !tok_rv->IsInt64() || StringAt(token, "v") != "meta.k8s.io/v1") {
        return BadRequest("continue key is not valid: continue key is not valid");
      }
      const Value* sv = common::FindMember(token, "start");
      if (sv != nullptr && sv->IsString()) start.assign(sv->GetString(), sv->GetStringLength());
      int64_t token_rv = tok_rv->GetInt64();
      if (token_rv != -1 && token_rv < compacted_) {
        return StatusReply(
            410, "Expired",
            "The provided continue parameter is too old to display a consistent list result. You "
            "can start a new list without the continue parameter, or use the continue token in "
            "this response to retrieve the remainder of the results. Continuing with the "
            "provided token results in an inconsistent list - objects that were created, "
            "modified, or deleted between the time the first chunk was returned and now may "
            "show up in the list.",
            nullptr, ContinueToken(-1, start));
      }
      if (token_rv != -1) at = token_rv;
    } else if (rv_param == "0") {
      limit = 0;  // served from the watch cache, which ignores limit
    } else if (!rv_param.empty()) {
      int64_t wanted;
      if (!absl::SimpleAtoi(rv_param, &wanted)) {
        return BadRequest(absl::StrCat("invalid resource version: ", rv_param));
      }
      if (wanted > rv_) {
        Details d;
        d.cause_reason = "ResourceVersionTooLarge";
        d.cause_message = "Too large resource version";
        d.retry_after = 1;
        Reply r = StatusReply(
            504, "Timeout",
            absl::StrCat("Timeout: Too large resource version: ", wanted, ", current: ", rv_), &d);
        return r;
      }
    }

    const Store& s = stores_[static_cast<int>(route.resource)];
    std::vector<const std::string*> items;
    std::string last_key;
    int64_t remaining = 0;
    bool more = false;
    for (auto it = s.objects.lower_bound(prefix + start); it != s.objects.end(); ++it) {
      if (!absl::StartsWith(it->first, prefix)) break;
      const std::string* obj = AsOf(it->second, at);
      if (obj == nullptr || !MatchesJson(sel, *obj)) continue;
      if (limit > 0 && static_cast<int64_t>(items.size()) >= limit) {
        more = true;
        ++remaining;
        continue;
      }
      items.push_back(obj);
      last_key = it->first;
    }
    std::string meta = absl::StrCat(R"({"resourceVersion":")", at, "\"");
    if (more) {
      absl::StrAppend(&meta, R"(,"continue":)",
                      JsonString(ContinueToken(
                          at, absl::StrCat(last_key.substr(prefix.size()), std::string(1, '\0')))));
      // The count is only known without selectors (etcd counts keys, not matches).
      if (sel.empty()) absl::StrAppend(&meta, R"(,"remainingItemCount":)", remaining);
    }
    meta += "}";
    std::string body = absl::StrCat(R"({"kind":")", info.list_kind, R"(","apiVersion":")",
                                    route.api_version, R"(","metadata":)", meta, R"(,"items":[)");
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) body += ",";
      body += StripTypeMeta(*items[i]);
    }
    body += "]}";
    return ObjectReply(200, std::move(body));
  }

  // ---- watches

  static std::string EventLine(absl::string_view type, absl::string_view object_json) {
    return absl::StrCat(R"({"type":")", type, R"(","object":)", object_json, "}\n");
  }

  std::string BookmarkLine(Resource r) const {
    std::string object = Info(r).bookmark;
    size_t at = object.find("%RV%");
    object.replace(at, 4, absl::StrCat(rv_));
    return EventLine("BOOKMARK", object);
  }

  // Appends the events after w.cursor that this watch sees, as kube-apiserver's cacheWatcher
  // converts them under a selector (ADDED when an object starts matching, DELETED with the old
  // content when it stops).
  void CollectLocked(Watch& w, std::vector<std::string>* out) const {
    const std::vector<WatchEvent>& events = stores_[static_cast<int>(w.resource)].events;
    auto it = std::upper_bound(events.begin(), events.end(), w.cursor,
                               [](int64_t rv, const WatchEvent& e) { return rv < e.rv; });
    for (; it != events.end(); ++it) {
      w.cursor = it->rv;
      if (!w.ns.empty() && it->ns != w.ns) continue;
      if (w.selector.empty()) {
        out->push_back(EventLine(it->type, it->json));
        continue;
      }
      bool now = MatchesJson(w.selector, it->json);
      if (it->type == "ADDED") {
        if (now) out->push_back(EventLine("ADDED", it->json));
      } else if (it->type == "DELETED") {
        if (now) out->push_back(EventLine("DELETED", it->json));
      } else {
        bool before = MatchesJson(w.selector, it->prev_json);
        if (now && before) {
          out->push_back(EventLine("MODIFIED", it->json));
        } else if (now) {
          out->push_back(EventLine("ADDED", it->json));
        } else if (before) {
          rapidjson::Document old;
          old.Parse(it->prev_json.c_str(), it->prev_json.size());
          SetString(EnsureObject(old, "metadata", old.GetAllocator()), "resourceVersion",
                    absl::StrCat(it->rv), old.GetAllocator());
          out->push_back(EventLine("DELETED", ToJson(old)));
        }
      }
    }
  }

  // Sets up a watch stream; returns a Reply instead when the request is refused up front.
  bool StartWatch(const Route& route, const httplib::Request& req, httplib::Response& res,
                  Reply* refused) {
    auto w = std::make_shared<Watch>();
    w->resource = route.resource;
    w->ns = route.ns;
    absl::StatusOr<std::vector<Requirement>> labels =
        ParseLabelSelector(req.get_param_value("labelSelector"));
    if (!labels.ok()) {
      *refused = BadRequest(labels.status().message());
      return false;
    }
    absl::StatusOr<std::vector<Requirement>> fields =
        ParseFieldSelector(route.resource, req.get_param_value("fieldSelector"));
    if (!fields.ok()) {
      *refused = BadRequest(fields.status().message());
      return false;
    }
    w->selector.labels = *std::move(labels);
    w->selector.fields = *std::move(fields);
    w->bookmarks = ParseBool(req.get_param_value("allowWatchBookmarks"));
    int64_t timeout_seconds = 0;
    if (req.has_param("timeoutSeconds") &&
        !absl::SimpleAtoi(req.get_param_value("timeoutSeconds"), &timeout_seconds)) {
      *refused = BadRequest("timeoutSeconds: invalid value");
      return false;
    }
    Clock::time_point now = Clock::now();
    w->deadline =
        now +
        (timeout_seconds > 0
             ? std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(timeout_seconds))
             : std::chrono::duration_cast<Clock::duration>(options_.default_watch_timeout));
    w->last_bookmark = now;
    int port;
    {
      std::lock_guard<std::mutex> lock(mu_);
      port = port_;
    }
    w->fd = FindConnectionFd(port, req.remote_port);
    std::string rv_param = req.get_param_value("resourceVersion");
    {
      std::lock_guard<std::mutex> lock(mu_);
      w->drop_generation = drop_generation_;
      int64_t from = 0;
      if (!rv_param.empty() && rv_param != "0") {
        if (!absl::SimpleAtoi(rv_param, &from)) {
          *refused = BadRequest(absl::StrCat("invalid resource version: ", rv_param));
          return false;
        }
        if (from < compacted_) {
          Reply expired = StatusReply(
              410, "Expired",
              absl::StrCat("too old resource version: ", from, " (", compacted_, ")"), nullptr);
          w->lines.push_back(EventLine("ERROR", expired.body));
          w->close_after_lines = true;
        }
        w->cursor = from;
      } else {
        // "" and "0": the current state as synthetic ADDED events, then changes after it.
        const Store& s = stores_[static_cast<int>(route.resource)];
        std::string prefix = route.ns.empty() ? "" : route.ns + "/";
        for (auto it = s.objects.lower_bound(prefix); it != s.objects.end(); ++it) {
          if (!absl::StartsWith(it->first, prefix)) break;
          if (it->second.empty() || it->second.back().deleted) continue;
          if (!MatchesJson(w->selector, it->second.back().json)) continue;
          w->lines.push_back(EventLine("ADDED", it->second.back().json));
        }
        w->cursor = rv_;
      }
      ++open_watches_;
      cv_.notify_all();
    }
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [this, w](size_t, httplib::DataSink& sink) { return WatchStep(*w, sink); },
        [this](bool) {
          std::lock_guard<std::mutex> lock(mu_);
          --open_watches_;
          cv_.notify_all();
        });
    return true;
  }

  // One turn of a watch stream: waits for something to send, sends it (one chunk per event,
  // as kube-apiserver flushes), and says whether the stream goes on.
  bool WatchStep(Watch& w, httplib::DataSink& sink) {
    std::vector<std::string> lines;
    bool finish = false;
    bool abort = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (true) {
        if (stopping_) {
          abort = true;
          break;
        }
        if (w.drop_generation != drop_generation_) {
          (drop_graceful_ ? finish : abort) = true;
          break;
        }
        if (PeerClosed(w.fd)) {
          abort = true;
          break;
        }
        if (!w.lines.empty()) {
          lines.assign(w.lines.begin(), w.lines.end());
          w.lines.clear();
          finish = w.close_after_lines;
          if (!finish) CollectLocked(w, &lines);
          break;
        }
        CollectLocked(w, &lines);
        if (!lines.empty()) break;
        Clock::time_point now = Clock::now();
        if (now >= w.deadline) {
          finish = true;
          break;
        }
        if (w.bookmarks && now - w.last_bookmark >= bookmark_interval_) {
          // Every event up to rv_ for this watch was collected above, so rv_ is safe to resume
          // from.
          lines.push_back(BookmarkLine(w.resource));
          w.cursor = std::max(w.cursor, rv_);
          w.last_bookmark = now;
          break;
        }
        cv_.wait_for(lock, std::chrono::milliseconds(50));
      }
    }
    for (const std::string& line : lines) {
      if (!sink.write(line.data(), line.size())) return false;
    }
    if (abort) return false;
    if (finish) sink.done();
    return true;
  }

  // ---- requests

  uint64_t Log(RequestRecord rec) {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t id = ++next_request_id_;
    requests_.emplace_back(id, std::move(rec));
    return id;
  }

  void SetStatus(uint64_t id, int status) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
      if (it->first == id) {
        it->second.status = status;
        return;
      }
    }
  }

 public:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    // kube-apiserver compresses only bodies over 128 KiB and never a watch; cpp-httplib would
    // gzip whatever an Accept-Encoding allows, buffering watch events.
    const_cast<httplib::Request&>(req).headers.erase("Accept-Encoding");
    res.set_header("Audit-Id", NewUid());
    res.set_header("Cache-Control", "no-cache, private");

    RequestRecord rec;
    rec.method = req.method;
    rec.target = req.target;
    rec.path = req.path;
    std::string authorization = req.get_header_value("Authorization");
    if (absl::StartsWithIgnoreCase(authorization, "Bearer ")) {
      rec.token = std::string(absl::StripAsciiWhitespace(authorization.substr(7)));
    }
    rec.client_cn = PeerCommonName(req);
    bool authenticated;
    {
      std::lock_guard<std::mutex> lock(mu_);
      authenticated = tokens_.empty() || (options_.require_client_cert && !rec.client_cn.empty()) ||
                      (!rec.token.empty() &&
                       std::find(tokens_.begin(), tokens_.end(), rec.token) != tokens_.end());
    }
    uint64_t id = Log(rec);
    Reply reply;
    if (!authenticated) {
      reply = StatusReply(401, "Unauthorized", "Unauthorized", nullptr);
    } else if (!Injected(req, &reply) && Serve(req, res, &reply)) {
      SetStatus(id, 200);
      return;  // a watch stream
    }
    res.status = reply.code;
    for (const auto& [k, v] : reply.headers) res.set_header(k.c_str(), v);
    res.set_content(reply.body, "application/json");
    SetStatus(id, reply.code);
  }

 private:
  bool Injected(const httplib::Request& req, Reply* reply) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = failures_.begin(); it != failures_.end(); ++it) {
      if ((!it->method.empty() && it->method != req.method) ||
          !absl::StartsWith(req.path, it->prefix)) {
        continue;
      }
      int code = it->status;
      if (--it->times <= 0) failures_.erase(it);
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
      *reply = StatusReply(code, r == kReasons.end() ? "" : r->second.first,
                           r == kReasons.end() ? "injected failure" : r->second.second,
                           d.retry_after >= 0 ? &d : nullptr);
      if (code == 429 || code == 503) reply->headers.emplace_back("Retry-After", "1");
      return true;
    }
    return false;
  }

  // Routes one authenticated request. Returns true when the response is a watch stream.
  bool Serve(const httplib::Request& req, httplib::Response& res, Reply* reply) {
    Route route;
    if (!ParseRoute(req.path, &route)) {
      *reply = UnknownPath();
      return false;
    }
    const ResourceInfo& info = Info(route.resource);
    const std::string& m = req.method;
    bool collection = route.name.empty();
    if (!route.sub.empty() && route.sub != "status" &&
        !(route.sub == "binding" && route.resource == Resource::kPods)) {
      *reply = UnknownPath();
      return false;
    }
    if ((m == "GET" || m == "HEAD") && collection) {
      if (ParseBool(req.get_param_value("watch"))) return StartWatch(route, req, res, reply);
      std::lock_guard<std::mutex> lock(mu_);
      *reply = ListLocked(route, req);
      return false;
    }
    if (m == "POST" && route.sub == "binding") {
      std::chrono::milliseconds latency;
      {
        std::unique_lock<std::mutex> lock(mu_);
        latency = latency_;
        max_bindings_in_flight_ = std::max(max_bindings_in_flight_, ++bindings_in_flight_);
        // Waits without holding the lock across the client's call; Stop() cuts it short.
        cv_.wait_for(lock, latency, [this] { return stopping_; });
        *reply = BindLocked(route.ns, route.name, req.body);
        --bindings_in_flight_;
      }
      return false;
    }
    std::string content_type = req.get_header_value("Content-Type");
    content_type = std::string(absl::StripAsciiWhitespace(
        absl::string_view(content_type).substr(0, content_type.find(';'))));
    std::lock_guard<std::mutex> lock(mu_);
    if (m == "GET" || m == "HEAD") {
      *reply = GetLocked(route.resource, route.ns, route.name);
    } else if (m == "POST" && collection && route.sub.empty()) {
      if (info.namespaced && route.ns.empty()) {
        *reply = MethodNotAllowed();
        return false;
      }
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(req.body);
      if (!doc.ok()) {
        *reply = BadRequest(doc.status().message());
        return false;
      }
      *reply = CreateLocked(route.resource, *doc, route.ns, BodyApiVersion(route, *doc), true);
    } else if (m == "PUT" && !collection) {
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(req.body);
      if (!doc.ok()) {
        *reply = BadRequest(doc.status().message());
        return false;
      }
      *reply = UpdateLocked(route.resource, *doc, route.ns, route.name, BodyApiVersion(route, *doc),
                            true);
    } else if (m == "PATCH" && !collection) {
      *reply = PatchLocked(route.resource, route.ns, route.name, content_type, req.body,
                           route.api_version);
    } else if (m == "DELETE" && !collection && route.sub.empty()) {
      *reply = DeleteLocked(route.resource, route.ns, route.name, true);
    } else {
      *reply = MethodNotAllowed();
    }
    return false;
  }

  static std::string BodyApiVersion(const Route& route, const Value& doc) {
    std::string sent = StringAt(doc, "apiVersion");
    return sent.empty() ? route.api_version : sent;
  }

  std::unique_ptr<TempDir> temp_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int listen_fd_ = -1;
  bool stopping_ = false;
  std::array<Store, kResourceCount> stores_;
  int64_t compacted_ = 0;
  uint64_t drop_generation_ = 0;
  bool drop_graceful_ = false;
  uint64_t next_request_id_ = 0;
  std::vector<Failure> failures_;
};

// -----------------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<FakeApiServer>> FakeApiServer::Start(Options options) {
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the test
  auto impl = std::make_unique<Impl>(std::move(options));
  absl::Status s = impl->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<FakeApiServer>(new FakeApiServer(std::move(impl)));
}

FakeApiServer::FakeApiServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeApiServer::~FakeApiServer() { impl_->Stop(); }

int FakeApiServer::port() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->port_;
}
std::string FakeApiServer::host() const { return "127.0.0.1"; }
std::string FakeApiServer::url() const { return absl::StrCat("https://127.0.0.1:", port()); }
const std::string& FakeApiServer::cert_dir() const { return impl_->cert_dir_; }
std::string FakeApiServer::ca_file() const { return impl_->cert_dir_ + "/ca.crt"; }
std::string FakeApiServer::client_cert_file() const { return impl_->cert_dir_ + "/client.crt"; }
std::string FakeApiServer::client_key_file() const { return impl_->cert_dir_ + "/client.key"; }

absl::Status FakeApiServer::Load(absl::string_view json) { return impl_->Load(json); }

absl::Status FakeApiServer::LoadTestData(absl::string_view relative_path) {
  std::string path = absl::StrCat(GT_TESTDATA_DIR, "/", relative_path);
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return impl_->Load(text.str());
}

absl::Status FakeApiServer::Add(Resource r, absl::string_view json) { return impl_->Add(r, json); }
absl::Status FakeApiServer::Upsert(Resource r, absl::string_view json) {
  return impl_->Upsert(r, json);
}
absl::Status FakeApiServer::Delete(Resource r, absl::string_view ns, absl::string_view name) {
  return impl_->Delete(r, ns, name);
}
absl::Status FakeApiServer::MergePatch(Resource r, absl::string_view ns, absl::string_view name,
                                       absl::string_view patch) {
  return impl_->MergePatch(r, ns, name, patch);
}
absl::Status FakeApiServer::AddNode(absl::string_view json) { return Add(Resource::kNodes, json); }
absl::Status FakeApiServer::UpsertNode(absl::string_view json) {
  return Upsert(Resource::kNodes, json);
}
absl::Status FakeApiServer::DeleteNode(absl::string_view name) {
  return Delete(Resource::kNodes, "", name);
}
absl::Status FakeApiServer::AddPod(absl::string_view json) { return Add(Resource::kPods, json); }
absl::Status FakeApiServer::UpsertPod(absl::string_view json) {
  return Upsert(Resource::kPods, json);
}
absl::Status FakeApiServer::DeletePod(absl::string_view ns, absl::string_view name) {
  return Delete(Resource::kPods, ns, name);
}
absl::Status FakeApiServer::AddNamespace(absl::string_view name) {
  return Add(
      Resource::kNamespaces,
      absl::StrCat(R"({"metadata":{"name":)", JsonString(name),
                   R"(,"labels":{"kubernetes.io/metadata.name":)", JsonString(name),
                   R"(}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})"));
}

bool FakeApiServer::DeleteSilently(Resource r, absl::string_view ns, absl::string_view name) {
  return impl_->DeleteSilently(r, ns, name);
}
std::string FakeApiServer::GetObject(Resource r, absl::string_view ns,
                                     absl::string_view name) const {
  return impl_->GetObject(r, ns, name);
}
std::vector<std::string> FakeApiServer::ListObjects(Resource r, absl::string_view ns) const {
  return impl_->ListObjects(r, ns);
}
std::vector<std::string> FakeApiServer::Events() const { return impl_->Events(); }
int64_t FakeApiServer::resource_version() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->rv_;
}

void FakeApiServer::DropWatches(bool graceful) { impl_->DropWatches(graceful); }
void FakeApiServer::Compact() { impl_->Compact(); }
void FakeApiServer::SetBookmarkInterval(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->bookmark_interval_ = interval;
  impl_->cv_.notify_all();
}
int FakeApiServer::OpenWatches() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->open_watches_;
}
bool FakeApiServer::WaitForWatches(int count, std::chrono::milliseconds timeout) const {
  return impl_->WaitForWatches(count, timeout);
}

void FakeApiServer::Stop() { impl_->Stop(); }
absl::Status FakeApiServer::Restart(bool keep_state) { return impl_->Restart(keep_state); }
bool FakeApiServer::running() const { return impl_->running(); }

void FakeApiServer::AcceptTokens(std::vector<std::string> tokens) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->tokens_ = std::move(tokens);
}

void FakeApiServer::SetLatency(std::chrono::milliseconds latency) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->latency_ = latency;
}
void FakeApiServer::InjectFailure(absl::string_view method, absl::string_view path_prefix,
                                  int http_status, int times) {
  impl_->InjectFailure(method, path_prefix, http_status, times);
}

std::vector<RequestRecord> FakeApiServer::Requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  std::vector<RequestRecord> out;
  for (const auto& [id, rec] : impl_->requests_) out.push_back(rec);
  return out;
}
int64_t FakeApiServer::CountRequests(absl::string_view method, absl::string_view path_prefix,
                                     absl::string_view query_substring) const {
  return impl_->CountRequests(method, path_prefix, query_substring);
}
void FakeApiServer::ClearRequests() {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->requests_.clear();
  impl_->max_bindings_in_flight_ = impl_->bindings_in_flight_;
}
int FakeApiServer::MaxConcurrentBindings() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->max_bindings_in_flight_;
}

}  // namespace testing_support
