// topology::CompiledSelector, the CEL subset DRA device selectors are evaluated in.
// Invariants: compiling and evaluating never crash and never recurse without bound; a
// supported expression is never "not evaluated" and an unsupported one always is, with a
// reason; an error or not-evaluated result says why; evaluation is deterministic.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "topology/dra/model.h"
#include "topology/dra/selector.h"
#include "topology/quantity.h"

namespace {

topology::DraDevice FuzzMigDevice() {
  topology::DraDevice d;
  d.driver = "gpu.nvidia.com";
  d.pool = d.node = "node-a";
  d.name = "gpu-0-mig-1g10gb-19-0";
  d.attributes["gpu.nvidia.com/type"] = topology::DraAttribute::String("mig");
  d.attributes["gpu.nvidia.com/profile"] = topology::DraAttribute::String("1g.10gb");
  d.attributes["gpu.nvidia.com/driverVersion"] = {topology::DraAttribute::Kind::kVersion,
                                                  "570.124.6"};
  d.attributes["gpu.nvidia.com/numa"] = {topology::DraAttribute::Kind::kInt, "", 1};
  d.attributes["gpu.nvidia.com/coherent"] = {topology::DraAttribute::Kind::kBool, "", 0, true};
  d.attributes["resource.kubernetes.io/pciBusID"] = topology::DraAttribute::String("0000:1b:00.0");
  d.capacity["gpu.nvidia.com/memory"] = topology::Quantity::FromUnits(int64_t{9984} << 20);
  d.capacity["gpu.nvidia.com/multiprocessors"] = topology::Quantity::FromUnits(16);
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const topology::DraDevice* device = new topology::DraDevice(FuzzMigDevice());
  static const topology::DraDevice* empty = new topology::DraDevice();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const topology::CompiledSelector s = topology::CompiledSelector::Compile(text);
  FUZZ_CHECK(s.expression() == text, "expression kept");
  FUZZ_CHECK(s.supported() == s.unsupported_reason().empty(), s.unsupported_reason());
  for (const topology::DraDevice* d : {device, empty}) {
    const topology::SelectorResult r = s.Evaluate(*d);
    FUZZ_CHECK((r.outcome == topology::SelectorOutcome::kNotEvaluated) == !s.supported(), r.detail);
    const bool explained = r.outcome == topology::SelectorOutcome::kError ||
                           r.outcome == topology::SelectorOutcome::kNotEvaluated;
    FUZZ_CHECK(explained == !r.detail.empty(), r.detail);
    const topology::SelectorResult again = s.Evaluate(*d);
    FUZZ_CHECK(again.outcome == r.outcome && again.detail == r.detail, r.detail);
  }
  return 0;
}
