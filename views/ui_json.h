// The JSON the pages read (web/, served under /ui/ by server/ui_routes.h): the MIG catalog, and
// a plan for an input the picker's form made. Both reuse what the CLI prints, so the pages and
// `gpu-tenancy plan -o json` cannot disagree.
//
//   std::string models = views::CatalogJson(common::BuiltinCatalog());
//   absl::StatusOr<std::string> plan = views::PlanJson(input_yaml, catalog, policy);
#ifndef GPU_TENANCY_VIEWS_UI_JSON_H_
#define GPU_TENANCY_VIEWS_UI_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "topology/catalog.h"
#include "topology/policy.h"

namespace views {

// {"models":[{"model","products","memoryMiB","computeSlices","memorySlices","maxInstances",
//   "profiles":[{"name","id","computeSlices","memorySlices","memoryMiB","maxCount",
//   "placements"}]}]}; facts the catalog does not confirm (an id, a memory size) are null.
std::string CatalogJson(const topology::Catalog& catalog);

// `gpu-tenancy plan -o json` for `input_text` (the plan input, YAML or JSON), with the
// policy's GPU-memory annotation in pod snippets. InvalidArgument with the parser's or the
// planner's reason when the input is wrong or cannot be planned.
[[nodiscard]] absl::StatusOr<std::string> PlanJson(absl::string_view input_text,
                                                   const topology::Catalog& catalog,
                                                   const topology::Policy& policy);

}  // namespace views

#endif  // GPU_TENANCY_VIEWS_UI_JSON_H_
