// The server around the emulation: tokens and their rotation, client certificates, the request
// log, restarts on the same port with or without the state, injected failures, and the timed
// faults a chaos run schedules (failures by kind of request, stalls, a resourceVersion jump).
#include "test/support/fake_apiserver.h"

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "test/support/fake_apiserver_test_util.h"

namespace testing_support::apiserver_test {
namespace {

TEST_F(FakeApiServerTest, RejectsWrongTokensAndFollowsRotation) {
  auto status_with = [&](const std::string& token) {
    httplib::Result r = MakeClient(*server_, token)->Get("/api/v1/nodes");
    return r ? r->status : 0;
  };
  httplib::Result denied = MakeClient(*server_, "wrong")->Get("/api/v1/nodes");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  rapidjson::Document status = ParseOrDie(denied->body);
  EXPECT_EQ(Str(status, "kind"), "Status");
  EXPECT_EQ(Str(status, "status"), "Failure");
  EXPECT_EQ(Str(status, "reason"), "Unauthorized");
  EXPECT_EQ(status["code"].GetInt(), 401);
  EXPECT_EQ(status_with(""), 401);
  EXPECT_EQ(status_with(kToken), 200);

  server_->AcceptTokens({"old", "new"});
  EXPECT_EQ(status_with("old"), 200);
  EXPECT_EQ(status_with("new"), 200);
  server_->AcceptTokens({"new"});
  EXPECT_EQ(status_with("old"), 401);
  EXPECT_EQ(status_with("new"), 200);

  WatchStream watch(*server_, "/api/v1/pods?watch=1", "old");  // no stream without auth
  ASSERT_TRUE(watch.WaitDone(milliseconds(3000)));
  EXPECT_EQ(watch.status(), 401);

  std::vector<RequestRecord> log = server_->Requests();
  ASSERT_GE(log.size(), 8u);
  EXPECT_EQ(log[0].token, "wrong");
  EXPECT_EQ(log[0].status, 401);
  EXPECT_EQ(log[0].method, "GET");
  EXPECT_EQ(log[0].target, "/api/v1/nodes");
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/nodes"), 7);
  EXPECT_EQ(server_->CountRequests("GET", "/api/v1/pods", "watch=1"), 1);
  server_->ClearRequests();
  EXPECT_EQ(server_->CountRequests("", "/"), 0);
}

TEST_F(FakeApiServerTest, RestartKeepsThePortAndOptionallyTheState) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "a")));
  int port = server_->port();
  auto client = MakeClient(*server_);
  httplib::Result before = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(before);
  EXPECT_EQ(before->status, 200);

  auto start = std::chrono::steady_clock::now();
  server_->Stop();  // the client's kept-alive connection must not hold it up
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_FALSE(server_->running());
  httplib::Result down = MakeClient(*server_)->Get("/api/v1/namespaces/ns/pods/a");
  EXPECT_FALSE(down);

  ASSERT_OK(server_->Restart());
  EXPECT_EQ(server_->port(), port);
  httplib::Result kept = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->status, 200);

  int64_t rv = server_->resource_version();
  ASSERT_OK(server_->Restart(/*keep_state=*/false));
  EXPECT_EQ(server_->port(), port);
  httplib::Result gone = client->Get("/api/v1/namespaces/ns/pods/a");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 404);
  WatchStream w(*server_, absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", rv - 1));
  EXPECT_TRUE(absl::StrContains(w.NextEvent(), R"("reason":"Expired","code":410)"));
}

// serve GETs its own webhook configurations by name (cmd/webhook_guard.h): cluster-scoped,
// stored as loaded, 404 NotFound when absent, each kind under its own plural.
TEST_F(FakeApiServerTest, ServesWebhookConfigurationsByName) {
  ASSERT_OK(server_->Load(
      R"({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration",)"
      R"("metadata":{"name":"gpu-tenancy"},"webhooks":[{"name":"validate.gpu-tenancy.io",)"
      R"("matchConditions":[{"name":"c","expression":"true"}]}]})"));
  auto client = MakeClient(*server_);
  const std::string base = "/apis/admissionregistration.k8s.io/v1/";
  httplib::Result got = client->Get(base + "validatingwebhookconfigurations/gpu-tenancy");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  rapidjson::Document doc = ParseOrDie(got->body);
  EXPECT_EQ(common::StringOr(doc, "kind"), "ValidatingWebhookConfiguration");
  EXPECT_TRUE(absl::StrContains(got->body, R"("expression":"true")")) << got->body;
  httplib::Result other = client->Get(base + "mutatingwebhookconfigurations/gpu-tenancy");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_TRUE(absl::StrContains(other->body, R"("reason":"NotFound")")) << other->body;
  httplib::Result namespaced =
      client->Get(base + "namespaces/x/validatingwebhookconfigurations/gpu-tenancy");
  ASSERT_TRUE(namespaced);
  EXPECT_EQ(namespaced->status, 404);
}

TEST(FakeApiServerClientCertTest, AClientCertificateAuthenticatesWithoutAToken) {
  FakeApiServer::Options options;
  options.require_client_cert = true;
  options.tokens = {"only-this"};
  auto started = FakeApiServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  FakeApiServer& server = **started;
  httplib::SSLClient with_cert("127.0.0.1", server.port(), server.client_cert_file(),
                               server.client_key_file());
  with_cert.set_ca_cert_path(server.ca_file().c_str());
  with_cert.enable_server_certificate_verification(true);
  httplib::Result r = with_cert.Get("/api/v1/nodes");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::vector<RequestRecord> log = server.Requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].client_cn, "client");
  EXPECT_EQ(log[0].token, "");

  auto without_cert = MakeClient(server, "only-this");
  EXPECT_FALSE(without_cert->Get("/api/v1/nodes"));  // the TLS handshake fails
}

TEST_F(FakeApiServerTest, InjectedFailuresComeFirstThenNormalService) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "p")));
  server_->InjectFailure("POST", "/api/v1/namespaces/ns/pods/p/binding", 503, 1);
  auto client = MakeClient(*server_);
  const std::string path = "/api/v1/namespaces/ns/pods/p/binding";
  httplib::Result first = client->Post(path, BindingJson("ns", "p", "n1"), "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 503);
  EXPECT_EQ(first->get_header_value("Retry-After"), "1");
  EXPECT_EQ(Str(ParseOrDie(first->body), "reason"), "ServiceUnavailable");
  httplib::Result second = client->Post(path, BindingJson("ns", "p", "n1"), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 201);
}

// A list, a watch and a read of the same resource are told apart: 410 on lists leaves watches
// and reads alone; the fault ends at its deadline or after its count, and ClearFaults() ends it.
TEST_F(FakeApiServerTest, TimedFailuresHitOnlyTheKindOfRequestTheyTarget) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "p")));
  auto client = MakeClient(*server_);
  using Kind = FakeApiServer::RequestKind;
  const auto later = std::chrono::steady_clock::now() + seconds(60);
  server_->FailRequests({"GET", "/api/v1/pods", Kind::kList}, 410, later);
  httplib::Result list = client->Get("/api/v1/pods?limit=500");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 410);
  EXPECT_EQ(Str(ParseOrDie(list->body), "reason"), "Expired");
  httplib::Result read = client->Get("/api/v1/namespaces/ns/pods/p");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 200) << "reads are not lists";
  WatchStream watch(*server_, "/api/v1/pods?watch=1&resourceVersion=0");
  EXPECT_TRUE(absl::StrContains(watch.NextEvent(), R"("type":"ADDED")")) << "watches stream";

  server_->FailRequests({"", "/api/v1/namespaces/ns/pods/p", Kind::kAny}, 429, later, 2);
  for (int i = 0; i < 2; ++i) {
    httplib::Result throttled = client->Get("/api/v1/namespaces/ns/pods/p");
    ASSERT_TRUE(throttled);
    EXPECT_EQ(throttled->status, 429);
    EXPECT_EQ(throttled->get_header_value("Retry-After"), "1");
  }
  httplib::Result after_count = client->Get("/api/v1/namespaces/ns/pods/p");
  ASSERT_TRUE(after_count);
  EXPECT_EQ(after_count->status, 200) << "the count is spent";

  server_->FailRequests({"", "", Kind::kWrite}, 503, std::chrono::steady_clock::now());
  httplib::Result expired =
      client->Post("/api/v1/namespaces/ns/pods", PodJson("ns", "q"), "application/json");
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->status, 201) << "a fault past its deadline does nothing";
  server_->ClearFaults();
  httplib::Result cleared = client->Get("/api/v1/pods?limit=500");
  ASSERT_TRUE(cleared);
  EXPECT_EQ(cleared->status, 200);
}

// A stalled Binding outlives its client's timeout and lands all the same once the hold ends;
// a stop ends the hold at once.
TEST_F(FakeApiServerTest, StalledRequestsAreServedAfterTheHold) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "p")));
  using Kind = FakeApiServer::RequestKind;
  server_->StallRequests({"POST", "/api/v1/namespaces/ns/pods/p/binding", Kind::kWrite},
                         milliseconds(1500), std::chrono::steady_clock::now() + seconds(60), 1);
  auto impatient = MakeClient(*server_);
  impatient->set_read_timeout(0, 300 * 1000);
  httplib::Result gave_up = impatient->Post("/api/v1/namespaces/ns/pods/p/binding",
                                            BindingJson("ns", "p", "n1"), "application/json");
  EXPECT_FALSE(gave_up) << "the client's timeout is shorter than the hold";
  EXPECT_EQ(server_->GetObject(testing_support::Resource::kPods, "ns", "p").find("n1"),
            std::string::npos)
      << "not bound before the hold ends";
  auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (
      server_->GetObject(testing_support::Resource::kPods, "ns", "p").find(R"("nodeName":"n1")") ==
          std::string::npos &&
      std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_NE(
      server_->GetObject(testing_support::Resource::kPods, "ns", "p").find(R"("nodeName":"n1")"),
      std::string::npos)
      << "the stalled Binding landed after the hold";

  server_->StallRequests({"GET", "", Kind::kRead}, seconds(30),
                         std::chrono::steady_clock::now() + seconds(60));
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(300));
    server_->Stop();
  });
  auto start = std::chrono::steady_clock::now();
  httplib::Result held = MakeClient(*server_)->Get("/api/v1/namespaces/ns/pods/p");
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10)) << "Stop() ends the hold";
  if (held) {
    EXPECT_EQ(held->status, 503);
  }
}

// After the jump a watch or a continue token from before it is 410 Expired; the objects stay.
TEST_F(FakeApiServerTest, AdvancingTheResourceVersionExpiresEarlierVersions) {
  ASSERT_OK(server_->AddPod(PodJson("ns", "p")));
  const int64_t before = server_->resource_version();
  server_->AdvanceResourceVersion(1000);
  EXPECT_EQ(server_->resource_version(), before + 1000);
  WatchStream old(*server_, absl::StrCat("/api/v1/pods?watch=1&resourceVersion=", before));
  EXPECT_TRUE(absl::StrContains(old.NextEvent(), R"("reason":"Expired","code":410)"));
  httplib::Result list = MakeClient(*server_)->Get("/api/v1/pods");
  ASSERT_TRUE(list);
  rapidjson::Document doc = ParseOrDie(list->body);
  EXPECT_EQ(ItemNames(doc), std::vector<std::string>{"p"});
  EXPECT_EQ(Meta(doc, "resourceVersion"), absl::StrCat(before + 1000));
}

}  // namespace
}  // namespace testing_support::apiserver_test
