#include "kube/event_recorder.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "kube/objects.h"

namespace kube {

EventRecorder::EventRecorder(Api& client, size_t max_pending)
    : client_(client), max_pending_(max_pending) {
  thread_ = std::thread([this] { Run(); });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::Record(PodEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= max_pending_) {
      queue_.pop_front();
      dropped_.fetch_add(1);
    }
    queue_.push_back(std::move(event));
  }
  cv_.notify_one();
}

void EventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    PodEvent event = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::StatusOr<ApiResponse> r =
        client_.Post(absl::StrCat("/api/v1/namespaces/", event.pod_namespace, "/events"),
                     EventJson(event, absl::Now()));
    if (r.ok() && (r->status == 201 || r->status == 200)) {
      posted_.fetch_add(1);
    } else {
      dropped_.fetch_add(1);
      common::Log(common::LogLevel::kDebug, "event not posted",
                  {{"pod", event.pod_name},
                   {"error", r.ok() ? DescribeError(*r) : std::string(r.status().message())}});
    }
    lock.lock();
    if (stop_ && queue_.empty()) return;
  }
}

}  // namespace kube
