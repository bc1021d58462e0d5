// The pages for people under /ui/: the files of web/ embedded at build time (index.html,
// picker.html, map.html and their scripts and style), and the JSON they read. The JSON comes
// from handlers the caller passes in (cmd/ wires views/ui_json.h and extender/gpu_map.h), so
// this room serves and does not compute:
//   GET /ui/                  index.html
//   GET /ui/<file>            a web/ file, with its content type
//   GET /ui/api/catalog       UiHandlers::catalog
//   GET /ui/api/plan?input=   UiHandlers::plan of the percent-decoded input; 400 with
//                             {"error"} when it is missing or the handler refuses it
//   GET /ui/api/map           UiHandlers::map, when given (serve); otherwise no such route
//   GET /ui/audit             UiHandlers::audit_html (the isolation audit as a page) and
//   GET /ui/api/audit         UiHandlers::audit_json, when given (serve)
// Pages and JSON alike are no-store: the map is live, and a page must never run a stale script
// against a newer endpoint.
//
//   std::vector<OperatorRoute> routes = UiRoutes({catalog, plan, map});
#ifndef GPU_TENANCY_SERVER_UI_ROUTES_H_
#define GPU_TENANCY_SERVER_UI_ROUTES_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/listener.h"

namespace server {

struct UiHandlers {
  std::function<std::string()> catalog;
  std::function<absl::StatusOr<std::string>(absl::string_view input)> plan;
  std::function<std::string()> map;         // null: no map (gpu-tenancy ui)
  std::function<std::string()> audit_html;  // null: no audit (gpu-tenancy ui)
  std::function<std::string()> audit_json;
};

std::vector<OperatorRoute> UiRoutes(UiHandlers handlers);

// The value of `name` in a query string ("input=a%20b&x=1" -> "a b"), percent-decoded with '+'
// as a space; nullopt when absent or when an escape is malformed.
std::optional<std::string> QueryValue(absl::string_view query, absl::string_view name);

// The embedded web/ files: name ("picker.js") and content.
struct WebFile {
  std::string name;
  absl::string_view content;
};
const std::vector<WebFile>& EmbeddedWebFiles();

}  // namespace server

#endif  // GPU_TENANCY_SERVER_UI_ROUTES_H_
