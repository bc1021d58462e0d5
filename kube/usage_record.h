// Small records kept in ConfigMaps and updated with optimistic concurrency, the way
// kube-apiserver's ResourceQuota admission updates a quota's status: read (GET), decide on what
// was read, write back with metadata.resourceVersion as a precondition (PUT, or POST when the
// record does not exist yet), and on 409 Conflict read and decide again. Whatever replica wins
// a write, every other decision is made again on top of it, so two writers never both decide
// on the same old data. Claim quotas keep their per-tenant usage here (webhook/claim_quota.h).
// Thread-safe: the state lives in the API server.
#ifndef GPU_TENANCY_KUBE_USAGE_RECORD_H_
#define GPU_TENANCY_KUBE_USAGE_RECORD_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "kube/api.h"

namespace kube {

class ConfigMapRecords {
 public:
  // Records live in `namespace_name` (the service's own). At most `max_attempts` reads per
  // update: each conflict means another write succeeded, so only as many retries are needed
  // as there are writers racing for the same record.
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
  Api& api_;
  std::string namespace_name_;
  int max_attempts_;
};

}  // namespace kube

#endif  // GPU_TENANCY_KUBE_USAGE_RECORD_H_
