#include "kube/reflector.h"

#include <malloc.h>

#include <random>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace kube {
namespace {

// Hands the heap pages freed by a list back to the kernel (glibc's malloc). One call at a time:
// when nothing has allocated through glibc's malloc yet (jemalloc builds, ASan, TSan), the first
// malloc_trim sets its arena up, and glibc marks it ready before filling it in, so a second
// reflector trimming at that moment walked empty bins and crashed (seen under ASan, with the DRA
// reflectors listing together, and with jemalloc in 118 of 300 runs of eight first trims at
// once).
void TrimHeap() {
  ABSL_CONST_INIT static common::Mutex mu;  // guards no variable: the trim itself
  common::MutexLock lock(&mu);
  malloc_trim(0);
}

std::string ResourceVersionOf(const common::JsonValue& object) {
  const common::JsonValue* meta = common::FindMember(object, "metadata");
  return meta ? std::string(common::StringOr(*meta, "resourceVersion")) : std::string();
}

// Full jitter: a uniform wait in [d/2, d], so replicas restarting together spread out.
std::chrono::milliseconds Jitter(std::chrono::milliseconds d) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int64_t> dist(d.count() / 2, std::max<int64_t>(1, d.count()));
  return std::chrono::milliseconds(dist(rng));
}

// List pages are the largest transient memory the service uses (a 500-pod page is around a
// megabyte of text and twice that parsed). Their pools take chunks this big, which malloc maps
// from the kernel and unmaps when the page is dropped (with the fixed mmap threshold set in
// cmd/main.cc), instead of leaving megabytes of freed chunks in a thread's heap after every relist.
constexpr size_t kListChunkBytes = 1 << 20;

// Watch events (one object each, a few KiB for a pod) are parsed into one buffer this big that
// the reflector keeps, instead of a fresh 64 KiB pool chunk taken and dropped per event on this
// thread, between the long-lived allocations the same events make. A larger event spills into
// list-sized chunks, which are mapped and unmapped as a list page's are.
constexpr size_t kEventBufferBytes = 64 << 10;

struct ListPage {
  std::unique_ptr<rapidjson::MemoryPoolAllocator<>> pool;
  rapidjson::Document doc;  // lives in *pool
};

}  // namespace

Reflector::Reflector(Api& client, std::string path, ReflectorHandler handler,
                     ReflectorOptions options)
    : client_(client),
      path_(std::move(path)),
      handler_(std::move(handler)),
      options_(options),
      event_buffer_(std::make_unique<char[]>(kEventBufferBytes)) {}

Reflector::~Reflector() { Stop(); }

void Reflector::Start() {
  thread_ = std::thread([this] {
    // "w-pods", "w-claims": the watched resource, the path's last segment, resource.k8s.io's
    // kinds without their common prefix (a name keeps 15 bytes).
    absl::string_view resource = path_;
    resource = resource.substr(0, resource.find('?'));
    resource = resource.substr(resource.rfind('/') + 1);
    absl::ConsumePrefix(&resource, "resource");
    common::NameThisThread(absl::StrCat("w-", resource));
    Run();
  });
}

void Reflector::Stop() {
  stop_.store(true);
  stream_.Cancel();
  {
    common::MutexLock lock(&sleep_mu_);  // so a backoff Sleep() cannot miss it
  }
  sleep_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

uint64_t Reflector::RequestRelist() {
  uint64_t ticket = lists_begun_.load();
  relist_requested_.store(true);
  stream_.Interrupt();
  {
    common::MutexLock lock(&sleep_mu_);  // so a backoff Sleep() cannot miss it
  }
  sleep_cv_.NotifyAll();
  return ticket;
}

void Reflector::Sleep(std::chrono::milliseconds d) {
  common::MutexLock lock(&sleep_mu_);
  options_.clock->WaitFor(&sleep_mu_, &sleep_cv_, d,
                          [this] { return stop_.load() || relist_requested_.load(); });
}

bool Reflector::ListAll() {
  const uint64_t number = ++lists_begun_;
  if (list_begins_) list_begins_();
  std::vector<ListPage> pages;
  std::string continue_token;
  std::string version;
  do {
    std::string url = absl::StrCat(path_, "?limit=", options_.page_size);
    if (!continue_token.empty()) absl::StrAppend(&url, "&continue=", continue_token);
    absl::StatusOr<ApiResponse> r = client_.Get(url);
    if (!r.ok() || r->status != 200) {
      common::Log(common::LogLevel::kWarn, "list failed",
                  {{"path", path_},
                   {"error", r.ok() ? DescribeError(*r) : std::string(r.status().message())}});
      return false;
    }
    auto pool = std::make_unique<rapidjson::MemoryPoolAllocator<>>(kListChunkBytes);
    absl::StatusOr<rapidjson::Document> doc = common::ParseJsonInPlace(r->body, pool.get());
    r->body = std::string();  // the page text is copied into the pool
    if (!doc.ok() || !doc->IsObject()) {
      common::Log(common::LogLevel::kWarn, "list reply is not a JSON object", {{"path", path_}});
      return false;
    }
    const common::JsonValue* meta = common::FindMember(*doc, "metadata");
    continue_token = meta ? std::string(common::StringOr(*meta, "continue")) : std::string();
    // The first page's resourceVersion is the list's consistent snapshot version.
    if (version.empty() && meta) version = std::string(common::StringOr(*meta, "resourceVersion"));
    pages.push_back(ListPage{std::move(pool), *std::move(doc)});
  } while (!continue_token.empty() && !stop_.load());
  if (stop_.load()) return false;
  std::vector<const common::JsonValue*> items;
  for (const ListPage& page : pages) {
    const common::JsonValue* list = common::FindNonNull(page.doc, "items");
    if (!list || !list->IsArray()) continue;
    for (const auto& item : list->GetArray()) items.push_back(&item);
  }
  handler_.replace(items);
  resource_version_ = version;
  counters_.lists.fetch_add(1);
  next_resync_ = options_.clock->Now() + options_.resync;
  applied_list_.store(number);
  synced_.store(true);
  return true;
}

Reflector::WatchEnd Reflector::WatchOnce() {
  const auto left = next_resync_ - options_.clock->Now();
  if (left <= left.zero()) return WatchEnd::kRelist;
  // Rounded up: the watch may end a little after the resync is due, never before it, so a
  // resync is not taken for a broken watch and a resync under a second still watches.
  const auto remaining = std::chrono::ceil<std::chrono::seconds>(left);
  int timeout =
      static_cast<int>(std::min<int64_t>(options_.watch_timeout_seconds, remaining.count()));
  std::string url =
      absl::StrCat(path_, "?watch=1&allowWatchBookmarks=true&resourceVersion=", resource_version_,
                   "&timeoutSeconds=", std::max(1, timeout));
  counters_.watches.fetch_add(1);
  WatchEnd end = WatchEnd::kRewatch;
  uint64_t delivered = 0;
  absl::StatusOr<int> status = client_.StreamLines(
      url,
      [&](absl::string_view line) {
        if (stop_.load()) {
          end = WatchEnd::kStopped;
          return false;
        }
        if (relist_requested_.load()) {
          end = WatchEnd::kRelist;
          return false;
        }
        rapidjson::MemoryPoolAllocator<> pool(event_buffer_.get(), kEventBufferBytes,
                                              kListChunkBytes);
        absl::StatusOr<rapidjson::Document> event = common::ParseJsonInPlace(line, &pool);
        if (!event.ok() || !event->IsObject()) {
          common::Log(common::LogLevel::kWarn, "unreadable watch line", {{"path", path_}});
          end = WatchEnd::kBackoff;
          return false;
        }
        absl::string_view type = common::StringOr(*event, "type");
        const common::JsonValue* object = common::FindNonNull(*event, "object");
        if (!object) {
          // A non-200 body (a Status) arrives here as one line.
          int code = 0;
          if (const common::JsonValue* c = common::FindMember(*event, "code"); c && c->IsInt())
            code = c->GetInt();
          end = code == 410 ? WatchEnd::kRelist : WatchEnd::kBackoff;
          return false;
        }
        if (type == "ERROR") {
          const common::JsonValue* code = common::FindMember(*object, "code");
          bool gone = code && code->IsInt() && code->GetInt() == 410;
          common::Log(gone ? common::LogLevel::kInfo : common::LogLevel::kWarn, "watch error",
                      {{"path", path_}, {"message", common::StringOr(*object, "message")}});
          end = gone ? WatchEnd::kRelist : WatchEnd::kBackoff;
          return false;
        }
        std::string version = ResourceVersionOf(*object);
        if (type != "BOOKMARK") {
          handler_.event(type, *object);
          counters_.events.fetch_add(1);
          ++delivered;
        }
        if (!version.empty()) resource_version_ = version;
        if (options_.clock->Now() >= next_resync_) {
          end = WatchEnd::kRelist;
          return false;
        }
        return true;
      },
      &stream_, options_.read_timeout_seconds);
  if (stop_.load()) return WatchEnd::kStopped;
  if (relist_requested_.load()) return WatchEnd::kRelist;  // Run() lists at once
  // An interruption meant for a relist that has already happened: just watch again.
  if (status.status().code() == absl::StatusCode::kAborted) return WatchEnd::kRewatch;
  if (!status.ok()) {
    common::Log(common::LogLevel::kWarn, "watch connection lost",
                {{"path", path_}, {"error", status.status().message()}});
    return WatchEnd::kBackoff;
  }
  if (*status == 410) return WatchEnd::kRelist;
  if (*status != 200) {
    common::Log(common::LogLevel::kWarn, "watch refused",
                {{"path", path_}, {"status", absl::StrCat(*status)}});
    return WatchEnd::kBackoff;
  }
  (void)delivered;
  return end;
}

void Reflector::Run() {
  std::chrono::milliseconds backoff = options_.backoff_initial;
  bool need_list = true;
  while (!stop_.load()) {
    if (relist_requested_.exchange(false)) need_list = true;
    if (need_list) {
      const bool listed = ListAll();
      // The list's pages and the facts built from them are gone now: hand the heap pages they
      // freed back to the kernel, or each relist leaves the process a little larger.
      TrimHeap();
      if (!listed) {
        if (stop_.load()) break;
        Sleep(Jitter(backoff));
        backoff = std::min(backoff * 2, options_.backoff_max);
        continue;
      }
      need_list = false;
      backoff = options_.backoff_initial;
    }
    auto started = options_.clock->Now();
    WatchEnd end = WatchOnce();
    switch (end) {
      case WatchEnd::kStopped:
        return;
      case WatchEnd::kRelist:
        need_list = true;
        if (options_.clock->Now() < next_resync_ && !relist_requested_.load()) {
          counters_.watch_restarts.fetch_add(1);
        }
        break;
      case WatchEnd::kRewatch:
        backoff = options_.backoff_initial;
        break;
      case WatchEnd::kBackoff:
        counters_.watch_restarts.fetch_add(1);
        // A watch that ran a while before failing was healthy: start the backoff over.
        if (options_.clock->Now() - started > std::chrono::seconds(10)) {
          backoff = options_.backoff_initial;
        }
        Sleep(Jitter(backoff));
        backoff = std::min(backoff * 2, options_.backoff_max);
        break;
    }
  }
}

}  // namespace kube
