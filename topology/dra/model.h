// DRA (resource.k8s.io) supply and demand as plain values: the devices a driver publishes in
// ResourceSlices, the claims that hold them, and the DeviceClasses claims name. wire/dra_codec
// fills these from JSON (v1, v1beta2 and v1beta1 look the same here); this file only answers
// which devices are current and which devices a claim holds. Pure: no I/O, no JSON.
//
//   std::vector<DraDevice> current = CurrentDevices(slices);
//   DraAllocatedDevices held = AllocatedDevices(claim, current);
//   for (const DraDevice* d : held.devices) ...;   // held.missing: results not published (now)
#ifndef GPU_TENANCY_TOPOLOGY_DRA_MODEL_H_
#define GPU_TENANCY_TOPOLOGY_DRA_MODEL_H_

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"
#include "topology/persistent_map.h"
#include "topology/quantity.h"
#include "topology/quota.h"

namespace topology {

// The NVIDIA DRA driver, and its devices' memory as DraDevice::capacity names it (capacity and
// attribute names are qualified by their domain, the driver's own by default).
inline constexpr absl::string_view kNvidiaDraDriver = "gpu.nvidia.com";
inline constexpr absl::string_view kNvidiaMemoryCapacity = "gpu.nvidia.com/memory";

// A device's identity across the cluster: the DRA device ID `<driver>/<pool>/<device>`. Device
// names are unique only inside a pool, and pool names only inside a driver.
struct DraDeviceId {
  std::string driver, pool, device;

  std::string ToString() const;  // "gpu.nvidia.com/node-a/gpu-0"
  bool operator==(const DraDeviceId&) const = default;
  auto operator<=>(const DraDeviceId&) const = default;
};

// One published attribute value: exactly one of string, int, bool or version (semver text).
struct DraAttribute {
  enum class Kind { kString, kInt, kBool, kVersion };
  Kind kind = Kind::kString;
  std::string text;  // kString and kVersion
  int64_t number = 0;
  bool flag = false;

  static DraAttribute String(std::string text) { return {Kind::kString, std::move(text)}; }
  bool operator==(const DraAttribute&) const = default;
};

// Attribute and capacity maps, keyed by fully qualified name ("gpu.nvidia.com/type",
// "resource.kubernetes.io/pciBusID"): the wire's unqualified keys belong to the driver's domain.
using DraAttributes = std::map<std::string, DraAttribute, std::less<>>;
using DraCapacity = std::map<std::string, Quantity, std::less<>>;

// Named amounts, by counter name ("memory", "multiprocessors", "memory-slice-3").
using DraCounters = std::map<std::string, Quantity, std::less<>>;

// A slice's sharedCounters entry (KEP-4815 partitionable devices): amounts the devices of its
// pool draw from when allocated, such as one GPU's memory slices under NVIDIA's DynamicMIG.
struct DraCounterSet {
  std::string name;
  DraCounters counters;

  bool operator==(const DraCounterSet&) const = default;
};

// A counter set's identity: names are unique inside a pool, and pools inside a driver.
struct DraCounterSetKey {
  std::string driver, pool, name;
  auto operator<=>(const DraCounterSetKey&) const = default;
};
using DraCounterSets = std::map<DraCounterSetKey, DraCounters>;

// A device's consumesCounters entry: what it takes from one counter set of its pool.
struct DraCounterConsumption {
  std::string counter_set;
  DraCounters counters;

  bool operator==(const DraCounterConsumption&) const = default;
};

// A capacity's requestPolicy (DRAConsumableCapacity): what one allocation of a
// multi-allocatable device consumes of it. At most one of valid_values and the range (min set).
struct DraCapacityPolicy {
  // Consumed by a request that does not name the capacity; unset: the whole value.
  std::optional<Quantity> default_amount;
  // validValues, ascending: a request rounds up to the first value at least as large, and one
  // above them all is refused.
  std::vector<Quantity> valid_values;
  // validRange: a request below min rounds up to it, then up to min + n * step (when step is
  // set); one above max (when set) is refused.
  std::optional<Quantity> min, max, step;

  bool operator==(const DraCapacityPolicy&) const = default;
};

// One capacity entry under the name its driver published it ("memory", or
// "gpu.nvidia.com/memory"): a request's capacity.requests and a result's consumedCapacity name
// entries by exactly that key (topology/dra/capacity.h).
struct DraPublishedCapacity {
  std::string name;
  Quantity value;
  std::optional<DraCapacityPolicy> policy;  // requestPolicy; only multi-allocatable devices

  bool operator==(const DraPublishedCapacity&) const = default;
};

// One published device, with the attributes accounting reads. Strings are "" when the driver
// did not publish the attribute (a full GPU has no parent_uuid or profile; DynamicMIG's abstract
// MIG devices have no uuid).
struct DraDevice {
  std::string driver, pool, name;  // copied from the slice, so a device stands on its own
  std::string node;                // the slice's spec.nodeName (or the device's own); "" if none
  std::string type;                // "gpu", "mig", "vfio", ...
  std::string uuid, parent_uuid;
  std::string profile;                // MIG profile as published, e.g. "1g.10gb"
  std::string product;                // productName, e.g. "NVIDIA H100 80GB HBM3"
  std::optional<int64_t> memory_mib;  // capacity `memory`, rounded down to whole MiB
  // Everything the device publishes, for evaluating CEL selectors (topology/dra/selector.h).
  DraAttributes attributes;
  DraCapacity capacity;
  // The same capacity under the names as published, in the slice's order, each with its
  // requestPolicy.
  std::vector<DraPublishedCapacity> published_capacity;
  // Partitionable devices: an allocated device takes these from its pool's counter sets, so
  // devices drawing on the same counters exclude each other (topology/dra/counters.h).
  std::vector<DraCounterConsumption> consumes_counters;
  // allowMultipleAllocations (DRAConsumableCapacity): several claims may hold the device at once,
  // each taking part of its capacity. One fault domain and one memory heap, so a shared mode.
  bool allow_multiple_allocations = false;

  DraDeviceId Id() const { return {driver, pool, name}; }
  bool operator==(const DraDevice&) const = default;
};

struct DraSlice {
  std::string name;  // metadata.name
  std::string driver, pool;
  std::string node;  // spec.nodeName; "" for nodeSelector / allNodes slices
  int64_t generation = 0;
  int64_t resource_slice_count = 1;  // slices the pool has in this generation
  std::vector<DraDevice> devices;    // each carries this slice's driver, pool and node
  // sharedCounters; from 1.35 a slice carries either these or devices, and the pool's
  // devices draw on the counter sets of any of its slices.
  std::vector<DraCounterSet> shared_counters;

  bool operator==(const DraSlice&) const = default;
};

// One entry of status.allocation.devices.results. `request` is "<main>/<sub>" when the request
// used firstAvailable.
struct DraAllocationResult {
  std::string request, driver, pool, device;
  // DRAConsumableCapacity: set when the result is one share of a multi-allocatable device, with
  // what the share consumes of each of the device's capacities (keyed as the device publishes
  // them). A result without a share ID holds its device whole. (The braces keep positional
  // initialisers of the four names above complete.)
  std::string share_id{};
  DraCapacity consumed_capacity{};

  DraDeviceId Id() const { return {driver, pool, device}; }
  bool operator==(const DraAllocationResult&) const = default;
};

// One entry of status.reservedFor: the consumer (normally a pod) the claim is reserved for.
struct DraReservation {
  std::string resource, name, uid;

  bool operator==(const DraReservation&) const = default;
};

// One way a claim asks for devices: an `exactly` request (v1, v1beta2), a flat v1beta1
// request, or one firstAvailable subrequest, whose name is then "<request>/<subrequest>".
struct DraRequest {
  std::string name;
  std::string device_class;
  std::vector<std::string> selectors;  // CEL expressions, all of which must hold
  bool all = false;                    // allocationMode All
  int64_t count = 1;                   // ExactCount's count
  // Set on firstAvailable subrequests: alternatives, tried in order, of which one is allocated.
  bool alternative = false;
  // capacity.requests (DRAConsumableCapacity): how much of each capacity, by the name the
  // device publishes it under, each device given to the request must provide.
  DraCapacity capacity_requests{};

  bool operator==(const DraRequest&) const = default;
};

struct DraClaim {
  std::string namespace_name, name, uid;
  std::vector<DraRequest> requests;
  // Every deviceClassName its requests name (`exactly` and each firstAvailable subrequest), in
  // order of appearance, each once.
  std::vector<std::string> device_classes;
  bool allocated = false;  // status.allocation is set
  // From status.allocation.nodeSelector `matchFields metadata.name In [x]`; "" when the
  // allocation is not tied to one node (or the claim is not allocated).
  std::string allocated_node;
  std::vector<DraAllocationResult> results;
  std::vector<DraReservation> reserved_for;
  // Annotation resource.kubernetes.io/extended-resource-claim == "true": the scheduler made it
  // for a pod's extended-resource request (KEP-5004), after choosing the devices.
  bool extended_resource_claim = false;

  bool operator==(const DraClaim&) const = default;
};

struct DraDeviceClass {
  std::string name;
  std::vector<std::string> selectors;  // CEL expressions, all of which must hold
  std::string extended_resource_name;  // spec.extendedResourceName; "" if none

  bool operator==(const DraDeviceClass&) const = default;
};

// The devices consumers may use: per (driver, pool), only the slices of the pool's highest
// generation count ("Consumers use only the slices with the highest generation"; older ones
// are left over while a driver republishes). Input order is kept otherwise. A pool whose
// current generation has fewer than resource_slice_count slices is still returned as it is.
std::vector<DraDevice> CurrentDevices(const std::vector<DraSlice>& slices);
// The slices those devices come from, in input order (views into `slices`).
std::vector<const DraSlice*> CurrentSlices(const std::vector<DraSlice>& slices);

// What a claim holds among `current` devices.
struct DraAllocatedDevices {
  // In the order of the claim's results; pointers into `current`, never null.
  std::vector<const DraDevice*> devices;
  // Results whose device is not in `current` (its slice is gone, or not yet seen). Accounting
  // cannot attribute them to a device, but the claim still holds them.
  std::vector<DraAllocationResult> missing;
};

// Resolves the claim's results by device ID. An unallocated claim holds nothing. Costs
// O(results x devices): pass one node's or pool's devices where many claims are resolved.
DraAllocatedDevices AllocatedDevices(const DraClaim& claim, const std::vector<DraDevice>& current);
// The result would point into a temporary.
DraAllocatedDevices AllocatedDevices(const DraClaim& claim,
                                     std::vector<DraDevice>&& current) = delete;

// What one device class makes of one node's devices, for DRA extended resources (KEP-5004):
// how many its selectors match and how many of those claims already hold. Built with the
// DraState (topology/dra/extended_resources.h), so a fit reads counts instead of evaluating CEL.
struct DraClassOnNode {
  int64_t devices = 0;  // devices on the node all of the class's selectors are true for
  // Of those, devices allocated claims hold: whole, or (multi-allocatable devices) in shares
  // that leave too little for one more of the class's requests, which ask no capacity.
  int64_t allocated = 0;
  // Of those, multi-allocatable devices (topology/dra/capacity.h); and how many of these
  // claims hold shares of while they still take one more.
  int64_t multi_allocatable = 0;
  int64_t shared = 0;
  // Devices whose selectors could not be decided (outside the evaluated CEL subset, or a
  // runtime error): they are not counted, and `not_counted_reason` says how many and why.
  int64_t not_counted = 0;
  std::string not_counted_reason;
  // Of the devices no claim holds, those that cannot be allocated now because what they
  // consume from shared counters is used up by held devices (partitionable devices, such as
  // the whole GPU while one of its MIG placements is held).
  int64_t blocked = 0;
  // What the matched devices are: "gpu" or "mig" when all are of that type ("" if mixed),
  // and for MIG the profile when all share it.
  std::string type;
  std::string mig_profile;
};
using DraClassesOnNode = absl::InlinedVector<DraClassOnNode, 1>;

// The shares allocated claims hold of one multi-allocatable device (topology/dra/capacity.h):
// how many, and the sum of what they consume, by capacity name as the device publishes it.
struct DraShares {
  int32_t count = 0;
  DraCapacity consumed;

  bool operator==(const DraShares&) const = default;
};

// What one node's devices give the counts. A claim's allocation or release changes one entry
// per node its devices are on, so both parts live together: one path to copy, not two. Both
// are sized by the node's devices, never by the claims, and stored inline up to a typical
// node's size, so an event's copy of the entry is one allocation of the same size whatever
// the cluster holds.
struct DraNodeCounts {
  // Per class of DraDeviceSet::classes, what it makes of the node's devices; empty when there
  // are no classes.
  DraClassesOnNode classes;
  // Per device of the node (DraDeviceSet::slot_on_node), the results of allocated claims that
  // name it. Devices no node owns count under node "".
  absl::InlinedVector<int32_t, 24> results;
  // Per device slot, the shares among those results; only multi-allocatable devices that
  // claims hold shares of have an entry.
  std::map<uint32_t, DraShares> shares;
};
using DraNodeCountsMap = PersistentMap<std::string, std::shared_ptr<const DraNodeCounts>>;

// What slices and device classes give a DraState. Claims change far more often than either
// (each allocation, reservation and release is an event), so the states of consecutive claim
// events share one set: topology/dra/store.h keeps it until a slice or a class changes.
struct DraDeviceSet {
  // A device's driver, pool and name, viewing a device of `devices` (or the result looked up).
  struct Key {
    absl::string_view driver, pool, device;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.driver, k.pool, k.device);
    }
  };

  DraDeviceSet() = default;
  // `index` views the strings of `devices`: a copy would view the original's.
  DraDeviceSet(const DraDeviceSet&) = delete;
  DraDeviceSet& operator=(const DraDeviceSet&) = delete;

  std::vector<DraDevice> devices;  // CurrentDevices of the slices
  // Some device allows multiple allocations: the apiserver has DRAConsumableCapacity on, so a
  // selector may read device.allowMultipleAllocations.
  bool publishes_shared_devices = false;
  // Per type of the NVIDIA driver's devices ("gpu", "mig", "vfio"): the largest `memory`
  // capacity one publishes, in milli-units, or nullopt when one publishes none; no entry for
  // a type no device has. What a cap on each device's memory says about the devices now.
  absl::flat_hash_map<std::string, std::optional<int64_t>> nvidia_max_memory_milli;
  absl::flat_hash_map<Key, size_t> index;  // -> index in `devices`
  std::vector<DraDeviceClass> classes;
  // DRA extended resources (KEP-5004), from IndexDraExtendedResources: the resource name a pod
  // may ask in its limits -> index in `classes` of the class that backs it (a class's
  // extendedResourceName, and deviceclass.resource.kubernetes.io/<name>); per node with
  // devices, its counts with `allocated` still 0 and no results; per device, the classes it is
  // counted for.
  absl::flat_hash_map<std::string, size_t> extended_resources;
  DraNodeCountsMap node_counts;
  std::vector<std::vector<uint32_t>> counted_for;
  // Per device, its place in its node's DraNodeCounts::results.
  std::vector<uint32_t> slot_on_node;
  // Nodes with partitionable devices (devices that consume shared counters): the node's
  // devices (indices in `devices`) and the counter sets of its pools, compiled so that the
  // recount a claim event there makes (DraClassOnNode::blocked) compares integers instead of
  // looking up names: each counter of the node's sets is a slot of `capacity` (in
  // milli-units); entry i of `devices` consumes uses[uses_begin[i]] .. uses[uses_begin[i + 1] -
  // 1] as (slot, amount). A device consuming a set or counter its pool lacks never fits.
  struct Partitions {
    std::vector<uint32_t> devices;
    std::vector<int64_t> capacity;
    std::vector<std::pair<uint32_t, int64_t>> uses;
    std::vector<uint32_t> uses_begin;
    std::vector<bool> never_fits;
  };
  absl::flat_hash_map<std::string, Partitions> partitioned_nodes;
};
std::shared_ptr<const DraDeviceSet> MakeDraDeviceSet(const std::vector<DraSlice>& slices,
                                                     std::vector<DraDeviceClass> classes);

// Orders claims (or pointers to them) by namespace, then name.
struct DraClaimKeyLess {
  template <typename P>
  bool operator()(const P& a, const P& b) const {
    return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
  }
};

// Claims (or templates) keyed by namespace and name. Copies share structure
// (topology/persistent_map.h), so a state made for one claim event copies almost nothing.
class DraClaimSet {
 public:
  static DraClaimSet Of(std::vector<DraClaim> claims);

  const DraClaim* Find(absl::string_view namespace_name, absl::string_view name) const;
  // Adds or replaces the claim of the same namespace and name; returns the one replaced.
  std::shared_ptr<const DraClaim> Put(std::shared_ptr<const DraClaim> claim);
  // Removes it; returns the one removed, or null when absent.
  std::shared_ptr<const DraClaim> Erase(absl::string_view namespace_name, absl::string_view name);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t CountIn(absl::string_view namespace_name) const {
    const InNamespace* claims = by_namespace_.Find(namespace_name);
    return claims ? claims->size() : 0;
  }
  // The namespace's claims that are not allocated (ForEachPendingIn).
  size_t CountPendingIn(absl::string_view namespace_name) const {
    const InNamespace* claims = pending_by_namespace_.Find(namespace_name);
    return claims ? claims->size() : 0;
  }
  // Calls f(const DraClaim&) for each, in unspecified order.
  template <typename F>
  void ForEach(F&& f) const {
    by_namespace_.ForEach([&](const std::string&, const InNamespace& claims) {
      claims.ForEach([&](const std::string&, const std::shared_ptr<const DraClaim>& c) { f(*c); });
    });
  }
  // Calls f(namespace) for each namespace that has claims, in unspecified order.
  template <typename F>
  void ForEachNamespace(F&& f) const {
    by_namespace_.ForEach([&](const std::string& ns, const InNamespace&) { f(ns); });
  }
  // Calls f(const DraClaim&) for each claim of one namespace, in unspecified order: what a
  // tenant's admission reads, without visiting the other tenants' claims.
  template <typename F>
  void ForEachIn(absl::string_view namespace_name, F&& f) const {
    const InNamespace* claims = by_namespace_.Find(namespace_name);
    if (!claims) return;
    claims->ForEach([&](const std::string&, const std::shared_ptr<const DraClaim>& c) { f(*c); });
  }
  // The same for the namespace's claims that are not allocated: what a quota that does not
  // count allocated claims' memory reads of them, without visiting the (many) allocated ones.
  template <typename F>
  void ForEachPendingIn(absl::string_view namespace_name, F&& f) const {
    const InNamespace* claims = pending_by_namespace_.Find(namespace_name);
    if (!claims) return;
    claims->ForEach([&](const std::string&, const std::shared_ptr<const DraClaim>& c) { f(*c); });
  }
  // Calls f(before_claim, after_claim) for every claim that differs from `before` (an
  // earlier version of this set): added (before null), removed (after null) or replaced. Costs
  // the namespaces with claims plus what changed in them.
  template <typename F>
  void ForEachDifference(const DraClaimSet& before, F&& f) const {
    const InNamespace empty;
    by_namespace_.ForEach([&](const std::string& ns, const InNamespace& claims) {
      const InNamespace* old = before.by_namespace_.Find(ns);
      claims.ForEachDifference(old ? *old : empty,
                               [&](const std::string&, const auto* was, const auto* now) {
                                 f(was ? was->get() : nullptr, now ? now->get() : nullptr);
                               });
    });
    before.by_namespace_.ForEach([&](const std::string& ns, const InNamespace& claims) {
      if (by_namespace_.Find(ns)) return;
      claims.ForEach([&](const std::string&, const std::shared_ptr<const DraClaim>& c) {
        f(c.get(), static_cast<const DraClaim*>(nullptr));
      });
    });
  }
  // Every claim, by namespace and then name.
  std::vector<const DraClaim*> Sorted() const;
  // The same, each shared with this set: what a relist compares the new list against.
  std::vector<std::shared_ptr<const DraClaim>> SortedShared() const;

 private:
  using InNamespace = PersistentMap<std::string, std::shared_ptr<const DraClaim>>;  // by name
  using ByNamespace = PersistentMap<std::string, InNamespace>;
  // Adds or replaces in one index; returns the claim replaced.
  static std::shared_ptr<const DraClaim> PutIn(ByNamespace& index,
                                               std::shared_ptr<const DraClaim> claim);
  // Removes from one index; returns the claim removed, or null when absent.
  static std::shared_ptr<const DraClaim> EraseIn(ByNamespace& index,
                                                 absl::string_view namespace_name,
                                                 absl::string_view name);
  ByNamespace by_namespace_;
  ByNamespace pending_by_namespace_;  // the claims of by_namespace_ that are not allocated
  size_t size_ = 0;
};

// What the cluster's DRA objects say, as one value a snapshot shares: the current devices and
// device classes (shared with other states), every claim and template, and what the claims
// hold. Every part shares structure with the state it was made from: PutClaim and EraseClaim
// cost what the one claim changes (its results, its namespace's usage, its nodes' counts),
// whatever the cluster holds.
struct DraState {
  std::shared_ptr<const DraDeviceSet> device_set;  // null: no slices and no classes
  DraClaimSet claims;
  // ResourceClaimTemplates, read as the claim spec they stamp out (no uid, never allocated).
  DraClaimSet templates;
  // What allocated claims hold per namespace, in quota units: a whole GPU (type "gpu") counts
  // in gpus, a MIG device (type "mig") in migInstances by profile and in migComputeSlices, and
  // a share of a multi-allocatable one of either (topology/dra/capacity.h) as one shared
  // replica. GPU memory is left to AllocatedClaimMemoryMib, and claims are not pods. A namespace
  // whose claims hold nothing has no entry.
  PersistentMap<std::string, QuotaUsage> usage;
  // The device set's node_counts with the results and `allocated` counted; and the UIDs (and
  // namespace/name) of the pods an allocated extended-resource claim is reserved for (their
  // devices already count as allocated), each with the number of such claims.
  DraNodeCountsMap node_counts;
  PersistentMap<std::string, int> extended_claim_pods;

  const std::vector<DraDevice>& devices() const;
  const std::vector<DraDeviceClass>& classes() const;
  const absl::flat_hash_map<std::string, size_t>& extended_resources() const;
  bool empty() const {
    return devices().empty() && claims.empty() && templates.empty() && classes().empty();
  }
  // The index in devices() of the device an allocation result names, or -1 when no current
  // slice has it.
  ptrdiff_t IndexOf(const DraAllocationResult& result) const;
  // The current device an allocation result names, or null when no current slice has it.
  const DraDevice* Find(const DraAllocationResult& result) const;
  // How many results of allocated claims name devices()[index]; 0 when none holds it.
  int HeldBy(size_t index) const;
  bool Held(size_t index) const { return HeldBy(index) > 0; }
  // The shares of devices()[index] allocated claims hold (counted in HeldBy too); null when
  // none.
  const DraShares* SharesOf(size_t index) const;
  // Per class, what it makes of `node`'s devices; null for a node without counted devices.
  const DraClassesOnNode* ClassesOnNode(absl::string_view node) const;

  // Adds the claim, or replaces the one of the same namespace and name, and moves what it holds
  // into the counts; returns the claim replaced, or null.
  std::shared_ptr<const DraClaim> PutClaim(std::shared_ptr<const DraClaim> claim);
  // Removes the claim and what it held; returns it, or null when absent.
  std::shared_ptr<const DraClaim> EraseClaim(absl::string_view namespace_name,
                                             absl::string_view name);
};
DraState MakeDraState(const std::vector<DraSlice>& slices, std::vector<DraClaim> claims,
                      std::vector<DraDeviceClass> classes, std::vector<DraClaim> templates = {});
// The same over a device set made before, counting every claim: what a slice or class change
// costs (claim changes go through PutClaim and EraseClaim).
DraState MakeDraState(std::shared_ptr<const DraDeviceSet> device_set, const DraClaimSet& claims,
                      DraClaimSet templates);

}  // namespace topology

#endif  // GPU_TENANCY_TOPOLOGY_DRA_MODEL_H_
