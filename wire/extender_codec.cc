#include "wire/extender_codec.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace wire {

using common::AsStringView;
using common::FindMember;
using common::FindMemberIgnoreCase;
using common::JsonValue;
using common::JsonWriter;
using common::ParseJson;
using common::ParseJsonInPlace;
using common::WriteKey;
using common::WriteString;
namespace {

// True when rapidjson::Writer would escape a byte of `s`: a control character, '"' or '\\'.
// Eight bytes at a time (node names and our reasons almost never need it).
bool NeedsEscape(absl::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHighs; };
  // Bytes below 0x20 (bytes of 0x80 and up are excluded by ~v), equal to '"', equal to '\\'.
  // A borrow may flag a byte above a true hit; only whether there is any hit matters.
  auto hit = [&](const char* at) {
    uint64_t v;
    std::memcpy(&v, at, 8);
    return ((v - kOnes * 0x20) & ~v & kHighs) | has_zero(v ^ (kOnes * '"')) |
           has_zero(v ^ (kOnes * '\\'));
  };
  if (s.size() < 8) {
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == '"' || c == '\\') return true;
    }
    return false;
  }
  for (size_t i = 0; i + 8 <= s.size(); i += 8) {
    if (hit(s.data() + i)) return true;
  }
  return hit(s.data() + s.size() - 8) != 0;  // the tail, overlapping the last full word
}

// A reply written as text into one buffer sized up front: literal pieces are copied with
// fixed-size memcpy (no call per piece), and the buffer grows only if the estimate was short.
class TextOut {
 public:
  explicit TextOut(size_t estimate) : text_(estimate, '\0'), at_(0) {}

  void Put(char c) {
    Reserve(1);
    text_[at_++] = c;
  }
  template <size_t N>
  void Put(const char (&literal)[N]) {  // N counts the terminating NUL
    Reserve(N - 1);
    std::memcpy(&text_[at_], literal, N - 1);
    at_ += N - 1;
  }
  void Put(absl::string_view s) {
    Reserve(s.size());
    std::memcpy(&text_[at_], s.data(), s.size());
    at_ += s.size();
  }
  // `s` as a JSON string, byte for byte what rapidjson::Writer writes for it. `clean` says the
  // caller knows it needs no escaping.
  void String(absl::string_view s, bool clean = false) {
    if (!clean && NeedsEscape(s)) {
      rapidjson::StringBuffer buffer;
      JsonWriter w(buffer);
      WriteString(w, s);
      Put(absl::string_view(buffer.GetString(), buffer.GetSize()));
      return;
    }
    Reserve(s.size() + 2);
    text_[at_] = '"';
    std::memcpy(&text_[at_ + 1], s.data(), s.size());
    text_[at_ + 1 + s.size()] = '"';
    at_ += s.size() + 2;
  }
  void Int(int64_t v) {
    Reserve(24);
    at_ = static_cast<size_t>(std::to_chars(&text_[at_], &text_[at_] + 24, v).ptr - text_.data());
  }
  std::string Take() && {
    text_.resize(at_);
    return std::move(text_);
  }

 private:
  void Reserve(size_t n) {
    if (text_.size() - at_ < n) text_.resize(std::max(text_.size() * 2, at_ + n));
  }
  std::string text_;
  size_t at_;
};

void StringMap(JsonWriter& w, absl::string_view key, const std::map<std::string, std::string>& m) {
  WriteKey(w, key);
  w.StartObject();
  for (const auto& [k, v] : m) {
    WriteKey(w, k);
    WriteString(w, v);
  }
  w.EndObject();
}

std::string Take(rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

absl::StatusOr<ExtenderArgs> ParseExtenderArgs(absl::string_view body) {
  ExtenderArgs args;
  args.doc = std::make_unique<rapidjson::Document>();
  {
    // Read only, never copied from: parsed in place (see ParseJsonInPlace).
    ASSIGN_OR_RETURN(rapidjson::Document parsed, ParseJsonInPlace(body));
    args.doc->Swap(parsed);
  }
  const rapidjson::Document& doc = *args.doc;
  if (!doc.IsObject()) return absl::InvalidArgumentError("ExtenderArgs: expected a JSON object");
  const JsonValue* pod = FindMemberIgnoreCase(doc, "Pod");
  if (!pod || pod->IsNull()) return absl::InvalidArgumentError("ExtenderArgs.Pod: missing");
  if (!pod->IsObject()) return absl::InvalidArgumentError("ExtenderArgs.Pod: expected an object");
  args.pod = pod;

  const JsonValue* names = FindMemberIgnoreCase(doc, "NodeNames");
  const JsonValue* nodes = FindMemberIgnoreCase(doc, "Nodes");
  if (names && !names->IsNull()) {
    if (!names->IsArray())
      return absl::InvalidArgumentError("ExtenderArgs.NodeNames: expected an array");
    args.names_only = true;
    args.node_names.reserve(names->Size());
    for (rapidjson::SizeType i = 0; i < names->Size(); ++i) {
      if (!(*names)[i].IsString()) {
        return absl::InvalidArgumentError(
            absl::StrCat("ExtenderArgs.NodeNames[", i, "]: expected a string"));
      }
      args.node_names.push_back(AsStringView((*names)[i]));
    }
    return args;
  }
  if (nodes && !nodes->IsNull()) {
    if (!nodes->IsObject())
      return absl::InvalidArgumentError("ExtenderArgs.Nodes: expected a NodeList object");
    args.names_only = false;
    const JsonValue* items = FindMember(*nodes, "items");
    if (items && !items->IsNull()) {
      if (!items->IsArray())
        return absl::InvalidArgumentError("ExtenderArgs.Nodes.items: expected an array");
      for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        const JsonValue& item = (*items)[i];
        const JsonValue* meta = FindMember(item, "metadata");
        const JsonValue* name = meta ? FindMember(*meta, "name") : nullptr;
        if (!name || !name->IsString()) {
          return absl::InvalidArgumentError(
              absl::StrCat("ExtenderArgs.Nodes.items[", i, "].metadata.name: missing"));
        }
        args.node_names.push_back(AsStringView(*name));
        args.node_items.push_back(&item);
      }
    }
    return args;
  }
  return absl::InvalidArgumentError("ExtenderArgs: NodeNames and Nodes are both missing or null");
}

namespace {

// NodeNames (names-only) or Nodes (the kept Node objects as they arrived).
void KeptNodes(JsonWriter& w, const ExtenderArgs& args, const std::vector<size_t>& kept) {
  if (args.names_only) {
    WriteKey(w, "NodeNames");
    w.StartArray();
    for (size_t i : kept) WriteString(w, args.node_names[i]);
    w.EndArray();
  } else {
    WriteKey(w, "Nodes");
    w.StartObject();
    WriteKey(w, "metadata");
    w.StartObject();
    w.EndObject();
    WriteKey(w, "items");
    w.StartArray();
    for (size_t i : kept) args.node_items[i]->Accept(w);
    w.EndArray();
    w.EndObject();
  }
}

void FailedMap(JsonWriter& w, absl::string_view key, const ExtenderArgs& args,
               const std::vector<FailedNode>& failed) {
  WriteKey(w, key);
  w.StartObject();
  for (const FailedNode& f : failed) {
    WriteKey(w, args.node_names[f.candidate]);
    WriteString(w, f.reason);
  }
  w.EndObject();
}

void FailedMap(TextOut& out, const ExtenderArgs& args, const std::vector<FailedNode>& failed) {
  out.Put('{');
  // Many nodes share one reason (the same bytes, see Rejected in extender/verbs.cc): it is
  // checked for escapes once.
  absl::string_view clean_reason;
  for (size_t k = 0; k < failed.size(); ++k) {
    if (k) out.Put(',');
    out.String(args.node_names[failed[k].candidate]);
    out.Put(':');
    absl::string_view reason = failed[k].reason;
    const bool same = reason.data() == clean_reason.data() && reason.size() == clean_reason.size();
    if (!same && NeedsEscape(reason)) {
      out.String(reason);
      continue;
    }
    clean_reason = reason;
    out.String(reason, /*clean=*/true);
  }
  out.Put('}');
}

}  // namespace

std::string EncodeFilterResult(const ExtenderArgs& args, const FilterReply& reply) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  KeptNodes(w, args, reply.kept);
  StringMap(w, "FailedNodes", reply.failed);
  StringMap(w, "FailedAndUnresolvableNodes", reply.failed_unresolvable);
  WriteKey(w, "Error");
  WriteString(w, reply.error);
  w.EndObject();
  return Take(buffer);
}

std::string EncodeFilterResult(const ExtenderArgs& args, const std::vector<size_t>& kept,
                               const std::vector<FailedNode>& failed,
                               const std::vector<FailedNode>& failed_unresolvable) {
  if (!args.names_only) {
    rapidjson::StringBuffer buffer;
    JsonWriter w(buffer);
    w.StartObject();
    KeptNodes(w, args, kept);
    FailedMap(w, "FailedNodes", args, failed);
    FailedMap(w, "FailedAndUnresolvableNodes", args, failed_unresolvable);
    WriteKey(w, "Error");
    WriteString(w, "");
    w.EndObject();
    return Take(buffer);
  }
  // Names only: a few hundred short strings, written as text (rapidjson::Writer copies every
  // byte through its transcoder). Same bytes as the JsonWriter.
  size_t size = 128;
  for (size_t i : kept) size += args.node_names[i].size() + 3;
  for (const auto* list : {&failed, &failed_unresolvable}) {
    for (const FailedNode& f : *list)
      size += args.node_names[f.candidate].size() + f.reason.size() + 6;
  }
  TextOut out(size);
  out.Put("{\"NodeNames\":[");
  for (size_t k = 0; k < kept.size(); ++k) {
    if (k) out.Put(',');
    out.String(args.node_names[kept[k]]);
  }
  out.Put("],\"FailedNodes\":");
  FailedMap(out, args, failed);
  out.Put(",\"FailedAndUnresolvableNodes\":");
  FailedMap(out, args, failed_unresolvable);
  out.Put(",\"Error\":\"\"}");
  return std::move(out).Take();
}

std::string EncodeHostPriorityList(const std::vector<HostScore>& scores) {
  // As text, the same bytes rapidjson::Writer writes (see EncodeFilterResult).
  size_t size = 2;
  for (const HostScore& s : scores) size += s.host.size() + 40;
  TextOut out(size);
  out.Put('[');
  for (size_t k = 0; k < scores.size(); ++k) {
    if (k) out.Put(',');
    out.Put("{\"Host\":");
    out.String(scores[k].host);
    out.Put(",\"Score\":");
    out.Int(scores[k].score);
    out.Put('}');
  }
  out.Put(']');
  return std::move(out).Take();
}

std::string EncodeFilterError(absl::string_view error) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteKey(w, "NodeNames");
  w.Null();
  WriteKey(w, "Nodes");
  w.Null();
  StringMap(w, "FailedNodes", {});
  StringMap(w, "FailedAndUnresolvableNodes", {});
  WriteKey(w, "Error");
  WriteString(w, error);
  w.EndObject();
  return Take(buffer);
}

std::string EncodeHttpError(absl::string_view message) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteKey(w, "error");
  WriteString(w, message);
  w.EndObject();
  return Take(buffer);
}

absl::StatusOr<BindingArgs> ParseBindingArgs(absl::string_view body) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  if (!doc.IsObject())
    return absl::InvalidArgumentError("ExtenderBindingArgs: expected a JSON object");
  BindingArgs args;
  struct Field {
    absl::string_view key;
    std::string* out;
  };
  for (const Field& f :
       {Field{"PodName", &args.pod_name}, Field{"PodNamespace", &args.pod_namespace},
        Field{"PodUID", &args.pod_uid}, Field{"Node", &args.node}}) {
    const JsonValue* v = FindMemberIgnoreCase(doc, f.key);
    if (!v || !v->IsString() || v->GetStringLength() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("ExtenderBindingArgs.", f.key, ": missing or not a non-empty string"));
    }
    *f.out = std::string(AsStringView(*v));
  }
  return args;
}

std::string EncodeBindingResult(absl::string_view error) {
  rapidjson::StringBuffer buffer;
  JsonWriter w(buffer);
  w.StartObject();
  WriteKey(w, "Error");
  WriteString(w, error);
  w.EndObject();
  return Take(buffer);
}

}  // namespace wire
