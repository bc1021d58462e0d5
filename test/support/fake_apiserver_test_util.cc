// Shared pieces of the emulation's tests (see fake_apiserver_test_util.h).
#include "test/support/fake_apiserver_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>

#include "absl/strings/ascii.h"
#include "common/json.h"
#include "test/support/serve_process.h"

namespace testing_support::apiserver_test {

std::set<std::string> Keys(const rapidjson::Value& v) {
  std::set<std::string> out;
  if (!v.IsObject()) return out;
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) out.insert(it->name.GetString());
  return out;
}

std::string Str(const rapidjson::Value& obj, const char* key) {
  return std::string(common::StringOr(obj, key));
}

std::string Meta(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* m = common::FindMember(obj, "metadata");
  return m == nullptr ? "" : Str(*m, key);
}

std::vector<std::string> ItemNames(const rapidjson::Value& list) {
  std::vector<std::string> out;
  const rapidjson::Value* items = common::FindMember(list, "items");
  if (items == nullptr || !items->IsArray()) return out;
  for (const auto& item : items->GetArray()) out.push_back(Meta(item, "name"));
  return out;
}

void EraseMetadataField(rapidjson::Value& obj, const char* key) {
  auto m = obj.FindMember("metadata");
  if (m != obj.MemberEnd() && m->value.IsObject()) m->value.RemoveMember(key);
}

bool ContainsIgnoreCase(absl::string_view haystack, absl::string_view needle) {
  return absl::StrContains(absl::AsciiStrToLower(haystack), absl::AsciiStrToLower(needle));
}

std::string NoDigits(const std::string& s) {
  return std::regex_replace(s, std::regex("[0-9]+"), "N");
}

std::vector<std::string> Chunks(const std::string& raw, bool* terminated) {
  std::vector<std::string> out;
  *terminated = false;
  size_t i = 0;
  while (i < raw.size()) {
    size_t eol = raw.find("\r\n", i);
    if (eol == std::string::npos) break;
    size_t n = std::stoul(raw.substr(i, eol - i), nullptr, 16);
    if (n == 0) {
      *terminated = raw.compare(eol, 4, "\r\n\r\n") == 0;
      break;
    }
    out.push_back(raw.substr(eol + 2, n));
    i = eol + 2 + n + 2;
  }
  return out;
}

std::pair<std::string, int> CapturedReply(const std::string& text) {
  size_t at = text.rfind("\nHTTP ");
  return {text.substr(0, at + 1), std::stoi(text.substr(at + 6))};
}

std::string PodJson(const std::string& ns, const std::string& name, const std::string& node,
                    const std::string& app) {
  std::string spec = node.empty() ? "" : absl::StrCat(R"("nodeName":")", node, R"(",)");
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"(","namespace":")", ns, R"(","labels":{"app":")", app, R"("}},"spec":{)",
                      spec,
                      R"("containers":[{"name":"main","image":"registry.k8s.io/pause:3.9"}]},)"
                      R"("status":{"phase":"Pending"}})");
}

std::string BindingJson(const std::string& ns, const std::string& name, const std::string& node,
                        const std::string& extra_meta) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")", name,
                      R"(","namespace":")", ns, "\"", extra_meta,
                      R"(},"target":{"apiVersion":"v1","kind":"Node","name":")", node, R"("}})");
}

std::unique_ptr<httplib::SSLClient> MakeClient(const FakeApiServer& server,
                                               const std::string& token) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", server.port());
  c->set_ca_cert_path(server.ca_file().c_str());
  c->enable_server_certificate_verification(true);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);  // as Go's clients: else Nagle adds ~40 ms to keep-alive writes
  c->set_read_timeout(10, 0);
  c->set_connection_timeout(5, 0);
  if (!token.empty()) c->set_bearer_token_auth(token.c_str());
  return c;
}

RawResponse RawHttps(int port, const std::string& ca_file, const std::string& target,
                     const std::string& token) {
  RawResponse out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = inet_addr("127.0.0.1");
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  SSL* ssl = SSL_new(ctx);
  std::string data;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1) {
    std::string request =
        absl::StrCat("GET ", target, " HTTP/1.1\r\nHost: 127.0.0.1:", port,
                     "\r\nAccept: application/json\r\nAuthorization: Bearer ", token, "\r\n\r\n");
    SSL_write(ssl, request.data(), static_cast<int>(request.size()));
    char buf[16384];
    while (true) {
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n <= 0) break;
      data.append(buf, static_cast<size_t>(n));
      size_t head_end = data.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      std::string body = data.substr(head_end + 4);
      if (body == "0\r\n\r\n" || absl::EndsWith(body, "\r\n0\r\n\r\n")) break;
      if (!ContainsIgnoreCase(data.substr(0, head_end), "chunked") &&
          ContainsIgnoreCase(data.substr(0, head_end), "content-length")) {
        break;  // a short non-streamed reply fits in one read here
      }
    }
  }
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
  size_t head_end = data.find("\r\n\r\n");
  if (head_end == std::string::npos) return out;
  out.head = data.substr(0, head_end);
  out.body = data.substr(head_end + 4);
  return out;
}

std::vector<std::string> CapturedWatchLines() {
  bool terminated;
  return Chunks(ReadTestData("apiserver/watch-pods.raw"), &terminated);
}

}  // namespace testing_support::apiserver_test
