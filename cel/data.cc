#include "cel/data.h"

#include "absl/strings/str_cat.h"
#include "cel/eval.h"
#include "cel/parse.h"

namespace cel {

CelData::CelData() = default;
CelData::CelData(const CelData&) = default;
CelData::CelData(CelData&&) noexcept = default;
CelData& CelData::operator=(const CelData&) = default;
CelData& CelData::operator=(CelData&&) noexcept = default;
CelData::~CelData() = default;

CelData CelData::Null() { return {}; }

CelData CelData::Bool(bool b) {
  CelData d;
  d.type = Type::kBool;
  d.flag = b;
  return d;
}

CelData CelData::Int(int64_t n) {
  CelData d;
  d.type = Type::kInt;
  d.number = n;
  return d;
}

CelData CelData::String(std::string s) {
  CelData d;
  d.type = Type::kString;
  d.text = std::move(s);
  return d;
}

CelData CelData::List(std::vector<CelData> items) {
  CelData d;
  d.type = Type::kList;
  d.list = std::move(items);
  return d;
}

CelData CelData::Map(std::vector<std::pair<std::string, CelData>> entries) {
  CelData d;
  d.type = Type::kMap;
  d.map = std::move(entries);
  return d;
}

const CelData* CelData::Find(std::string_view key) const {
  if (type != Type::kMap) return nullptr;
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

struct CelCondition::Program {
  CelAst ast;
};

namespace {

// The plain-data dialect's names: the caller's bindings; a variable it left out is null.
class DataHost : public CelHost {
 public:
  explicit DataHost(const std::map<std::string, const CelData*, std::less<>>& bindings)
      : bindings_(bindings) {}
  CelValue Variable(absl::string_view name) const override {
    auto bound = bindings_.find(name);
    if (bound == bindings_.end() || bound->second == nullptr) return CelValue::Null();
    return CelValue::Of(*bound->second);
  }

 private:
  const std::map<std::string, const CelData*, std::less<>>& bindings_;
};

// The functions the parser accepts that this dialect does not evaluate (quantities and
// versions belong to device selectors), or "" when every call is evaluated.
std::string UnevaluatedCall(const CelAst& ast) {
  static constexpr const char* kEvaluated[] = {"size",     "startsWith", "endsWith",
                                               "contains", "lowerAscii", "upperAscii"};
  for (const CelNode& n : ast.nodes) {
    if (n.kind != CelNode::Kind::kCall) continue;
    bool known = false;
    for (const char* f : kEvaluated) known = known || n.text == f;
    if (!known) return absl::StrCat("function ", n.text);
  }
  return "";
}

}  // namespace

CelCondition::CelCondition(std::shared_ptr<const Program> program) : program_(std::move(program)) {}

CelCondition CelCondition::Compile(std::string_view expression,
                                   std::vector<std::string> variables) {
  auto program = std::make_shared<Program>();
  CelDialect dialect;
  dialect.variables = std::move(variables);
  program->ast = ParseCel(absl::string_view(expression.data(), expression.size()), dialect);
  if (program->ast.unsupported.empty()) program->ast.unsupported = UnevaluatedCall(program->ast);
  return CelCondition(std::move(program));
}

bool CelCondition::supported() const { return program_->ast.unsupported.empty(); }

const std::string& CelCondition::unsupported_reason() const { return program_->ast.unsupported; }

CelResult CelCondition::Evaluate(
    const std::map<std::string, const CelData*, std::less<>>& bindings) const {
  if (!supported()) return {CelOutcome::kNotEvaluated, program_->ast.unsupported};
  CelValue v = cel::Evaluate(program_->ast, DataHost(bindings));
  if (v.is_error()) return {CelOutcome::kError, std::move(v.text)};
  if (v.type != CelValue::Type::kBool) {
    return {CelOutcome::kError,
            absl::StrCat("expression evaluated to a ", CelTypeName(v.type), ", not a bool")};
  }
  return {v.flag ? CelOutcome::kTrue : CelOutcome::kFalse, ""};
}

}  // namespace cel
