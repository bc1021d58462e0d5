// Small records kept in ConfigMaps and updated with optimistic concurrency, the way
// kube-apiserver's ResourceQuota admission updates a quota's status: read (GET), decide on what
// was read, write back with metadata.resourceVersion as a precondition (PUT, or POST when the
// record does not exist yet), and on 409 Conflict read and decide again. Whatever replica wins
// a write, every other decision is made again on top of it, so two writers never both decide
// on the same old data. Claim quotas keep their per-tenant usage here (webhook/claim_quota.h).
//
// A record this replica wrote is remembered as written (its data and the resourceVersion the
// API server answered), so the next update decides on it and writes at once: one conditional
// PUT and no GET while no other replica writes. The precondition keeps that safe: when another
// writer came between, the PUT conflicts and the record is read again. A decision to write
// nothing (a claim over quota) is only taken on a record just read, since a remembered one may
// still hold reservations another replica has since dropped. This replica's updates of one
// record take turns, so they build on each other instead of conflicting. Thread-safe.
#ifndef GPU_TENANCY_KUBE_USAGE_RECORD_H_
#define GPU_TENANCY_KUBE_USAGE_RECORD_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/mutex.h"
#include "kube/api.h"

namespace kube {

class ConfigMapRecords {
 public:
  // Records live in `namespace_name` (the service's own). At most `max_attempts` writes (or
  // reads) per update: each conflict means another write succeeded, so only as many retries
  // are needed as there are writers racing for the same record.
  ConfigMapRecords(Api& api, std::string namespace_name, int max_attempts = 16);

  using Data = std::map<std::string, std::string>;
  // `decide` gets the record's data (empty when the ConfigMap does not exist) and returns the
  // data to write, or nullopt to write nothing. With `dry_run` the record is read, never
  // written. A transport failure is retried like a conflict, within the same attempts.
  // Unavailable when the API server answers an error or stays unreachable; Aborted when every
  // attempt conflicted.
  absl::Status Update(const std::string& name,
                      const std::function<std::optional<Data>(const Data&)>& decide, bool dry_run);

 private:
  // What this replica last read or wrote of one record.
  struct Known {
    common::Mutex mu;  // held through an update: this replica's writers take turns
    bool valid ABSL_GUARDED_BY(mu) = false;
    Data data ABSL_GUARDED_BY(mu);
    std::string resource_version ABSL_GUARDED_BY(mu);  // "": the record does not exist
  };
  Known& KnownRecord(const std::string& name);
  // GET into `known`. An error: the API server's answer cannot be used, or with `dropped` set,
  // the connection failed (worth another try).
  absl::Status Read(const std::string& name, const std::string& path, Known& known, bool& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(known.mu);

  Api& api_;
  std::string namespace_name_;
  int max_attempts_;
  common::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Known>> known_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_USAGE_RECORD_H_
