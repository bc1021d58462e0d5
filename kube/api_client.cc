#include "kube/api_client.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kube {

struct ApiClient::OpenSsl {
  ~OpenSsl() {
    for (X509* c : ca) X509_free(c);
    X509_free(client_cert);
    EVP_PKEY_free(client_key);
  }
  std::vector<X509*> ca;
  X509* client_cert = nullptr;
  EVP_PKEY* client_key = nullptr;
};

struct ApiClient::IdlePool {
  std::vector<std::unique_ptr<httplib::SSLClient>> clients;
};

// The client a stream handle keeps between its streams.
struct ApiClient::StreamConnection final : Api::Stream::Connection {
  void Stop() override { client->stop(); }
  std::unique_ptr<httplib::SSLClient> client;
  int read_timeout_seconds = 0;
};

namespace {

std::vector<X509*> ReadCerts(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.push_back(c);
  BIO_free(bio);
  return out;
}

// Makes `ctx` trust exactly `ca` and verify during the handshake that the API server's
// certificate chains to it and names `name` (a DNS name or an IP address). httplib's own
// verification is not used with a configured CA: before each new connection's first handshake
// it adds the system's CA bundle to the store, so any public CA could vouch for the API server
// (client-go trusts the kubeconfig's CA alone), and it parses some hundred certificates to do so.
void TrustOnly(SSL_CTX* ctx, const std::vector<X509*>& ca, const std::string& name) {
  X509_STORE* store = X509_STORE_new();  // owned by ctx from here on
  for (X509* c : ca) X509_STORE_add_cert(store, c);
  SSL_CTX_set_cert_store(ctx, store);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  unsigned char ip[sizeof(in6_addr)];
  if (inet_pton(AF_INET, name.c_str(), ip) == 1 || inet_pton(AF_INET6, name.c_str(), ip) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<ApiClient>> ApiClient::Create(ApiConfig config) {
  std::unique_ptr<ApiClient> client(new ApiClient(std::move(config)));
  auto ssl = std::make_shared<OpenSsl>();
  const ApiConfig& c = client->config_;
  if (!c.ca_pem.empty()) {
    ssl->ca = ReadCerts(c.ca_pem);
    if (ssl->ca.empty()) return absl::InvalidArgumentError("API server CA: no PEM certificate");
  }
  if (!c.client_cert_pem.empty()) {
    std::vector<X509*> certs = ReadCerts(c.client_cert_pem);
    if (certs.empty()) return absl::InvalidArgumentError("client certificate: no PEM certificate");
    ssl->client_cert = certs[0];
    for (size_t i = 1; i < certs.size(); ++i) X509_free(certs[i]);
    BIO* bio = BIO_new_mem_buf(c.client_key_pem.data(), static_cast<int>(c.client_key_pem.size()));
    ssl->client_key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!ssl->client_key) return absl::InvalidArgumentError("client key: no PEM private key");
  }
  client->ssl_ = std::move(ssl);
  client->idle_ = std::make_unique<IdlePool>();
  return client;
}

ApiClient::ApiClient(ApiConfig config) : config_(std::move(config)) {}
ApiClient::~ApiClient() = default;

std::unique_ptr<httplib::SSLClient> ApiClient::NewConnection(int read_timeout_seconds) const {
  const std::string& name =
      config_.tls_server_name.empty() ? config_.host : config_.tls_server_name;
  std::unique_ptr<httplib::SSLClient> cli =
      ssl_->client_cert ? std::make_unique<httplib::SSLClient>(name, config_.port,
                                                               ssl_->client_cert, ssl_->client_key)
                        : std::make_unique<httplib::SSLClient>(name, config_.port);
  if (name != config_.host) cli->set_hostname_addr_map({{name, config_.host}});
  if (ssl_->ca.empty()) {
    // No CA configured: the system's bundle decides, as for client-go.
    cli->enable_server_certificate_verification(true);
  } else {
    TrustOnly(cli->ssl_context(), ssl_->ca, name);
    cli->enable_server_certificate_verification(false);  // OpenSSL verifies, see TrustOnly
  }
  cli->set_keep_alive(true);
  cli->set_tcp_nodelay(true);
  cli->set_connection_timeout(5, 0);
  cli->set_read_timeout(read_timeout_seconds, 0);
  cli->set_write_timeout(10, 0);
  return cli;
}

std::unique_ptr<httplib::SSLClient> ApiClient::Borrow() {
  {
    common::MutexLock lock(&mu_);
    if (!idle_->clients.empty()) {
      std::unique_ptr<httplib::SSLClient> c = std::move(idle_->clients.back());
      idle_->clients.pop_back();
      return c;
    }
  }
  return NewConnection(30);
}

void ApiClient::Return(std::unique_ptr<httplib::SSLClient> client) {
  common::MutexLock lock(&mu_);
  if (idle_->clients.size() < 16) idle_->clients.push_back(std::move(client));
}

std::string ApiClient::Token(bool reread) {
  if (config_.token_file.empty()) return config_.token;
  struct stat st = {};
  std::string stamp;
  if (::stat(config_.token_file.c_str(), &st) == 0) {
    stamp =
        absl::StrCat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  }
  common::MutexLock lock(&mu_);
  if (reread || stamp != token_stamp_) {
    std::ifstream in(config_.token_file);
    std::ostringstream text;
    text << in.rdbuf();
    token_ = std::string(absl::StripAsciiWhitespace(text.str()));
    token_stamp_ = stamp;
  }
  return token_;
}

template <typename Call>
absl::StatusOr<ApiResponse> ApiClient::Send(Call call) {
  auto send_once = [&](const std::string& token) -> absl::StatusOr<ApiResponse> {
    httplib::Headers headers = {{"Accept", "application/json"}};
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    // A pooled keep-alive connection may have been closed by the server meanwhile: retry once
    // on a fresh connection before calling the API server unavailable.
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::unique_ptr<httplib::SSLClient> cli = attempt == 0 ? Borrow() : NewConnection(30);
      httplib::Result r = call(*cli, headers);
      if (r) {
        ApiResponse out{r->status, std::move(r->body)};
        Return(std::move(cli));
        return out;
      }
      if (attempt == 1) {
        return absl::UnavailableError(absl::StrCat("kube-apiserver ", config_.host, ":",
                                                   config_.port, ": ",
                                                   httplib::to_string(r.error())));
      }
    }
    return absl::UnavailableError("kube-apiserver unreachable");
  };
  std::string token = Token();
  absl::StatusOr<ApiResponse> r = send_once(token);
  // A 401 may mean the token file was rotated without its stamp showing it (same inode, size
  // and a coarse file clock's mtime): read it again and retry once if it changed, as client-go
  // resets its cached token on 401.
  if (r.ok() && r->status == 401 && !config_.token_file.empty()) {
    std::string fresh = Token(/*reread=*/true);
    if (fresh != token) r = send_once(fresh);
  }
  return r;
}

absl::StatusOr<ApiResponse> ApiClient::Get(const std::string& path) {
  return Send(
      [&](httplib::SSLClient& c, const httplib::Headers& h) { return c.Get(path.c_str(), h); });
}

absl::StatusOr<ApiResponse> ApiClient::Post(const std::string& path, const std::string& body) {
  return Send([&](httplib::SSLClient& c, const httplib::Headers& h) {
    return c.Post(path.c_str(), h, body, "application/json");
  });
}

absl::StatusOr<ApiResponse> ApiClient::Put(const std::string& path, const std::string& body) {
  return Send([&](httplib::SSLClient& c, const httplib::Headers& h) {
    return c.Put(path.c_str(), h, body, "application/json");
  });
}

absl::StatusOr<ApiResponse> ApiClient::Patch(const std::string& path, const std::string& body,
                                             const std::string& content_type) {
  return Send([&](httplib::SSLClient& c, const httplib::Headers& h) {
    return c.Patch(path.c_str(), h, body, content_type.c_str());
  });
}

absl::StatusOr<ApiResponse> ApiClient::Delete(const std::string& path) {
  return Send(
      [&](httplib::SSLClient& c, const httplib::Headers& h) { return c.Delete(path.c_str(), h); });
}

absl::StatusOr<int> ApiClient::StreamLines(const std::string& path,
                                           const std::function<bool(absl::string_view)>& on_line,
                                           Stream* cancel_handle, int read_timeout_seconds) {
  // A stream with a handle keeps its client (and so its TLS context) from one watch to the next:
  // building an SSL_CTX per watch cost a context's allocations every resync period.
  std::unique_ptr<httplib::SSLClient> own;
  httplib::SSLClient* cli = nullptr;
  if (cancel_handle) {
    absl::Status begun = cancel_handle->Begin([&](std::unique_ptr<Stream::Connection>& kept) {
      auto* mine = dynamic_cast<StreamConnection*>(kept.get());
      if (mine == nullptr || mine->read_timeout_seconds != read_timeout_seconds) {
        auto fresh = std::make_unique<StreamConnection>();
        fresh->client = NewConnection(read_timeout_seconds);
        fresh->client->set_keep_alive(false);
        fresh->read_timeout_seconds = read_timeout_seconds;
        mine = fresh.get();
        kept = std::move(fresh);
      }
      cli = mine->client.get();
      return mine;
    });
    if (!begun.ok()) return begun;
  } else {
    own = NewConnection(read_timeout_seconds);
    own->set_keep_alive(false);
    cli = own.get();
  }
  httplib::Headers headers = {{"Accept", "application/json"}};
  std::string token = Token();
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  int status = 0;
  std::string pending;
  bool stopped = false;
  // Cancel() may come before the connection exists (stop() then has nothing to close): the
  // handlers check it, so a cancelled watch ends at its first byte instead of its timeout.
  auto cancelled = [cancel_handle] { return cancel_handle && cancel_handle->stopping(); };
  httplib::Result r = cli->Get(
      path.c_str(), headers,
      [&](const httplib::Response& res) {
        status = res.status;
        return !cancelled();
      },
      [&](const char* data, size_t length) {
        if (cancelled()) return false;
        pending.append(data, length);
        if (status != 200) return pending.size() < (1u << 20);
        size_t start = 0;
        for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
          absl::string_view line(pending.data() + start, nl - start);
          if (!line.empty() && !on_line(line)) {
            stopped = true;
            return false;
          }
        }
        pending.erase(0, start);
        return true;
      });
  if (cancel_handle) cancel_handle->End();
  if (status != 200 && !pending.empty()) on_line(pending);
  // As in Send(): after a 401 the token file is read again for the next attempt.
  if (status == 401 && !config_.token_file.empty()) Token(/*reread=*/true);
  if (cancel_handle && cancel_handle->cancelled()) return absl::CancelledError("watch cancelled");
  if (cancelled()) return absl::AbortedError("watch interrupted");
  if (!r && !stopped && status == 0) {
    return absl::UnavailableError(
        absl::StrCat("watch ", path, ": ", httplib::to_string(r.error())));
  }
  return status;
}

}  // namespace kube
