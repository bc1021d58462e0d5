// YAML through yaml-cpp's emitter: block style, two-space indent, "null" for null, and empty
// lists and maps as [] and {} on their key's line.
#include <exception>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "plan/render.h"
#include "yaml-cpp/yaml.h"

namespace plan {
namespace {

// yaml-cpp 0.7 leaves "123", "true" or "null" plain, which readers take for a number, a boolean
// or null. Those get quotes. The YAML 1.1 booleans (yes, off, y...) count too: Kubernetes'
// YAML readers still read them as booleans.
bool ReadsAsNonString(absl::string_view s) {
  std::string lower = absl::AsciiStrToLower(s);
  for (const char* word : {"", "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n",
                           ".inf", "-.inf", "+.inf", ".nan"}) {
    if (lower == word) return true;
  }
  // Numbers in any YAML spelling (12, -1.5e3, 0x1F, 0o17, 1_000, 1:30) start with a digit or a
  // sign or point before one, and use only these characters.
  size_t first = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (first < s.size() && s[first] == '.') ++first;
  if (first >= s.size() || !absl::ascii_isdigit(static_cast<unsigned char>(s[first]))) {
    return false;
  }
  for (char c : s) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) &&
        absl::string_view("xXoO._:+-").find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

void EmitString(const std::string& s, YAML::Emitter& out) {
  if (ReadsAsNonString(s)) out << YAML::DoubleQuoted;
  out << s;
}

void Emit(const Tree& t, YAML::Emitter& out) {
  switch (t.kind) {
    case Tree::Kind::kNull:
      out << YAML::Null;
      return;
    case Tree::Kind::kBool:
      out << t.boolean;
      return;
    case Tree::Kind::kInt:
      out << t.integer;
      return;
    case Tree::Kind::kString:
      EmitString(t.string, out);
      return;
    case Tree::Kind::kList:
      if (t.items.empty()) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const Tree& item : t.items) Emit(item, out);
      out << YAML::EndSeq;
      return;
    case Tree::Kind::kMap:
      if (t.members.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, value] : t.members) {
        out << YAML::Key;
        EmitString(key, out);
        out << YAML::Value;
        Emit(value, out);
      }
      out << YAML::EndMap;
      return;
  }
}

}  // namespace

absl::StatusOr<std::string> RenderYamlTree(const Tree& tree) {
  // yaml-cpp reports misuse through good(); catch anything it throws all the same, so no
  // exception leaves the planner.
  try {
    YAML::Emitter out;
    out.SetIndent(2);
    out.SetNullFormat(YAML::LowerNull);
    out.SetBoolFormat(YAML::TrueFalseBool);
    Emit(tree, out);
    if (!out.good()) {
      return absl::InternalError(absl::StrCat("YAML emitter: ", out.GetLastError()));
    }
    return absl::StrCat(out.c_str(), "\n");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("YAML emitter: ", e.what()));
  }
}

absl::StatusOr<std::string> RenderYaml(const PlanDocument& doc) {
  return RenderYamlTree(DocumentTree(doc));
}

}  // namespace plan
