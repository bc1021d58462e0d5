// A mutex that clang's thread-safety analysis understands (.ci/thread-safety), so the data a
// lock guards is marked ABSL_GUARDED_BY and the compiler, not a reviewer, checks every access.
// absl::Mutex carries the same annotations, but Debian builds abseil without ThreadSanitizer,
// which then cannot see its locks and reports the data they guard as races; this one is a
// std::mutex underneath, whose pthread calls TSan intercepts.
//
//   common::Mutex mu_;
//   std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
//   common::CondVar ready_;
//   ...
//   common::MutexLock lock(&mu_);
//   while (queue_.empty()) ready_.Wait(&mu_);
#ifndef GPU_TENANCY_COMMON_MUTEX_H_
#define GPU_TENANCY_COMMON_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace common {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // True when the lock was free and is now held.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable for a Mutex the caller holds. Waits may wake spuriously: callers loop on
// their condition.
class CondVar {
 public:
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> held(mu->mu_, std::adopt_lock);
    cv_.wait(held);
    held.release();  // the caller's MutexLock still owns it
  }
  // False when `timeout` passed without a notification.
  bool WaitFor(Mutex* mu, std::chrono::milliseconds timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> held(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_for(held, timeout) == std::cv_status::no_timeout;
    held.release();
    return notified;
  }
  // False when `deadline` passed without a notification.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> held(mu->mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(held, deadline) == std::cv_status::no_timeout;
    held.release();
    return notified;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace common

#endif  // GPU_TENANCY_COMMON_MUTEX_H_
