#include "common/json.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/error/en.h"
#include "rapidjson/reader.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace common {
namespace {

absl::string_view TypeName(const JsonValue& v) {
  switch (v.GetType()) {
    case rapidjson::kNullType:
      return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      return "boolean";
    case rapidjson::kObjectType:
      return "object";
    case rapidjson::kArrayType:
      return "array";
    case rapidjson::kStringType:
      return "string";
    case rapidjson::kNumberType:
      return "number";
  }
  return "value";
}

absl::Status WrongType(absl::string_view path, absl::string_view want, const JsonValue& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected ", want, ", got ", TypeName(got)));
}

// Deepest nesting accepted. Kubernetes objects stay far below it; the limit exists because
// RapidJSON's Accept() (the encoder) and copies recurse per level, so a 100,000-deep value
// echoed back (a Node in a names-and-objects filter reply) would overflow a worker's stack.
constexpr size_t kMaxJsonDepth = 512;

// Builds the document as Document::Parse does, counting nesting on the way (RapidJSON's parsers
// have no depth limit). Past kMaxJsonDepth it stops building, and then either stops the parser
// (kStop: the recursive parser, whose stack grows per level) or lets it read on (the iterative
// one), so malformed input still reports the parser's own error first, exactly as when the
// depth was measured after parsing.
template <bool kStop>
class DepthLimitedHandler {
 public:
  using SizeType = rapidjson::SizeType;
  explicit DepthLimitedHandler(rapidjson::Document& doc) : doc_(doc) {}
  bool too_deep() const { return too_deep_; }

  bool Null() { return too_deep_ || doc_.Null(); }
  bool Bool(bool b) { return too_deep_ || doc_.Bool(b); }
  bool Int(int i) { return too_deep_ || doc_.Int(i); }
  bool Uint(unsigned i) { return too_deep_ || doc_.Uint(i); }
  bool Int64(int64_t i) { return too_deep_ || doc_.Int64(i); }
  bool Uint64(uint64_t i) { return too_deep_ || doc_.Uint64(i); }
  bool Double(double d) { return too_deep_ || doc_.Double(d); }
  bool RawNumber(const char* s, SizeType n, bool copy) {
    return too_deep_ || doc_.RawNumber(s, n, copy);
  }
  bool String(const char* s, SizeType n, bool copy) { return too_deep_ || doc_.String(s, n, copy); }
  bool Key(const char* s, SizeType n, bool copy) { return too_deep_ || doc_.Key(s, n, copy); }
  bool StartObject() { return Open() ? doc_.StartObject() : !kStop; }
  bool EndObject(SizeType members) { return too_deep_ || (--depth_, doc_.EndObject(members)); }
  bool StartArray() { return Open() ? doc_.StartArray() : !kStop; }
  bool EndArray(SizeType elements) { return too_deep_ || (--depth_, doc_.EndArray(elements)); }

 private:
  // True when the container is to be built.
  bool Open() {
    if (!too_deep_ && ++depth_ > kMaxJsonDepth) too_deep_ = true;
    return !too_deep_;
  }
  rapidjson::Document& doc_;
  size_t depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

namespace {

// Parses `in` into `doc` through the depth limit. `Stream` is a NUL-terminated string stream,
// cheaper per byte than a length-bounded one (no end check on every read) and the only kind
// RapidJSON parses in place. A NUL inside the text ends the input either way.
//
// The iterative parser keeps its state on the heap, so no input can exhaust a worker's stack.
// This one decides every error, but it is about a quarter slower than the recursive parser,
// which ParseFast runs instead on the way every well-formed request takes: its recursion ends
// at kMaxJsonDepth + 1 levels (a few hundred bytes each), and any input it does not accept is
// parsed again here, so errors are exactly the iterative parser's.
template <unsigned kFlags, typename Stream>
absl::Status ParseIterative(Stream& in, rapidjson::Document& doc) {
  rapidjson::ParseResult result;
  DepthLimitedHandler</*kStop=*/false> handler(doc);
  auto generate = [&](rapidjson::Document&) {
    rapidjson::Reader reader;
    result = reader.Parse<kFlags | rapidjson::kParseIterativeFlag>(in, handler);
    return !result.IsError() && !handler.too_deep();
  };
  doc.Populate(generate);
  if (result.IsError()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON at byte ", result.Offset(), ": ",
                                                   rapidjson::GetParseError_En(result.Code())));
  }
  if (handler.too_deep()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: nested deeper than ", kMaxJsonDepth, " levels"));
  }
  return absl::OkStatus();
}

// True when `in` parsed into `doc`; false for any input to be judged by ParseIterative.
template <unsigned kFlags, typename Stream>
bool ParseFast(Stream& in, rapidjson::Document& doc) {
  bool ok = false;
  DepthLimitedHandler</*kStop=*/true> handler(doc);
  auto generate = [&](rapidjson::Document&) {
    rapidjson::Reader reader;
    ok = !reader.Parse<kFlags>(in, handler).IsError();
    return ok;
  };
  doc.Populate(generate);
  return ok;
}

}  // namespace

// RapidJSON's SSE2 scans load aligned 16-byte blocks, so they read up to 15 bytes past the
// terminating NUL. Such a load never crosses a page, but it leaves the allocation, and
// AddressSanitizer stops the process there (found by .ci/sanitizers). This much slack after the
// NUL keeps every load inside the buffer. (RAPIDJSON_SSE2 is off for now, see
// common/CMakeLists.txt; the slack costs nothing and keeps the buffers safe if it comes back.)
constexpr size_t kSimdSlack = 16;

absl::StatusOr<rapidjson::Document> ParseJson(absl::string_view text) {
  std::string terminated;  // for the string stream (see ParseIterative)
  terminated.reserve(text.size() + kSimdSlack);
  terminated.assign(text.data(), text.size());
  {
    rapidjson::StringStream in(terminated.c_str());
    rapidjson::Document doc;
    if (ParseFast<rapidjson::kParseDefaultFlags>(in, doc)) return doc;
  }
  rapidjson::StringStream in(terminated.c_str());
  rapidjson::Document doc;
  if (absl::Status s = ParseIterative<rapidjson::kParseDefaultFlags>(in, doc); !s.ok()) return s;
  return doc;
}

namespace {

// A NUL-terminated copy of `text` in `doc`'s own allocator, so it lives exactly as long as the
// values pointing into it.
char* CopyInto(rapidjson::Document& doc, absl::string_view text) {
  char* copy = static_cast<char*>(doc.GetAllocator().Malloc(text.size() + 1 + kSimdSlack));
  std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  return copy;
}

}  // namespace

absl::StatusOr<rapidjson::Document> ParseJsonInPlace(absl::string_view text,
                                                     rapidjson::MemoryPoolAllocator<>* pool) {
  {
    rapidjson::Document doc(pool);
    rapidjson::InsituStringStream in(CopyInto(doc, text));
    if (ParseFast<rapidjson::kParseInsituFlag>(in, doc)) return doc;
  }
  // In-place parsing rewrote the first copy; the verdict comes from a fresh one.
  rapidjson::Document doc(pool);
  rapidjson::InsituStringStream in(CopyInto(doc, text));
  if (absl::Status s = ParseIterative<rapidjson::kParseInsituFlag>(in, doc); !s.ok()) return s;
  return doc;
}

const JsonValue* FindMember(const JsonValue& object, absl::string_view key) {
  if (!object.IsObject()) return nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (absl::string_view(it->name.GetString(), it->name.GetStringLength()) == key) {
      return &it->value;
    }
  }
  return nullptr;
}

const JsonValue* FindMemberIgnoreCase(const JsonValue& object, absl::string_view key) {
  if (!object.IsObject()) return nullptr;
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    if (absl::EqualsIgnoreCase(absl::string_view(it->name.GetString(), it->name.GetStringLength()),
                               key)) {
      return &it->value;
    }
  }
  return nullptr;
}

const JsonValue* FindNonNull(const JsonValue& object, absl::string_view key) {
  const JsonValue* v = FindMember(object, key);
  return v && !v->IsNull() ? v : nullptr;
}

absl::string_view AsStringView(const JsonValue& value) {
  return value.IsString() ? absl::string_view(value.GetString(), value.GetStringLength())
                          : absl::string_view();
}

absl::string_view StringOr(const JsonValue& object, absl::string_view key,
                           absl::string_view fallback) {
  const JsonValue* v = FindMember(object, key);
  return v && v->IsString() ? AsStringView(*v) : fallback;
}

absl::StatusOr<absl::string_view> RequireString(const JsonValue& object, absl::string_view key,
                                                absl::string_view path) {
  const JsonValue* v = FindMember(object, key);
  if (!v) return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, key), ": missing"));
  if (!v->IsString()) return WrongType(JoinPath(path, key), "string", *v);
  return AsStringView(*v);
}

absl::StatusOr<const JsonValue*> RequireObject(const JsonValue& object, absl::string_view key,
                                               absl::string_view path) {
  const JsonValue* v = FindMember(object, key);
  if (!v) return absl::InvalidArgumentError(absl::StrCat(JoinPath(path, key), ": missing"));
  if (!v->IsObject()) return WrongType(JoinPath(path, key), "object", *v);
  return v;
}

absl::StatusOr<const JsonValue*> OptionalObject(const JsonValue& object, absl::string_view key,
                                                absl::string_view path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return nullptr;
  if (!v->IsObject()) return WrongType(JoinPath(path, key), "object", *v);
  return v;
}

absl::StatusOr<const JsonValue*> OptionalArray(const JsonValue& object, absl::string_view key,
                                               absl::string_view path) {
  const JsonValue* v = FindNonNull(object, key);
  if (!v) return nullptr;
  if (!v->IsArray()) return WrongType(JoinPath(path, key), "array", *v);
  return v;
}

std::string ToJson(const JsonValue& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string JoinPath(absl::string_view path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string IndexPath(absl::string_view path, size_t index) {
  return absl::StrCat(path, "[", index, "]");
}

}  // namespace common
