#include "kube/event_recorder.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "kube/objects.h"

namespace kube {

EventRecorder::EventRecorder(Api& client, size_t max_pending)
    : client_(client), max_pending_(max_pending) {
  thread_ = std::thread([this] {
    common::NameThisThread("events");
    Run();
  });
}

EventRecorder::~EventRecorder() {
  {
    common::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
}

void EventRecorder::Record(PodEvent event) {
  {
    common::MutexLock lock(&mu_);
    if (queue_.size() >= max_pending_) {
      queue_.pop_front();
      dropped_.fetch_add(1);
    }
    queue_.push_back(std::move(event));
  }
  cv_.NotifyOne();
}

void EventRecorder::Run() {
  while (true) {
    PodEvent event;
    {
      common::MutexLock lock(&mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping with nothing left
      event = std::move(queue_.front());
      queue_.pop_front();
    }
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
  }
}

}  // namespace kube
