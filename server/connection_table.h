// Which connections the TLS listener holds, grouped by peer address, and which ones it gives up
// when a limit is reached. Pure bookkeeping: no sockets, no locks (the listener calls it from
// its one loop thread), and no clock of its own: the listener passes the time in.
//
// A connection is either evictable (waiting for a request, or still receiving one) or busy (a
// request in flight: handler running or reply being written). Evictable connections are kept
// oldest first, by the moment they last became evictable or began a request, so a keep-alive
// caller that sent a request a moment ago is the last to go and a client that connected and
// went quiet, or has been dripping one request for seconds, is the first. Busy connections are
// never evicted: whatever is queued or running is finished.
//
// Closing an idle keep-alive connection races its caller, who may be sending a request on it
// at that moment (a Go client does not retry a POST that fails so). Go's pool hands out the
// connection used last, so the one idle longest is the least likely to be picked: at the total
// limit the table passes over a peer whose oldest connection went idle less than
// Limits::settled ago when another peer has something older or never used to give up.
//
//   ConnectionTable table({.total = 20000, .per_peer = 1024});
//   ConnectionTable::Admission a = table.Admit(id, "10.0.0.7");
//   for (const auto& e : a.evict) Close(e.id, e.reason);
//   if (!a.admitted) Close(id, ...);
#ifndef GPU_TENANCY_SERVER_CONNECTION_TABLE_H_
#define GPU_TENANCY_SERVER_CONNECTION_TABLE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/strings/string_view.h"

namespace server {

class ConnectionTable {
 public:
  using Id = uint64_t;
  using Time = std::chrono::steady_clock::time_point;
  struct Limits {
    size_t total = 20000;
    size_t per_peer = 1024;
    // An idle connection is "settled" once it has been idle this long: longer than a busy
    // caller pauses between requests, so its caller is unlikely to be reusing it right now.
    std::chrono::milliseconds settled{10000};
  };
  enum class EvictReason { kPerPeerLimit, kTotalLimit };
  struct Eviction {
    Id id;
    EvictReason reason;
    bool idle = false;  // waiting for its next request (MarkIdle): its caller may reuse it
  };
  struct Admission {
    bool admitted = false;
    std::vector<Eviction> evict;  // close these (they are already forgotten here)
  };

  explicit ConnectionTable(Limits limits);

  // A new connection `id` from `peer`, which starts evictable (it has sent nothing yet). When
  // `peer` is at its limit, its oldest evictable connection makes room; when the table is full,
  // the oldest evictable connection of the peer holding the most does, unless that one went
  // idle less than Limits::settled before `now` and one of the next few peers by count has an
  // oldest that is settled or not idle. When no connection can make room, the newcomer is
  // refused (and not recorded).
  Admission Admit(Id id, absl::string_view peer, Time now = {});
  // `id` waits for its first request or has just begun one: evictable, and now the newest.
  void MarkEvictable(Id id);
  // `id` waits for its next request after a reply, since `now`: evictable, now the newest,
  // and a connection its caller may pick up again at any moment.
  void MarkIdle(Id id, Time now);
  // `id` has a request in flight: not evictable until marked so again.
  void MarkBusy(Id id);
  // `id` is closed. Unknown ids are ignored (an evicted connection is forgotten at eviction).
  void Remove(Id id);

  size_t size() const { return entries_.size(); }
  size_t peer_count(absl::string_view peer) const;
  size_t peers() const { return peers_.size(); }

 private:
  struct Peer {
    size_t count = 0;
    std::list<Id> evictable;  // oldest first
  };
  struct Entry {
    const std::string* key;  // both point into peers_, whose nodes do not move
    Peer* peer;
    bool evictable = false;
    bool idle = false;  // evictable since MarkIdle, at idle_since
    Time idle_since;
    std::list<Id>::iterator position;  // in peer->evictable while evictable
  };
  // Peers by how many connections they hold, most first.
  using ByCount = std::set<std::pair<size_t, const std::string*>, std::greater<>>;

  void Unlink(Entry& e);
  // Drops the entry and, when it was its peer's last, the peer.
  void Forget(absl::flat_hash_map<Id, Entry>::iterator it);
  void Recount(const std::string* key, Peer& peer, size_t new_count);
  // Evicts the oldest evictable connection of `peer`; false when it has none.
  bool EvictOldest(Peer& peer, EvictReason reason, Admission& out);
  // The peer that gives up a connection at the total limit; null when every one is busy.
  Peer* TotalLimitVictim(Time now);
  // Whether `peer`'s oldest evictable connection went idle less than Limits::settled ago.
  bool OldestIsFreshIdle(const Peer& peer, Time now) const;
  void Append(Entry& e, Id id);

  Limits limits_;
  absl::flat_hash_map<Id, Entry> entries_;
  absl::node_hash_map<std::string, Peer> peers_;
  ByCount by_count_;
};

}  // namespace server

#endif  // GPU_TENANCY_SERVER_CONNECTION_TABLE_H_
