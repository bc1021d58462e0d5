// Posts Kubernetes Events (core/v1) about pods, so `kubectl describe pod` tells what the
// extender did. Posting happens on a background thread from a bounded queue: an event is never
// worth delaying a bind, and when the API server is slow the oldest pending events are dropped.
#ifndef GPU_TENANCY_KUBE_EVENT_RECORDER_H_
#define GPU_TENANCY_KUBE_EVENT_RECORDER_H_

#include <atomic>
#include <deque>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "common/mutex.h"
#include "kube/api.h"
#include "kube/objects.h"

namespace kube {

class EventRecorder {
 public:
  explicit EventRecorder(Api& client, size_t max_pending = 1000);
  ~EventRecorder();  // posts what is queued (briefly), then stops

  void Record(PodEvent event);
  uint64_t posted() const { return posted_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  void Run();

  Api& client_;
  size_t max_pending_;
  // Guards the queue and the stop request; cv_ tells the posting thread either changed. Never
  // held across a POST. The counters are atomics.
  common::Mutex mu_;
  common::CondVar cv_;
  std::deque<PodEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> posted_{0};
  std::atomic<uint64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_EVENT_RECORDER_H_
