// JSON through RapidJSON's writer (header-only), so escaping and numbers are a JSON library's.
#include <string>

#include "plan/render.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

namespace plan {
namespace {

using Writer = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void Write(const Tree& t, Writer& w) {
  switch (t.kind) {
    case Tree::Kind::kNull:
      w.Null();
      return;
    case Tree::Kind::kBool:
      w.Bool(t.boolean);
      return;
    case Tree::Kind::kInt:
      w.Int64(t.integer);
      return;
    case Tree::Kind::kString:
      w.String(t.string.data(), static_cast<rapidjson::SizeType>(t.string.size()));
      return;
    case Tree::Kind::kList:
      w.StartArray();
      for (const Tree& item : t.items) Write(item, w);
      w.EndArray();
      return;
    case Tree::Kind::kMap:
      w.StartObject();
      for (const auto& [key, value] : t.members) {
        w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
        Write(value, w);
      }
      w.EndObject();
      return;
  }
}

}  // namespace

std::string RenderJson(const PlanDocument& doc) { return RenderJsonTree(DocumentTree(doc)); }

std::string RenderJsonTree(const Tree& tree) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.SetIndent(' ', 2);
  Write(tree, w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace plan
