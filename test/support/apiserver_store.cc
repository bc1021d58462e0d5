// Test support, part of the kube-apiserver emulation: the object store, with its revisions,
// watch events and API verbs (see apiserver_store.h).
#include "test/support/apiserver_store.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/json.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "test/support/apiserver_patch.h"
#include "test/support/apiserver_selectors.h"

namespace testing_support::apiserver {
namespace {

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

ObjectStore::ObjectStore(std::function<void(Resource)> changed) : changed_(std::move(changed)) {}

void ObjectStore::Clear() {
  for (Store& s : stores_) s = Store();
  compacted_ = rv_;
}

absl::Status ObjectStore::Load(absl::string_view text) {
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

absl::Status ObjectStore::Add(Resource r, absl::string_view json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  if (!doc.ok()) return doc.status();
  return ToStatus(Create(r, *doc, "", Info(r).api_version, /*from_api=*/false));
}

absl::Status ObjectStore::Upsert(Resource r, absl::string_view json) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(json);
  if (!doc.ok()) return doc.status();
  const ResourceInfo& info = Info(r);
  // Kept as sent when the object names another version of its group (or events.k8s.io/v1 for
  // an Event), so tests can store the objects an older server would serve.
  std::string sent = StringAt(*doc, "apiVersion");
  std::string api_version = info.api_version;
  if ((r == Resource::kEvents && sent == "events.k8s.io/v1") ||
      (info.group[0] != '\0' && absl::StartsWith(sent, absl::StrCat(info.group, "/")))) {
    api_version = sent;
  }
  std::string ns = info.namespaced ? MetaString(*doc, "namespace") : "";
  if (info.namespaced && ns.empty()) ns = "default";
  std::string name = MetaString(*doc, "name");
  if (Current(r, KeyFor(info, ns, name)) == nullptr) {
    return ToStatus(Create(r, *doc, "", api_version, false));
  }
  return ToStatus(Update(r, *doc, ns, name, api_version, false));
}

bool ObjectStore::DeleteSilently(Resource r, absl::string_view ns, absl::string_view name) {
  const ResourceInfo& info = Info(r);
  std::string key = KeyFor(info, ns, name);
  const std::string* cur = Current(r, key);
  if (cur == nullptr) return false;
  std::string json = *cur;
  ++rv_;
  stores_[static_cast<size_t>(r)].objects[key].push_back({rv_, true, json});
  changed_(r);
  return true;
}

std::string ObjectStore::GetObject(Resource r, absl::string_view ns, absl::string_view name) const {
  const std::string* cur = Current(r, KeyFor(Info(r), ns, name));
  return cur == nullptr ? "" : *cur;
}

std::vector<std::string> ObjectStore::ListObjects(Resource r, absl::string_view ns) const {
  std::vector<std::string> out;
  for (const auto& [key, revs] : stores_[static_cast<size_t>(r)].objects) {
    if (revs.empty() || revs.back().deleted) continue;
    if (!ns.empty() && !absl::StartsWith(key, absl::StrCat(ns, "/"))) continue;
    out.push_back(revs.back().json);
  }
  return out;
}

std::vector<std::string> ObjectStore::Events() const {
  std::vector<std::pair<int64_t, std::string>> found;
  for (const auto& [key, revs] : stores_[static_cast<size_t>(Resource::kEvents)].objects) {
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

const std::string* ObjectStore::Current(Resource r, const std::string& key) const {
  const Store& s = stores_[static_cast<size_t>(r)];
  auto it = s.objects.find(key);
  if (it == s.objects.end() || it->second.empty() || it->second.back().deleted) return nullptr;
  return &it->second.back().json;
}

std::string ObjectStore::Commit(Resource r, const std::string& key, absl::string_view type,
                                rapidjson::Document& doc, absl::string_view api_version,
                                const std::string* prev) {
  const ResourceInfo& info = Info(r);
  int64_t rv = ++rv_;
  Value& meta = EnsureObject(doc, "metadata", doc.GetAllocator());
  SetString(meta, "resourceVersion", absl::StrCat(rv), doc.GetAllocator());
  Normalize(info, doc, api_version);
  std::string json = ToJson(doc);
  Store& s = stores_[static_cast<size_t>(r)];
  s.objects[key].push_back({rv, type == "DELETED", json});
  s.events.push_back({rv, std::string(type), info.namespaced ? MetaString(doc, "namespace") : "",
                      json, prev == nullptr ? "" : *prev});
  changed_(r);
  return json;
}

Reply ObjectStore::Create(Resource r, rapidjson::Document& doc, absl::string_view url_ns,
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
  return ObjectReply(201, Commit(r, key, "ADDED", doc, api_version, nullptr));
}

void ObjectStore::Default(Resource r, rapidjson::Document& doc) {
  Alloc& a = doc.GetAllocator();
  if (r == Resource::kPods) {
    Value& status = EnsureObject(doc, "status", a);
    if (StringAt(status, "phase").empty()) SetString(status, "phase", "Pending", a);
  } else if (r == Resource::kNamespaces) {
    Value& status = EnsureObject(doc, "status", a);
    if (StringAt(status, "phase").empty()) SetString(status, "phase", "Active", a);
  }
}

Reply ObjectStore::WriteUpdate(Resource r, const std::string& key, rapidjson::Document& doc,
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
  return ObjectReply(200, Commit(r, key, "MODIFIED", doc, api_version, &old_json));
}

Reply ObjectStore::Update(Resource r, rapidjson::Document& doc, absl::string_view ns,
                          absl::string_view url_name, absl::string_view api_version,
                          bool from_api) {
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
      return Create(r, doc, ns, api_version, true);
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
  return WriteUpdate(r, key, doc, api_version, old_json);
}

Reply ObjectStore::Patch(Resource r, absl::string_view ns, absl::string_view name,
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
  if (std::optional<Reply> refused = ApplyPatchBody(content_type, body, doc)) return *refused;
  // A resourceVersion in the patch is a precondition.
  std::string patched_rv = MetaString(doc, "resourceVersion");
  if (!patched_rv.empty() && patched_rv != stored_rv) return ModifiedConflict(info, name);
  return WriteUpdate(r, key, doc, api_version, old_json);
}

Reply ObjectStore::Delete(Resource r, absl::string_view ns, absl::string_view name, bool from_api) {
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
    old_json = Commit(r, key, "MODIFIED", doc, api_version, &old_json);
  }
  std::string json = Commit(r, key, "DELETED", doc, api_version, nullptr);
  if (r == Resource::kLeases || r == Resource::kEvents) {
    Details d = ResourceDetails(info, name);
    d.uid = uid;
    return StatusReply(200, "", "", &d);
  }
  return ObjectReply(200, json);
}

Reply ObjectStore::Get(Resource r, absl::string_view ns, absl::string_view name) const {
  const std::string* cur = Current(r, KeyFor(Info(r), ns, name));
  if (cur == nullptr) return NotFound(Info(r), name);
  return ObjectReply(200, *cur);
}

const std::string* ObjectStore::AsOf(const std::vector<Revision>& revs, int64_t at) {
  for (auto it = revs.rbegin(); it != revs.rend(); ++it) {
    if (it->rv <= at) return it->deleted ? nullptr : &it->json;
  }
  return nullptr;
}

Reply ObjectStore::List(const CollectionQuery& query) const {
  const ResourceInfo& info = Info(query.resource);
  absl::StatusOr<Selector> selector =
      ParseSelector(query.resource, query.label_selector, query.field_selector);
  if (!selector.ok()) return BadRequest(selector.status().message());
  const Selector& sel = *selector;

  const std::string& rv_param = query.resource_version;
  const std::string& cont = query.continue_token;
  int64_t limit = 0;
  if (query.limit.has_value() && !absl::SimpleAtoi(*query.limit, &limit)) {
    return BadRequest("limit: invalid value");
  }
  std::string prefix = query.ns.empty() ? "" : query.ns + "/";
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

  const Store& s = stores_[static_cast<size_t>(query.resource)];
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
                                  query.api_version, R"(","metadata":)", meta, R"(,"items":[)");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) body += ",";
    body += StripTypeMeta(*items[i]);
  }
  body += "]}";
  return ObjectReply(200, std::move(body));
}

const std::vector<WatchEvent>& ObjectStore::events(Resource r) const {
  return stores_[static_cast<size_t>(r)].events;
}

void ObjectStore::ForEachCurrent(Resource r, absl::string_view prefix,
                                 const std::function<void(const std::string&)>& fn) const {
  const Store& s = stores_[static_cast<size_t>(r)];
  for (auto it = s.objects.lower_bound(std::string(prefix)); it != s.objects.end(); ++it) {
    if (!absl::StartsWith(it->first, prefix)) break;
    if (it->second.empty() || it->second.back().deleted) continue;
    fn(it->second.back().json);
  }
}

}  // namespace testing_support::apiserver
