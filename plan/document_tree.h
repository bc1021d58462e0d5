// The plan document in the shape JSON and YAML print it: one tree of maps (keys in order),
// lists and scalars. The JSON and YAML renderers walk the same tree, so `-o yaml` parses back to
// exactly what `-o json` prints; the text embeds some branches of it as YAML.
#ifndef GPU_TENANCY_PLAN_DOCUMENT_TREE_H_
#define GPU_TENANCY_PLAN_DOCUMENT_TREE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "plan/document.h"

namespace plan {

struct Tree {
  enum class Kind { kNull, kBool, kInt, kString, kList, kMap };

  static Tree Null() { return Tree(Kind::kNull); }
  static Tree Bool(bool b);
  static Tree Int(int64_t n);
  static Tree String(absl::string_view s);
  static Tree List() { return Tree(Kind::kList); }
  static Tree Map() { return Tree(Kind::kMap); }
  static Tree Strings(const std::vector<std::string>& items);

  // Building maps; each returns *this so members chain.
  Tree& Set(absl::string_view key, Tree value);
  Tree& SetString(absl::string_view key, absl::string_view s) { return Set(key, String(s)); }
  Tree& SetInt(absl::string_view key, int64_t n) { return Set(key, Int(n)); }
  Tree& SetBool(absl::string_view key, bool b) { return Set(key, Bool(b)); }
  // Building lists.
  Tree& Push(Tree item);

  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Tree> items;                            // kList
  std::vector<std::pair<std::string, Tree>> members;  // kMap, in order

 private:
  explicit Tree(Kind k) : kind(k) {}
};

// The whole document: summary, workloads, gpus, nvidiaSmi, migParted, devicePlugin, nodeLabels,
// pods, resourceClaims, policy, warnings.
Tree DocumentTree(const PlanDocument& doc);

// Branches the text prints on their own.
Tree MigPartedTree(const std::vector<MigPartedConfig>& configs);  // {version, mig-configs}
Tree DevicePluginConfigsTree(const std::vector<DevicePluginConfig>& configs);  // name -> config
Tree PodsTree(const std::vector<PodSnippet>& pods);
Tree ClaimTree(const ClaimSnippet& claim);
Tree PolicyTree(const PolicySection& policy);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_DOCUMENT_TREE_H_
