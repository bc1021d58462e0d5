#include "kube/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "common/json.h"
#include "common/yaml_json.h"

namespace kube {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Resolve(const std::string& base_dir, absl::string_view path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return std::string(path);
  return absl::StrCat(base_dir, "/", path);
}

// "https://host:port/prefix" -> host, port. Only https is accepted: tokens never go in clear.
absl::Status ParseServer(absl::string_view server, ApiConfig& out) {
  if (!absl::ConsumePrefix(&server, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster.server must be an https:// URL, got \"", server, "\""));
  }
  server = server.substr(0, server.find('/'));
  std::string host;
  absl::string_view port_text;
  if (!server.empty() && server[0] == '[') {  // [v6]:port
    size_t close = server.find(']');
    if (close == absl::string_view::npos)
      return absl::InvalidArgumentError("cluster.server: bad IPv6 host");
    host = std::string(server.substr(1, close - 1));
    if (close + 1 < server.size() && server[close + 1] == ':') port_text = server.substr(close + 2);
  } else {
    size_t colon = server.rfind(':');
    host = std::string(server.substr(0, colon));
    if (colon != absl::string_view::npos) port_text = server.substr(colon + 1);
  }
  if (host.empty()) return absl::InvalidArgumentError("cluster.server: no host");
  out.host = host;
  out.port = 443;
  if (!port_text.empty() &&
      (!absl::SimpleAtoi(port_text, &out.port) || out.port <= 0 || out.port > 65535)) {
    return absl::InvalidArgumentError(absl::StrCat("cluster.server: bad port \"", port_text, "\""));
  }
  return absl::OkStatus();
}

// A named entry of kubeconfig's clusters/users/contexts lists.
const common::JsonValue* Named(const common::JsonValue& root, absl::string_view list,
                               absl::string_view name, absl::string_view inner) {
  const common::JsonValue* items = common::FindNonNull(root, list);
  if (!items || !items->IsArray()) return nullptr;
  for (const auto& item : items->GetArray()) {
    if (common::StringOr(item, "name") == name) return common::FindNonNull(item, inner);
  }
  return nullptr;
}

// Inline base64 data wins over a file, as in kubectl.
absl::StatusOr<std::string> DataOrFile(const common::JsonValue& obj, absl::string_view data_key,
                                       absl::string_view file_key, const std::string& base_dir,
                                       absl::string_view where) {
  absl::string_view data = common::StringOr(obj, data_key);
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".", data_key, ": not base64"));
    }
    return decoded;
  }
  absl::string_view file = common::StringOr(obj, file_key);
  if (file.empty()) return std::string();
  absl::StatusOr<std::string> text = ReadWhole(Resolve(base_dir, file));
  if (!text.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".", file_key, ": ", text.status().message()));
  return text;
}

}  // namespace

absl::StatusOr<ApiConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || !*host) {
    return absl::FailedPreconditionError(
        "not running in a pod (KUBERNETES_SERVICE_HOST is unset): give --kubeconfig or "
        "--cluster-file");
  }
  ApiConfig config;
  config.host = host;
  if (!absl::SimpleAtoi(port, &config.port)) {
    return absl::InvalidArgumentError("KUBERNETES_SERVICE_PORT is not a number");
  }
  config.token_file = sa_dir + "/token";
  ASSIGN_OR_RETURN(config.ca_pem, ReadWhole(sa_dir + "/ca.crt"));
  absl::StatusOr<std::string> ns = ReadWhole(sa_dir + "/namespace");
  if (ns.ok()) config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
  return config;
}

absl::StatusOr<ApiConfig> ParseKubeconfig(absl::string_view yaml_text, const std::string& base_dir,
                                          const std::string& context) {
  ASSIGN_OR_RETURN(rapidjson::Document doc, common::YamlToJson(yaml_text));
  std::string ctx_name =
      context.empty() ? std::string(common::StringOr(doc, "current-context")) : context;
  if (ctx_name.empty()) return absl::InvalidArgumentError("kubeconfig: no current-context");
  const common::JsonValue* ctx = Named(doc, "contexts", ctx_name, "context");
  if (!ctx)
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: context \"", ctx_name, "\" not found"));
  absl::string_view cluster_name = common::StringOr(*ctx, "cluster");
  absl::string_view user_name = common::StringOr(*ctx, "user");
  const common::JsonValue* cluster = Named(doc, "clusters", cluster_name, "cluster");
  if (!cluster) {
    return absl::InvalidArgumentError(
        absl::StrCat("kubeconfig: cluster \"", cluster_name, "\" not found"));
  }
  ApiConfig config;
  RETURN_IF_ERROR(ParseServer(common::StringOr(*cluster, "server"), config));
  config.tls_server_name = std::string(common::StringOr(*cluster, "tls-server-name"));
  ASSIGN_OR_RETURN(config.ca_pem, DataOrFile(*cluster, "certificate-authority-data",
                                             "certificate-authority", base_dir, "cluster"));
  if (absl::string_view ns = common::StringOr(*ctx, "namespace"); !ns.empty()) {
    config.namespace_name = std::string(ns);
  }
  const common::JsonValue* user = Named(doc, "users", user_name, "user");
  if (user) {
    config.token = std::string(common::StringOr(*user, "token"));
    if (absl::string_view f = common::StringOr(*user, "tokenFile"); !f.empty()) {
      config.token_file = Resolve(base_dir, f);
    }
    ASSIGN_OR_RETURN(config.client_cert_pem, DataOrFile(*user, "client-certificate-data",
                                                        "client-certificate", base_dir, "user"));
    ASSIGN_OR_RETURN(config.client_key_pem,
                     DataOrFile(*user, "client-key-data", "client-key", base_dir, "user"));
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return absl::InvalidArgumentError(
          "kubeconfig: user has a client certificate without a key, or a key without a "
          "certificate");
    }
  }
  return config;
}

absl::StatusOr<ApiConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  ASSIGN_OR_RETURN(std::string text, ReadWhole(path));
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  absl::StatusOr<ApiConfig> config = ParseKubeconfig(text, dir, context);
  if (!config.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", config.status().message()));
  return config;
}

}  // namespace kube
