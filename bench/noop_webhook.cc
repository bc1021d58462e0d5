// noop_webhook: the floor an admission webhook cannot go below, for bench/dra_floor.cc. It serves
// /webhook/validate and /webhook/mutate over HTTPS with gpu-tenancy's own listener (server/:
// the same TLS, HTTP framing and event loops), parses the AdmissionReview as every webhook must
// to answer it, and allows it, copying request.uid. No policy, no cluster state, no patch.
//
//   noop_webhook --tls-cert FILE --tls-key FILE [--listen-port 0]
//
// Prints "ready tls_port=N" when it serves; stops on SIGTERM or SIGINT.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/json.h"
#include "server/server.h"
#include "wire/extender_codec.h"

namespace {

server::Reply Allow(absl::string_view body) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(body);
  const common::JsonValue* request =
      doc.ok() && doc->IsObject() ? common::FindNonNull(*doc, "request") : nullptr;
  if (!request || !request->IsObject()) {
    return server::Reply{400, wire::EncodeHttpError("not an AdmissionReview"), {}};
  }
  rapidjson::Document reply(rapidjson::kObjectType);
  auto& alloc = reply.GetAllocator();
  rapidjson::Value response(rapidjson::kObjectType);
  response.AddMember("uid", common::JsonString(common::StringOr(*request, "uid"), alloc), alloc);
  response.AddMember("allowed", true, alloc);
  reply.AddMember("apiVersion", "admission.k8s.io/v1", alloc);
  reply.AddMember("kind", "AdmissionReview", alloc);
  reply.AddMember("response", response, alloc);
  return server::Reply{200, common::ToJson(reply), {}};
}

}  // namespace

int main(int argc, char** argv) {
  server::Options options;
  options.listen_host = "127.0.0.1";
  options.listen_port = 0;
  options.metrics_port = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tls-cert") {
      options.tls_cert_file = argv[i + 1];
    } else if (flag == "--tls-key") {
      options.tls_key_file = argv[i + 1];
    } else if (flag == "--listen-port" && absl::SimpleAtoi(argv[i + 1], &options.listen_port)) {
    } else {
      std::fprintf(stderr, "noop_webhook: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    std::fprintf(stderr, "usage: noop_webhook --tls-cert FILE --tls-key FILE [--listen-port N]\n");
    return 2;
  }
  // Before any thread starts, so only sigwait() below sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::vector<server::PostRoute> routes;
  for (const char* path : {"/webhook/validate", "/webhook/mutate"}) {
    // Pure and small: answered on the connection's event loop, the fastest path server/ has.
    routes.push_back({path, Allow, /*waits_on_io=*/false});
  }
  absl::StatusOr<std::unique_ptr<server::Server>> srv =
      server::Server::Create(options, std::move(routes), {});
  if (!srv.ok()) {
    std::fprintf(stderr, "noop_webhook: %s\n", srv.status().ToString().c_str());
    return 1;
  }
  (*srv)->Start();
  std::printf("ready tls_port=%d\n", (*srv)->tls_port());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  (*srv)->Stop();
  return 0;
}
