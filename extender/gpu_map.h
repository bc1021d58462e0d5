// The live GPU map the operator page draws (web/map.html, GET /ui/api/map): per GPU node its
// pool, whether mig-manager is reconfiguring it or it is cordoned, and per offered resource the
// slots it has and who holds them; per DRA device the tenant and claim that hold it. Read from
// the same node states the scheduler decides on, as /debug/allocations is. Pure: no I/O.
//
//   std::string body = extender::GpuMapJson(*state);
//
// {"nodes":[{"name","pool","mode","product","model","gpus","migState","cordoned",
//   "resources":[{"name","kind":"gpu"|"mig"|"shared","profile","allocatable","used",
//     "holders":[{"tenant","namespace","pod","count","gpuIndex","assumed","borrowed",
//       "devices":[{"id","gpu","sharing"}]}]}],
//   "draDevices":[{"device","type","profile","uuid","tenant","claim","allowMultipleAllocations",
//     "shares":[{"tenant","claim","shareID","consumedCapacity":{<name>:<quantity>}}],
//     "capacity":[{"name","value","consumed"}],"blocked","memorySlices"}],
//   "physicalGpus":[{"id","sharing","tenants","pods"}]}],
//  "tenants":[...], "pools":[...], "fairShare":[<extender/fair_share_view.h's JSON>, ...]}
// Fair sharing, under a policy with it (both keys absent otherwise): a holder's `borrowed` says
// it is among its tenant's newest pods beyond its guarantee (reclaimable by another tenant's
// guaranteed pod); `fairShare` has one entry per fair-sharing tenant.
// A DRA device's `tenant` and `claim` are those of the claim that holds it whole ("" when
// none); the claims holding shares of a multi-allocatable device (DRAConsumableCapacity) are
// its `shares`, and its `capacity` says what they consume of each capacity (empty for other
// devices). Quantities read "10Gi", "512Mi", or as Kubernetes writes them.
// Nodes without GPUs (neither allocatable nor DRA devices) are left out; nodes are in name
// order, holders by namespace and pod name. `migState` is "" on a settled node, else what keeps
// it unsettled ("nvidia.com/mig.config.state=pending", a device plugin paused for the change).
// `gpus` is GFD's nvidia.com/gpu.count, null without it; `gpuIndex` is the shared GPU a pod's
// memory counts on (the node agent's report, else bind's record), null where the GPU is not
// known (the device plugin does not say which GPU a MIG instance or an exclusive GPU is).
// A holder's `devices` are those of the resource the node agent's believed report names for
// the pod (extender/device_attribution.h), `gpu` their physical GPU ("" where the ID does not
// say it: a MIG-<uuid>); `physicalGpus` are the GPUs those IDs name, with the tenants on each.
// Both are empty where no believed report says.
#ifndef GPU_TENANCY_EXTENDER_GPU_MAP_H_
#define GPU_TENANCY_EXTENDER_GPU_MAP_H_

#include <string>

#include "topology/snapshot.h"

namespace extender {

std::string GpuMapJson(const topology::ModelState& state);

}  // namespace extender

#endif  // GPU_TENANCY_EXTENDER_GPU_MAP_H_
