#include "webhook/json_patch.h"

#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/json.h"

namespace webhook {
namespace {

using common::JsonString;

absl::Status OpError(size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("patch[", index, "]: ", what));
}

// A pointer's reference tokens, unescaped. "" is the whole document (no tokens).
absl::StatusOr<std::vector<std::string>> SplitPointer(absl::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("path \"", pointer, "\" must start with /"));
  }
  for (absl::string_view t : absl::StrSplit(pointer.substr(1), '/')) {
    tokens.push_back(UnescapePointerToken(t));
  }
  return tokens;
}

// An array index token: "0" or digits without a leading zero.
bool ParseIndex(absl::string_view token, size_t* index) {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return false;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(token, &v)) return false;
  *index = static_cast<size_t>(v);
  return true;
}

// The value at `tokens`, or nullptr.
rapidjson::Value* Resolve(rapidjson::Value& root, const std::vector<std::string>& tokens,
                          size_t count) {
  rapidjson::Value* v = &root;
  for (size_t i = 0; i < count; ++i) {
    const std::string& t = tokens[i];
    if (v->IsObject()) {
      auto it = v->FindMember(rapidjson::StringRef(t.data(), t.size()));
      if (it == v->MemberEnd()) return nullptr;
      v = &it->value;
    } else if (v->IsArray()) {
      size_t index = 0;
      if (!ParseIndex(t, &index) || index >= v->Size()) return nullptr;
      v = &(*v)[static_cast<rapidjson::SizeType>(index)];
    } else {
      return nullptr;
    }
  }
  return v;
}

}  // namespace

std::string EscapePointerToken(absl::string_view token) {
  return absl::StrReplaceAll(token, {{"~", "~0"}, {"/", "~1"}});
}

std::string UnescapePointerToken(absl::string_view token) {
  // "~01" must become "~1", so "~1" is replaced before "~0" (RFC 6901 section 4).
  std::string out = absl::StrReplaceAll(token, {{"~1", "/"}});
  return absl::StrReplaceAll(out, {{"~0", "~"}});
}

std::string PointerJoin(absl::string_view pointer, absl::string_view token) {
  return absl::StrCat(pointer, "/", EscapePointerToken(token));
}

std::string PointerJoin(absl::string_view pointer, size_t index) {
  return absl::StrCat(pointer, "/", index);
}

JsonPatch::JsonPatch()
    : pool_(std::make_unique<rapidjson::MemoryPoolAllocator<>>(common::kSmallJsonChunkBytes)),
      ops_(rapidjson::kArrayType, pool_.get()) {}

void JsonPatch::Push(absl::string_view op, absl::string_view path, const rapidjson::Value* value) {
  auto& alloc = ops_.GetAllocator();
  rapidjson::Value entry(rapidjson::kObjectType);
  entry.AddMember("op", JsonString(op, alloc), alloc);
  entry.AddMember("path", JsonString(path, alloc), alloc);
  if (value) entry.AddMember("value", rapidjson::Value(*value, alloc), alloc);
  ops_.PushBack(entry, alloc);
}

void JsonPatch::Add(absl::string_view path, const rapidjson::Value& value) {
  Push("add", path, &value);
}

void JsonPatch::Add(absl::string_view path, absl::string_view value) {
  rapidjson::Value v = JsonString(value, ops_.GetAllocator());
  Push("add", path, &v);
}

void JsonPatch::Replace(absl::string_view path, const rapidjson::Value& value) {
  Push("replace", path, &value);
}

void JsonPatch::Replace(absl::string_view path, absl::string_view value) {
  rapidjson::Value v = JsonString(value, ops_.GetAllocator());
  Push("replace", path, &v);
}

void JsonPatch::Remove(absl::string_view path) { Push("remove", path, nullptr); }

std::string JsonPatch::ToJson() const { return common::ToJson(ops_); }

std::string JsonPatch::ToBase64() const { return absl::Base64Escape(ToJson()); }

void EnsureMapEntries(const rapidjson::Value& object, absl::string_view pointer,
                      absl::string_view key,
                      const std::vector<std::pair<std::string, std::string>>& entries,
                      JsonPatch& patch) {
  if (entries.empty()) return;
  const std::string map_pointer = PointerJoin(pointer, key);
  const rapidjson::Value* map = common::FindNonNull(object, key);
  if (!map || !map->IsObject()) {
    // "add" on a missing parent fails, so the whole map goes in at once.
    auto& alloc = patch.allocator();
    rapidjson::Value whole(rapidjson::kObjectType);
    for (const auto& [k, v] : entries) {
      if (whole.FindMember(rapidjson::StringRef(k.data(), k.size())) != whole.MemberEnd()) continue;
      whole.AddMember(JsonString(k, alloc), JsonString(v, alloc), alloc);
    }
    patch.Add(map_pointer, whole);
    return;
  }
  for (const auto& [k, v] : entries) {
    const rapidjson::Value* current = common::FindMember(*map, k);
    if (!current) {
      patch.Add(PointerJoin(map_pointer, k), v);
    } else if (!current->IsString() || common::AsStringView(*current) != v) {
      patch.Replace(PointerJoin(map_pointer, k), v);
    }
  }
}

absl::Status ApplyPatch(const rapidjson::Value& patch, rapidjson::Document& doc) {
  if (!patch.IsArray()) return absl::InvalidArgumentError("patch: expected an array");
  auto& alloc = doc.GetAllocator();
  for (rapidjson::SizeType i = 0; i < patch.Size(); ++i) {
    const rapidjson::Value& op = patch[i];
    if (!op.IsObject()) return OpError(i, "expected an object");
    absl::string_view name = common::StringOr(op, "op");
    const rapidjson::Value* path_value = common::FindMember(op, "path");
    if (!path_value || !path_value->IsString()) return OpError(i, "path: missing");
    absl::StatusOr<std::vector<std::string>> tokens =
        SplitPointer(common::AsStringView(*path_value));
    if (!tokens.ok()) return OpError(i, tokens.status().message());
    const rapidjson::Value* value = common::FindMember(op, "value");
    const bool needs_value = name == "add" || name == "replace" || name == "test";
    if (needs_value && !value) return OpError(i, "value: missing");
    if (name != "add" && name != "replace" && name != "remove" && name != "test") {
      return OpError(i, absl::StrCat("unsupported op \"", name, "\""));
    }

    if (tokens->empty()) {
      if (name == "remove") return OpError(i, "cannot remove the whole document");
      if (name == "test") {
        if (!(doc == *value)) return OpError(i, "test failed");
        continue;
      }
      rapidjson::Value copy(*value, alloc);
      static_cast<rapidjson::Value&>(doc) = copy;
      continue;
    }

    rapidjson::Value* parent = Resolve(doc, *tokens, tokens->size() - 1);
    if (!parent) {
      return OpError(
          i, absl::StrCat("parent of ", common::AsStringView(*path_value), " does not exist"));
    }
    const std::string& last = tokens->back();
    if (parent->IsObject()) {
      auto it = parent->FindMember(rapidjson::StringRef(last.data(), last.size()));
      const bool exists = it != parent->MemberEnd();
      if (name == "add") {
        rapidjson::Value copy(*value, alloc);
        if (exists) {
          it->value = copy;
        } else {
          parent->AddMember(JsonString(last, alloc), copy, alloc);
        }
      } else if (!exists) {
        return OpError(i, absl::StrCat(common::AsStringView(*path_value), " does not exist"));
      } else if (name == "replace") {
        it->value = rapidjson::Value(*value, alloc);
      } else if (name == "remove") {
        parent->EraseMember(it);
      } else if (!(it->value == *value)) {
        return OpError(i, "test failed");
      }
    } else if (parent->IsArray()) {
      size_t index = 0;
      const bool append = last == "-";
      if (!append && !ParseIndex(last, &index)) {
        return OpError(i, absl::StrCat("\"", last, "\" is not an array index"));
      }
      if (append) {
        if (name != "add") return OpError(i, "\"-\" is only valid for add");
        parent->PushBack(rapidjson::Value(*value, alloc), alloc);
        continue;
      }
      const size_t size = parent->Size();
      if (name == "add") {
        if (index > size) return OpError(i, absl::StrCat("index ", index, " out of range"));
        parent->PushBack(rapidjson::Value(*value, alloc), alloc);
        // Bubble the new element from the end down to its index.
        for (size_t k = size; k > index; --k) {
          (*parent)[static_cast<rapidjson::SizeType>(k)].Swap(
              (*parent)[static_cast<rapidjson::SizeType>(k - 1)]);
        }
        continue;
      }
      if (index >= size) return OpError(i, absl::StrCat("index ", index, " out of range"));
      rapidjson::Value& target = (*parent)[static_cast<rapidjson::SizeType>(index)];
      if (name == "replace") {
        target = rapidjson::Value(*value, alloc);
      } else if (name == "remove") {
        parent->Erase(parent->Begin() + index);
      } else if (!(target == *value)) {
        return OpError(i, "test failed");
      }
    } else {
      return OpError(i, absl::StrCat("parent of ", common::AsStringView(*path_value),
                                     " is not an object or array"));
    }
  }
  return absl::OkStatus();
}

}  // namespace webhook
