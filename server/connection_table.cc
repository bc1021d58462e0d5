#include "server/connection_table.h"

namespace server {

namespace {

// At the total limit, how many peers whose oldest connection is freshly idle the search for a
// settled one passes over before it settles for today's choice, so a crowd of addresses each
// holding one fresh connection cannot make every admission walk the whole table.
constexpr size_t kFreshPeersPassedOver = 8;

}  // namespace

ConnectionTable::ConnectionTable(Limits limits) : limits_(limits) {
  if (limits_.total == 0) limits_.total = 1;
  if (limits_.per_peer == 0) limits_.per_peer = 1;
}

size_t ConnectionTable::peer_count(absl::string_view peer) const {
  auto it = peers_.find(peer);
  return it == peers_.end() ? 0 : it->second.count;
}

void ConnectionTable::Recount(const std::string* key, Peer& peer, size_t new_count) {
  if (peer.count > 0) by_count_.erase({peer.count, key});
  peer.count = new_count;
  if (new_count > 0) by_count_.insert({new_count, key});
}

void ConnectionTable::Unlink(Entry& e) {
  if (!e.evictable) return;
  e.peer->evictable.erase(e.position);
  e.evictable = false;
  e.idle = false;
}

void ConnectionTable::Append(Entry& e, Id id) {
  Unlink(e);
  e.position = e.peer->evictable.insert(e.peer->evictable.end(), id);
  e.evictable = true;
}

void ConnectionTable::Forget(absl::flat_hash_map<Id, Entry>::iterator it) {
  Entry& e = it->second;
  Unlink(e);
  const std::string* key = e.key;
  Peer& peer = *e.peer;
  entries_.erase(it);
  Recount(key, peer, peer.count - 1);
  if (peer.count == 0) peers_.erase(*key);
}

bool ConnectionTable::EvictOldest(Peer& peer, EvictReason reason, Admission& out) {
  if (peer.evictable.empty()) return false;
  Id victim = peer.evictable.front();
  auto it = entries_.find(victim);
  out.evict.push_back({victim, reason, it->second.idle});
  Forget(it);
  return true;
}

bool ConnectionTable::OldestIsFreshIdle(const Peer& peer, Time now) const {
  const Entry& e = entries_.find(peer.evictable.front())->second;
  return e.idle && now - e.idle_since < limits_.settled;
}

ConnectionTable::Peer* ConnectionTable::TotalLimitVictim(Time now) {
  Peer* biggest = nullptr;  // today's choice: the biggest holder with anything to give up
  size_t passed_over = 0;
  for (const auto& [count, key] : by_count_) {
    Peer& peer = peers_.find(*key)->second;
    if (peer.evictable.empty()) continue;
    if (!biggest) biggest = &peer;
    if (!OldestIsFreshIdle(peer, now)) return &peer;
    if (++passed_over == kFreshPeersPassedOver) break;
  }
  return biggest;
}

ConnectionTable::Admission ConnectionTable::Admit(Id id, absl::string_view peer_key, Time now) {
  Admission out;
  auto peer_it = peers_.find(peer_key);
  if (peer_it != peers_.end() && peer_it->second.count >= limits_.per_peer) {
    // The peer's own oldest goes first; other peers are never evicted for its sake. (Its
    // entry may vanish when that was its last connection, so look it up again below.)
    if (!EvictOldest(peer_it->second, EvictReason::kPerPeerLimit, out)) return out;
  }
  if (entries_.size() >= limits_.total) {
    Peer* victim = TotalLimitVictim(now);
    if (!victim || !EvictOldest(*victim, EvictReason::kTotalLimit, out)) return out;
  }
  auto [it, inserted] = peers_.try_emplace(std::string(peer_key));
  Peer& peer = it->second;
  Recount(&it->first, peer, peer.count + 1);
  Entry& e = entries_[id];
  e.key = &it->first;
  e.peer = &peer;
  Append(e, id);
  out.admitted = true;
  return out;
}

void ConnectionTable::MarkEvictable(Id id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) Append(it->second, id);
}

void ConnectionTable::MarkIdle(Id id, Time now) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  Append(e, id);
  e.idle = true;
  e.idle_since = now;
}

void ConnectionTable::MarkBusy(Id id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) Unlink(it->second);
}

void ConnectionTable::Remove(Id id) {
  auto it = entries_.find(id);
  if (it != entries_.end()) Forget(it);
}

}  // namespace server
