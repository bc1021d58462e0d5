// Test support, part of the kube-apiserver emulation: watch streams over the object store (see
// apiserver_watch.h).
#include "test/support/apiserver_watch.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rapidjson/document.h"
#include "test/support/apiserver_objects.h"
#include "test/support/apiserver_sockets.h"

namespace testing_support::apiserver {
namespace {

std::string EventLine(absl::string_view type, absl::string_view object_json) {
  return absl::StrCat(R"({"type":")", type, R"(","object":)", object_json, "}\n");
}

std::string BookmarkLine(Resource r, int64_t rv, absl::string_view api_version) {
  std::string object = Info(r).bookmark;
  size_t at = object.find("%RV%");
  object.replace(at, 4, absl::StrCat(rv));
  if (size_t av = object.find("%AV%"); av != std::string::npos) {
    object.replace(av, 4, std::string(api_version));
  }
  return EventLine("BOOKMARK", object);
}

}  // namespace

std::optional<Reply> Watch::Configure(const CollectionQuery& query,
                                      std::chrono::seconds default_timeout, int fd) {
  resource_ = query.resource;
  ns_ = query.ns;
  api_version_ = query.api_version;
  absl::StatusOr<Selector> selector =
      ParseSelector(query.resource, query.label_selector, query.field_selector);
  if (!selector.ok()) return BadRequest(selector.status().message());
  selector_ = *std::move(selector);
  bookmarks_ = ParseBool(query.allow_bookmarks);
  int64_t timeout_seconds = 0;
  if (query.timeout_seconds.has_value() &&
      !absl::SimpleAtoi(*query.timeout_seconds, &timeout_seconds)) {
    return BadRequest("timeoutSeconds: invalid value");
  }
  Clock::time_point now = Clock::now();
  deadline_ =
      now +
      (timeout_seconds > 0
           ? std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(timeout_seconds))
           : std::chrono::duration_cast<Clock::duration>(default_timeout));
  last_bookmark_ = now;
  resource_version_ = query.resource_version;
  fd_ = fd;
  return std::nullopt;
}

std::optional<Reply> Watch::Begin(const ObjectStore& store, const WatchControl& control) {
  drop_generation_ = control.drop_generation;
  if (!resource_version_.empty() && resource_version_ != "0") {
    int64_t from = 0;
    if (!absl::SimpleAtoi(resource_version_, &from)) {
      return BadRequest(absl::StrCat("invalid resource version: ", resource_version_));
    }
    if (from < store.compacted()) {
      Reply expired = StatusReply(
          410, "Expired",
          absl::StrCat("too old resource version: ", from, " (", store.compacted(), ")"), nullptr);
      lines_.push_back(EventLine("ERROR", expired.body));
      close_after_lines_ = true;
    }
    cursor_ = from;
    return std::nullopt;
  }
  // "" and "0": the current state as synthetic ADDED events, then changes after it.
  store.ForEachCurrent(resource_, ns_.empty() ? "" : ns_ + "/", [this](const std::string& json) {
    if (MatchesJson(selector_, json)) lines_.push_back(EventLine("ADDED", json));
  });
  cursor_ = store.resource_version();
  return std::nullopt;
}

void Watch::Collect(const ObjectStore& store, std::vector<std::string>* out) {
  const std::vector<WatchEvent>& events = store.events(resource_);
  auto it = std::upper_bound(events.begin(), events.end(), cursor_,
                             [](int64_t rv, const WatchEvent& e) { return rv < e.rv; });
  for (; it != events.end(); ++it) {
    cursor_ = it->rv;
    if (!ns_.empty() && it->ns != ns_) continue;
    if (selector_.empty()) {
      out->push_back(EventLine(it->type, it->json));
      continue;
    }
    bool now = MatchesJson(selector_, it->json);
    if (it->type == "ADDED") {
      if (now) out->push_back(EventLine("ADDED", it->json));
    } else if (it->type == "DELETED") {
      if (now) out->push_back(EventLine("DELETED", it->json));
    } else {
      bool before = MatchesJson(selector_, it->prev_json);
      if (now && before) {
        out->push_back(EventLine("MODIFIED", it->json));
      } else if (now) {
        out->push_back(EventLine("ADDED", it->json));
      } else if (before) {
        rapidjson::Document old;
        old.Parse(it->prev_json.c_str(), it->prev_json.size());
        SetString(EnsureObject(old, "metadata", old.GetAllocator()), "resourceVersion",
                  absl::StrCat(it->rv), old.GetAllocator());
        out->push_back(EventLine("DELETED", ToJson(old)));
      }
    }
  }
}

Watch::Turn Watch::Next(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                        const ObjectStore& store, const WatchControl& control,
                        std::vector<std::string>* lines) {
  while (true) {
    if (control.stopping) return Turn::kAbort;
    if (drop_generation_ != control.drop_generation) {
      return control.drop_graceful ? Turn::kFinish : Turn::kAbort;
    }
    if (PeerClosed(fd_)) return Turn::kAbort;
    if (!lines_.empty()) {
      lines->assign(lines_.begin(), lines_.end());
      lines_.clear();
      if (close_after_lines_) return Turn::kFinish;
      Collect(store, lines);
      return Turn::kMore;
    }
    Collect(store, lines);
    if (!lines->empty()) return Turn::kMore;
    Clock::time_point now = Clock::now();
    if (now >= deadline_) return Turn::kFinish;
    if (bookmarks_ && now - last_bookmark_ >= control.bookmark_interval) {
      // Every event up to the current resourceVersion for this watch was collected above, so
      // it is safe to resume from.
      lines->push_back(BookmarkLine(resource_, store.resource_version(), api_version_));
      cursor_ = std::max(cursor_, store.resource_version());
      last_bookmark_ = now;
      return Turn::kMore;
    }
    cv.wait_for(lock, std::chrono::milliseconds(50));
  }
}

}  // namespace testing_support::apiserver
