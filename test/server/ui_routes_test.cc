// The /ui/ routes over a real plain-HTTP listener: the query's input reaches the plan handler
// decoded, refusals are 400 with the reason, the map exists only when it is given, and the
// embedded pages are served with their content types.
#include "server/ui_routes.h"

#include <map>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "httplib.h"
#include "server/listener.h"

namespace server {
namespace {

TEST(QueryValueTest, DecodesPercentEscapesAndPlus) {
  EXPECT_EQ(QueryValue("input=fleet%3A%20%5B%5D", "input"), "fleet: []");
  EXPECT_EQ(QueryValue("x=1&input=a+b%2Bc", "input"), "a b+c");
  EXPECT_EQ(QueryValue("input=", "input"), "");
  EXPECT_EQ(QueryValue("input", "input"), "");
  EXPECT_EQ(QueryValue("inputs=1", "input"), std::nullopt);
  EXPECT_EQ(QueryValue("", "input"), std::nullopt);
  EXPECT_EQ(QueryValue("input=%zz", "input"), std::nullopt);
  EXPECT_EQ(QueryValue("input=%4", "input"), std::nullopt);
  EXPECT_EQ(QueryValue("input=abc%", "input"), std::nullopt);
}

class UiRoutesTest : public testing::Test {
 protected:
  void Serve(bool with_map) {
    UiHandlers h;
    h.catalog = [] { return std::string(R"({"models":[]})"); };
    h.plan = [this](absl::string_view input) -> absl::StatusOr<std::string> {
      last_input_ = std::string(input);
      if (input == "bad") return absl::InvalidArgumentError("workloads[0].trust: unknown value");
      return std::string(R"({"summary":{}})");
    };
    if (with_map) h.map = [] { return std::string(R"({"nodes":[]})"); };
    OperatorPortOptions at;
    at.host = "127.0.0.1";
    at.port = 0;
    absl::StatusOr<std::unique_ptr<Listener>> l =
        Listener::BindOperatorPort(std::move(at), UiRoutes(std::move(h)));
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = *std::move(l);
    listener_->Start();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", listener_->operator_port());
  }
  void TearDown() override {
    if (listener_) listener_->Stop();
  }

  std::unique_ptr<Listener> listener_;
  std::unique_ptr<httplib::Client> client_;
  std::string last_input_;
};

TEST_F(UiRoutesTest, PlanGetsTheDecodedInputAndRefusalsAre400WithTheReason) {
  Serve(/*with_map=*/false);
  httplib::Result ok = client_->Get("/ui/api/plan?input=fleet%3A%0A%20%20-%20node%3A%20a");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(ok->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(ok->body, R"({"summary":{}})");
  EXPECT_EQ(last_input_, "fleet:\n  - node: a");

  httplib::Result refused = client_->Get("/ui/api/plan?input=bad");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_EQ(refused->body, R"({"error":"workloads[0].trust: unknown value"})");

  httplib::Result missing = client_->Get("/ui/api/plan");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 400);
  EXPECT_EQ(missing->body, R"({"error":"input: missing or not percent-encoded"})");
  httplib::Result empty = client_->Get("/ui/api/plan?input=");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  EXPECT_EQ(empty->body, R"({"error":"input: empty"})");
  httplib::Result malformed = client_->Get("/ui/api/plan?input=%G0");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
}

TEST_F(UiRoutesTest, TheMapIsThereOnlyWhenGiven) {
  Serve(/*with_map=*/false);
  httplib::Result none = client_->Get("/ui/api/map");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  httplib::Result catalog = client_->Get("/ui/api/catalog");
  ASSERT_TRUE(catalog);
  EXPECT_EQ(catalog->status, 200);
  EXPECT_EQ(catalog->body, R"({"models":[]})");
  listener_->Stop();

  Serve(/*with_map=*/true);
  httplib::Result map = client_->Get("/ui/api/map");
  ASSERT_TRUE(map);
  EXPECT_EQ(map->status, 200);
  EXPECT_EQ(map->body, R"({"nodes":[]})");
}

TEST_F(UiRoutesTest, EmbeddedPagesAreServedWithTheirContentTypes) {
  Serve(/*with_map=*/false);
  for (const WebFile& file : EmbeddedWebFiles()) {
    httplib::Result page = client_->Get("/ui/" + file.name);
    ASSERT_TRUE(page) << file.name;
    EXPECT_EQ(page->status, 200) << file.name;
    EXPECT_EQ(page->body, std::string(file.content)) << file.name;
    const std::string type = page->get_header_value("Content-Type");
    const std::string extension = file.name.substr(file.name.rfind('.') + 1);
    const std::map<std::string, std::string> types = {{"html", "text/html; charset=utf-8"},
                                                      {"js", "text/javascript; charset=utf-8"},
                                                      {"css", "text/css; charset=utf-8"}};
    ASSERT_EQ(types.count(extension), 1u) << file.name;
    EXPECT_EQ(type, types.at(extension)) << file.name;
    if (file.name == "index.html") {
      httplib::Result root = client_->Get("/ui/");
      ASSERT_TRUE(root);
      EXPECT_EQ(root->body, page->body);
    }
  }
  httplib::Result unknown = client_->Get("/ui/nope.js");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

}  // namespace
}  // namespace server
