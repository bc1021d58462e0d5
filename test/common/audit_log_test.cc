// common/audit_log and audit_events: one JSON line per event, its action and decision following
// from the event's type and outcome, written whole; failures counted, not fatal.
#include "common/audit_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/json.h"
#include "gtest/gtest.h"

namespace {

using common::AuditLine;
using common::AuditLog;

const absl::Time kAt = absl::FromUnixMillis(1764583200123);  // 2025-12-01T10:00:00.123Z

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FreshPath(const std::string& name) {
  std::string path = absl::StrCat(::testing::TempDir(), "/audit-", getpid(), "-", name);
  ::unlink(path.c_str());
  return path;
}

TEST(AuditLogTest, ABindLineHasEveryFieldItKnowsInOrder) {
  common::BindAudit r;
  r.bound = true;
  r.namespace_name = "acme";
  r.pod = "train-0";
  r.uid = "u-1";
  r.tenant = {"acme", "untrusted"};
  r.node = "gpu-7";
  r.pool = "gpu-mig";
  r.mig_profile = "3g.40gb";
  r.gpu_index = 1;
  EXPECT_EQ(AuditLine(r, kAt),
            R"({"time":"2025-12-01T10:00:00.123Z","action":"bind","decision":"bound",)"
            R"("namespace":"acme","pod":"train-0","uid":"u-1","tenant":"acme",)"
            R"("tier":"untrusted","node":"gpu-7","pool":"gpu-mig","migProfile":"3g.40gb",)"
            R"("gpuIndex":1})"
            "\n");
}

TEST(AuditLogTest, FieldsARecordDoesNotHaveAreLeftOutAndTextIsEscaped) {
  common::AdmissionDenialAudit r;
  r.kind = "Pod";
  r.webhook = common::AdmissionDenialAudit::Webhook::kValidate;
  r.rule = "device-access";
  r.message = "line one\nsays \"privileged\"";
  std::string line = AuditLine(r, kAt);
  EXPECT_EQ(line, R"({"time":"2025-12-01T10:00:00.123Z","action":"admission","decision":"denied",)"
                  R"("kind":"Pod","webhook":"validate","rule":"device-access",)"
                  R"("reason":"line one\nsays \"privileged\""})"
                  "\n");
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line, whatever the reason holds";
  EXPECT_TRUE(common::ParseJson(line).ok());
}

TEST(AuditLogTest, AReconfigureLineNamesTheStepTheConfigAndTheDuration) {
  common::ReconfigureAudit r;
  r.outcome = common::ReconfigureAudit::Outcome::kFailed;
  r.node = "gpu-7";
  r.step = "wait-mig-manager";
  r.mig_config = "all-1g.10gb";
  r.duration_ms = 1002;
  r.reason = "timed out";
  EXPECT_EQ(AuditLine(r, kAt),
            R"({"time":"2025-12-01T10:00:00.123Z","action":"reconfigure","decision":"failed",)"
            R"("node":"gpu-7","step":"wait-mig-manager","migConfig":"all-1g.10gb",)"
            R"("durationMs":1002,"reason":"timed out"})"
            "\n");
}

TEST(AuditLogTest, AClaimLineNamesTheClaimItsDevicesAndItsPods) {
  common::ClaimAudit r;
  r.change = common::ClaimAudit::Change::kAllocated;
  r.namespace_name = "team-a";
  r.claim = "inference-mig";
  r.uid = "u-2";
  r.tenant = {"team-a", "trusted"};
  r.node = "node-a";
  r.devices = {{"gpu.nvidia.com/node-a/gpu-0-mig-1g10gb-19-0", "mig", "MIG-4d80", "1g.10gb"},
               {"gpu.nvidia.com/node-a/gpu-9", "", "", ""}};
  r.reserved_for = {"inference", "sidecar"};
  std::string line = AuditLine(r, kAt);
  EXPECT_EQ(line,
            R"({"time":"2025-12-01T10:00:00.123Z","action":"claim","decision":"allocated",)"
            R"("kind":"ResourceClaim","namespace":"team-a","claim":"inference-mig","uid":"u-2",)"
            R"("tenant":"team-a","tier":"trusted","node":"node-a","devices":[)"
            R"({"device":"gpu.nvidia.com/node-a/gpu-0-mig-1g10gb-19-0","type":"mig",)"
            R"("uuid":"MIG-4d80","migProfile":"1g.10gb"},)"
            R"({"device":"gpu.nvidia.com/node-a/gpu-9"}],"reservedFor":["inference","sidecar"]})"
            "\n");
  EXPECT_TRUE(common::ParseJson(line).ok());
}

TEST(AuditLogTest, EachEventNamesItsActionAndDecision) {
  using common::AuditEvent;
  struct Row {
    AuditEvent event;
    std::string action, decision, reason;
  };
  common::BindAudit bound;
  bound.bound = true;
  common::AdmissionDenialAudit mutate;
  mutate.webhook = common::AdmissionDenialAudit::Webhook::kMutate;
  common::ClaimAudit removed, deleted;
  removed.change = common::ClaimAudit::Change::kAllocationRemoved;
  deleted.change = common::ClaimAudit::Change::kClaimDeleted;
  common::PreemptAudit dropped;
  dropped.outcome = common::PreemptAudit::Outcome::kDropped;
  common::ReconfigureAudit planned;
  planned.outcome = common::ReconfigureAudit::Outcome::kPlanned;
  const std::vector<Row> rows = {
      {bound, "bind", "bound", ""},
      {common::BindAudit{}, "bind", "failed", ""},
      {mutate, "admission", "denied", ""},
      {common::ClaimAudit{}, "claim", "allocated", ""},
      {removed, "claim", "released", "allocation removed"},
      {deleted, "claim", "released", "claim deleted"},
      {common::PreemptAudit{}, "preempt", "changed", ""},
      {dropped, "preempt", "dropped", ""},
      {common::ReconfigureAudit{}, "reconfigure", "ok", ""},
      {planned, "reconfigure", "planned", ""},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(absl::StrCat(row.action, " ", row.decision));
    absl::StatusOr<rapidjson::Document> line = common::ParseJson(AuditLine(row.event, kAt));
    ASSERT_TRUE(line.ok()) << line.status();
    EXPECT_EQ(common::StringOr(*line, "action"), row.action);
    EXPECT_EQ(common::StringOr(*line, "decision"), row.decision);
    EXPECT_EQ(common::StringOr(*line, "reason"), row.reason);
  }
  EXPECT_EQ(common::StringOr(*common::ParseJson(AuditLine(mutate, kAt)), "webhook"), "mutate");
}

TEST(AuditLogTest, AppendsLinesToAFileOnlyItsOwnerAndGroupRead) {
  std::string path = FreshPath("append");
  {
    absl::StatusOr<std::unique_ptr<AuditLog>> log = AuditLog::Open(path);
    ASSERT_TRUE(log.ok()) << log.status();
    common::BindAudit r;
    r.error = "first";
    (*log)->Write(r);
    EXPECT_EQ((*log)->records(), 1u);
  }
  {
    absl::StatusOr<std::unique_ptr<AuditLog>> again = AuditLog::Open(path);  // after a restart
    ASSERT_TRUE(again.ok()) << again.status();
    common::BindAudit r;
    r.error = "second";
    (*again)->Write(r);
  }
  std::vector<std::string> lines = absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("\"reason\":\"first\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"reason\":\"second\""), std::string::npos) << lines[1];
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0007, 0u) << "not readable by others";
  ::unlink(path.c_str());
}

TEST(AuditLogTest, ConcurrentWritersNeverInterleaveLines) {
  std::string path = FreshPath("concurrent");
  absl::StatusOr<std::unique_ptr<AuditLog>> log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  constexpr int kThreads = 4, kEach = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        common::BindAudit r;
        r.pod = absl::StrCat("pod-", t, "-", i);
        r.error = std::string(300, static_cast<char>('a' + t));
        (*log)->Write(r);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ((*log)->records(), static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ((*log)->write_errors(), 0u);
  std::vector<std::string> lines = absl::StrSplit(ReadAll(path), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kEach));
  for (const std::string& line : lines) ASSERT_TRUE(common::ParseJson(line).ok()) << line;
  ::unlink(path.c_str());
}

TEST(AuditLogTest, AFailedWriteIsCountedNotFatal) {
  absl::StatusOr<std::unique_ptr<AuditLog>> full = AuditLog::Open("/dev/full");
  ASSERT_TRUE(full.ok()) << full.status();
  (*full)->Write(common::BindAudit{});
  EXPECT_EQ((*full)->records(), 0u);
  EXPECT_EQ((*full)->write_errors(), 1u);
}

TEST(AuditLogTest, AnUnopenablePathIsAClearError) {
  absl::StatusOr<std::unique_ptr<AuditLog>> log = AuditLog::Open("/nonexistent-dir/audit.log");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log.status().message(),
            "audit log /nonexistent-dir/audit.log: No such file or directory");
}

}  // namespace
