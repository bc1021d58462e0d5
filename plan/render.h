// The three ways `gpu-tenancy plan` prints a plan document (plan/document.h): JSON and YAML for
// tools, one tree (plan/document_tree.h) in two syntaxes; text for people, which explains the
// decisions and embeds each configuration as YAML. Pure: strings in, strings out.
//
//   plan::PlanDocument doc = plan::BuildDocument(std::move(p));
//   ASSIGN_OR_RETURN(std::string yaml, plan::RenderYaml(doc));
#ifndef GPU_TENANCY_PLAN_RENDER_H_
#define GPU_TENANCY_PLAN_RENDER_H_

#include <string>

#include "absl/status/statusor.h"
#include "plan/document.h"
#include "plan/document_tree.h"

namespace plan {

// Pretty JSON, two-space indent, no trailing newline.
std::string RenderJson(const PlanDocument& doc);
std::string RenderJsonTree(const Tree& tree);

// Block-style YAML of the same tree; parses back to what RenderJson prints. Internal when
// yaml-cpp's emitter fails (it never should).
[[nodiscard]] absl::StatusOr<std::string> RenderYaml(const PlanDocument& doc);
[[nodiscard]] absl::StatusOr<std::string> RenderYamlTree(const Tree& tree);

// For people: fleet, summary, each workload's sizing and decision, each GPU's cut, then the
// commands and configuration snippets. Fails only as RenderYaml does.
[[nodiscard]] absl::StatusOr<std::string> RenderText(const PlanDocument& doc);

}  // namespace plan

#endif  // GPU_TENANCY_PLAN_RENDER_H_
