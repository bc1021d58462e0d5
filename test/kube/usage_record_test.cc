// ConfigMap records updated with resourceVersion preconditions, against the kube-apiserver
// emulation over HTTPS: created when missing, a stale write refused with 409, twenty racing
// increments all kept (each conflict decided again on the winner's data), a dry run writing
// nothing, and a decision to write nothing leaving the record alone. A record this client wrote
// is updated with one PUT and no GET; another writer in between is read and built on; a
// decision to write nothing is taken on a fresh read only.
#include "kube/usage_record.h"

#include <barrier>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "test/kube/live_test_util.h"
#include "test/support/serve_process.h"

namespace usage_record_test {
namespace {

using testing_support::FakeApiServer;
using testing_support::ParseOrDie;
using testing_support::Resource;

constexpr char kRecordNs[] = "gpu-tenancy-system";
constexpr char kRecordPath[] = "/api/v1/namespaces/gpu-tenancy-system/configmaps/rec";

std::unique_ptr<kube::ApiClient> RecordClient(const FakeApiServer& api) {
  absl::StatusOr<std::unique_ptr<kube::ApiClient>> c =
      kube::ApiClient::Create(kube_test::ConfigFor(api));
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

std::string RecordValue(const FakeApiServer& api, const std::string& key) {
  std::string json = api.GetObject(Resource::kConfigMaps, kRecordNs, "rec");
  if (json.empty()) return "<none>";
  rapidjson::Document doc = ParseOrDie(json);
  const common::JsonValue* data = common::FindNonNull(doc, "data");
  return data ? std::string(common::StringOr(*data, key, "<unset>")) : "<no data>";
}

// Adds one to data["n"].
std::optional<kube::ConfigMapRecords::Data> Increment(const kube::ConfigMapRecords::Data& data) {
  int n = 0;
  if (auto it = data.find("n"); it != data.end()) {
    EXPECT_TRUE(absl::SimpleAtoi(it->second, &n));
  }
  kube::ConfigMapRecords::Data next = data;
  next["n"] = absl::StrCat(n + 1);
  return next;
}

class UsageRecordTest : public testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeApiServer>> api = FakeApiServer::Start({});
    ASSERT_TRUE(api.ok()) << api.status();
    api_ = *std::move(api);
    ASSERT_TRUE(api_->AddNamespace(kRecordNs).ok());
    client_ = RecordClient(*api_);
    ASSERT_NE(client_, nullptr);
  }
  std::unique_ptr<FakeApiServer> api_;
  std::unique_ptr<kube::ApiClient> client_;
};

TEST_F(UsageRecordTest, CreatedWhenMissingThenUpdatedAndAStaleWriteConflicts) {
  kube::ConfigMapRecords records(*client_, kRecordNs);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "1");
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "2");

  // The precondition the records rely on: a PUT naming an old resourceVersion is refused.
  absl::StatusOr<kube::ApiResponse> stale = client_->Put(
      kRecordPath, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rec","namespace":)"
                   R"("gpu-tenancy-system","resourceVersion":"1"},"data":{"n":"99"}})");
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_EQ(stale->status, 409) << stale->body;
  EXPECT_EQ(RecordValue(*api_, "n"), "2");
}

TEST_F(UsageRecordTest, TwentyRacingIncrementsAreAllKept) {
  constexpr int kWriters = 20;
  std::barrier start(kWriters);
  std::vector<absl::Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      // One client per writer, as replicas have: nothing is serialised on our side.
      std::unique_ptr<kube::ApiClient> client = RecordClient(*api_);
      if (!client) return;
      kube::ConfigMapRecords records(*client, kRecordNs, /*max_attempts=*/kWriters + 1);
      start.arrive_and_wait();
      results[i] = records.Update("rec", Increment, /*dry_run=*/false);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(RecordValue(*api_, "n"), absl::StrCat(kWriters));
}

TEST_F(UsageRecordTest, DryRunsAndEmptyDecisionsWriteNothing) {
  kube::ConfigMapRecords records(*client_, kRecordNs);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/true).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "<none>");
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  bool decided = false;
  ASSERT_TRUE(records
                  .Update(
                      "rec",
                      [&](const kube::ConfigMapRecords::Data& data) {
                        decided = true;
                        EXPECT_EQ(data.at("n"), "1");
                        return std::optional<kube::ConfigMapRecords::Data>();
                      },
                      /*dry_run=*/false)
                  .ok());
  EXPECT_TRUE(decided);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/true).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "1");
}

// Another writer's PUT of data["n"] = `n` on top of the current record.
void WriteElsewhere(kube::ApiClient& client, const FakeApiServer& api, int n,
                    const std::string& extra_key = "") {
  rapidjson::Document doc = ParseOrDie(api.GetObject(Resource::kConfigMaps, kRecordNs, "rec"));
  const std::string rv(common::StringOr(doc["metadata"], "resourceVersion"));
  absl::StatusOr<kube::ApiResponse> put = client.Put(
      kRecordPath,
      absl::StrCat(R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rec",)",
                   R"("namespace":"gpu-tenancy-system","resourceVersion":")", rv,
                   R"("},"data":{"n":")", n, "\"",
                   extra_key.empty() ? "" : absl::StrCat(",\"", extra_key, "\":\"yes\""), "}}"));
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_EQ(put->status, 200) << put->body;
}

TEST_F(UsageRecordTest, ARecordWrittenHereIsUpdatedWithOneWriteAndNoRead) {
  kube::ConfigMapRecords records(*client_, kRecordNs);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  api_->ClearRequests();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  }
  EXPECT_EQ(RecordValue(*api_, "n"), "4");
  EXPECT_EQ(api_->CountRequests("GET", kRecordPath), 0);
  EXPECT_EQ(api_->CountRequests("PUT", kRecordPath), 3);
}

TEST_F(UsageRecordTest, AnotherWriterInBetweenIsReadAndBuiltOn) {
  kube::ConfigMapRecords records(*client_, kRecordNs);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  std::unique_ptr<kube::ApiClient> other = RecordClient(*api_);
  ASSERT_NE(other, nullptr);
  WriteElsewhere(*other, *api_, 10);
  api_->ClearRequests();
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "11");
  EXPECT_EQ(api_->CountRequests("PUT", kRecordPath), 2) << "the first one conflicts";
  EXPECT_EQ(api_->CountRequests("GET", kRecordPath), 1);
}

TEST_F(UsageRecordTest, ADecisionToWriteNothingIsTakenOnAFreshRead) {
  kube::ConfigMapRecords records(*client_, kRecordNs);
  ASSERT_TRUE(records.Update("rec", Increment, /*dry_run=*/false).ok());
  // Another replica opens the record; what this client remembers does not show it.
  std::unique_ptr<kube::ApiClient> other = RecordClient(*api_);
  ASSERT_NE(other, nullptr);
  WriteElsewhere(*other, *api_, 5, "open");
  auto only_when_open = [](const kube::ConfigMapRecords::Data& data) {
    return data.contains("open") ? Increment(data) : std::nullopt;
  };
  ASSERT_TRUE(records.Update("rec", only_when_open, /*dry_run=*/false).ok());
  EXPECT_EQ(RecordValue(*api_, "n"), "6");
}

}  // namespace
}  // namespace usage_record_test
