#include "server/ui_routes.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "wire/extender_codec.h"

namespace server {
namespace ui_routes {

// By extension; the pages use nothing else.
std::string ContentType(absl::string_view name) {
  if (absl::EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(name, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(name, ".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] != '%') {
      out.push_back(text[i]);
    } else {
      if (i + 2 >= text.size()) return std::nullopt;
      const int high = HexValue(text[i + 1]), low = HexValue(text[i + 2]);
      if (high < 0 || low < 0) return std::nullopt;
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    }
  }
  return out;
}

OperatorReply Error(int status, absl::string_view message) {
  return {status, kJsonContentType, wire::EncodeHttpError(message)};
}

}  // namespace ui_routes

std::optional<std::string> QueryValue(absl::string_view query, absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    absl::string_view key = pair.substr(0, pair.find('='));
    if (key != name) continue;
    if (key.size() == pair.size()) return std::string();
    return ui_routes::PercentDecode(pair.substr(key.size() + 1));
  }
  return std::nullopt;
}

std::vector<OperatorRoute> UiRoutes(UiHandlers handlers) {
  using namespace ui_routes;
  std::vector<OperatorRoute> routes;
  for (const WebFile& file : EmbeddedWebFiles()) {
    OperatorReply page{200, ContentType(file.name), std::string(file.content)};
    routes.push_back({absl::StrCat("/ui/", file.name), [page] { return page; }});
    if (file.name == "index.html") routes.push_back({"/ui/", [page] { return page; }});
  }
  routes.push_back({"/ui/api/catalog", [catalog = std::move(handlers.catalog)] {
                      return OperatorReply{200, kJsonContentType, catalog()};
                    }});
  OperatorRoute plan{"/ui/api/plan", nullptr};
  plan.query_handler = [handler = std::move(handlers.plan)](absl::string_view query) {
    std::optional<std::string> input = QueryValue(query, "input");
    if (!input) return Error(400, "input: missing or not percent-encoded");
    if (input->empty()) return Error(400, "input: empty");
    absl::StatusOr<std::string> body = handler(*input);
    if (!body.ok()) return Error(400, body.status().message());
    return OperatorReply{200, kJsonContentType, *std::move(body)};
  };
  routes.push_back(std::move(plan));
  if (handlers.map) {
    routes.push_back({"/ui/api/map", [map = std::move(handlers.map)] {
                        return OperatorReply{200, kJsonContentType, map()};
                      }});
  }
  if (handlers.audit_html && handlers.audit_json) {
    routes.push_back({"/ui/audit", [audit = std::move(handlers.audit_html)] {
                        return OperatorReply{200, "text/html; charset=utf-8", audit()};
                      }});
    routes.push_back({"/ui/api/audit", [audit = std::move(handlers.audit_json)] {
                        return OperatorReply{200, kJsonContentType, audit()};
                      }});
  }
  return routes;
}

}  // namespace server
