// kube::EventRecorder's calls, over the in-memory Api: each Event is one POST of EventJson to
// the events of the pod's namespace, a refusal or a transport failure counts as dropped, and
// what is queued when the recorder goes is still posted. event_recorder_test.cc covers the
// bounded queue against the HTTPS emulation.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "gtest/gtest.h"
#include "kube/event_recorder.h"
#include "test/support/in_memory_api.h"

namespace {

using testing_support::InMemoryApi;

kube::PodEvent RecorderEvent(const std::string& ns, const std::string& pod) {
  return kube::PodEvent{ns, pod, "uid-" + pod, false, "GpuTenancyBound", "Bound " + pod};
}

// Polls until the recorder has handled `n` events: posting happens on its own thread.
bool AwaitHandled(const kube::EventRecorder& recorder, uint64_t n) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (recorder.posted() + recorder.dropped() < n) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(EventRecorderCallsTest, EachEventIsOnePostToItsPodsNamespace) {
  InMemoryApi api;
  kube::EventRecorder recorder(api);
  recorder.Record(RecorderEvent("team", "a"));
  recorder.Record(RecorderEvent("other", "b"));
  ASSERT_TRUE(AwaitHandled(recorder, 2));
  EXPECT_EQ(recorder.posted(), 2u);
  EXPECT_EQ(recorder.dropped(), 0u);
  std::vector<InMemoryApi::Call> calls = api.Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/team/events");
  EXPECT_EQ(calls[1].path, "/api/v1/namespaces/other/events");
  for (const InMemoryApi::Call& call : calls) {
    SCOPED_TRACE(call.path);
    EXPECT_EQ(call.method, "POST");
    EXPECT_EQ(call.content_type, "application/json");
    absl::StatusOr<rapidjson::Document> event = common::ParseJson(call.body);
    ASSERT_TRUE(event.ok()) << call.body;
    EXPECT_EQ(common::StringOr(*event, "kind"), "Event");
    EXPECT_EQ(common::StringOr(*event, "type"), "Normal");
    const common::JsonValue* involved = common::FindMember(*event, "involvedObject");
    ASSERT_NE(involved, nullptr);
    EXPECT_EQ(common::StringOr(*involved, "kind"), "Pod");
  }
}

TEST(EventRecorderCallsTest, ARefusalOrATransportFailureIsDropped) {
  InMemoryApi api;
  api.Reply("POST", "/api/v1/namespaces/team/events", 403);
  api.Fail("POST", "/api/v1/namespaces/team/events");
  kube::EventRecorder recorder(api);
  for (const char* pod : {"refused", "unreachable", "posted"}) {
    recorder.Record(RecorderEvent("team", pod));
  }
  ASSERT_TRUE(AwaitHandled(recorder, 3));
  EXPECT_EQ(recorder.posted(), 1u);
  EXPECT_EQ(recorder.dropped(), 2u);
  EXPECT_EQ(api.Calls().size(), 3u);
}

TEST(EventRecorderCallsTest, WhatIsQueuedIsPostedBeforeTheRecorderGoes) {
  InMemoryApi api;
  {
    kube::EventRecorder recorder(api);
    for (int i = 0; i < 20; ++i) recorder.Record(RecorderEvent("team", "p" + std::to_string(i)));
  }
  EXPECT_EQ(api.Calls("POST", "/api/v1/namespaces/team/events").size(), 20u);
}

}  // namespace
