// selector_cost: what the selectors the mutating webhook writes into DRA claims cost an
// allocator. kube-scheduler's allocator evaluates, for every device it considers, the class's
// selectors and then the request's, stopping at the first false. Its own benchmark needs a
// Kubernetes tree; the stand-in here is the project's evaluator of the same CEL subset
// (topology/dra/selector.h), each expression compiled once and evaluated per device as the
// allocator does. cel-go's per-program cost differs from ours, so the ratios (same run, same
// devices) are what to read, not the nanoseconds.
//
// Devices: the captured v1.36 ResourceSlice of NVIDIA's driver (a 1g.10gb and a 3g.40gb MIG
// device and a whole 80 GB H100), repeated for --nodes nodes; classes: the chart's captured
// DeviceClasses. Per tenant and class, three forms of the same request:
//   class only   no tenant selector (the floor)
//   per limit    one selector per limit, every limit (how they were written before)
//   one          webhook::RequestExpression: one selector, without what the class implies
// Every form must admit exactly the same devices (checked, also by --smoke); the timing rounds
// are interleaved and the medians reported.
//
//   selector_cost [--nodes 2000] [--rounds 7] [--md FILE]
//   selector_cost --smoke        the equivalence check on a few nodes; asserts no timing
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config_loader.h"
#include "common/json.h"
#include "topology/dra/model.h"
#include "topology/dra/selector.h"
#include "webhook/claim_selectors.h"
#include "wire/dra_codec.h"

#ifndef BENCH_TESTDATA_DIR
#error "BENCH_TESTDATA_DIR: the captured ResourceSlices and DeviceClasses"
#endif

namespace selector_cost {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kPolicy[] = R"(tiers:
  - {name: mig-only, modes: [mig, mig-shared]}
  - {name: untrusted, modes: [exclusive, mig]}
  - {name: standard, modes: [exclusive, timeslice, mps, mig]}
tenants:
  - name: inference
    tier: mig-only
    namespaces: [inference]
    limits: {migProfiles: [1g.10gb, 2g.20gb], gpuMemoryPerPod: 20Gi}
  - name: acme
    tier: untrusted
    namespaces: [acme]
    limits: {migProfiles: [1g.10gb, 2g.20gb, 3g.40gb], gpuMemoryPerPod: 80Gi}
  - name: open
    tier: standard
    namespaces: [open]
    limits: {gpuMemoryPerPod: 80Gi}
unknownTenant: deny
)";

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::StatusOr<wire::DraObjects> Captured(const std::string& file) {
  absl::StatusOr<rapidjson::Document> doc =
      common::ParseJson(ReadWhole(absl::StrCat(BENCH_TESTDATA_DIR, "/dra/", file)));
  if (!doc.ok()) return doc.status();
  return wire::ParseDraList(*doc);
}

struct Form {
  std::string name;
  std::vector<topology::CompiledSelector> selectors;  // the class's, then the request's
  size_t request_selectors = 0;
  std::vector<double> ns_per_device;
  size_t matched = 0;
};

// One pass of the allocator's inner loop over every device; how many matched.
size_t Pass(const Form& form, const std::vector<topology::DraDevice>& devices) {
  size_t matched = 0;
  for (const topology::DraDevice& d : devices) {
    if (topology::DeviceMatchesCompiled(d, form.selectors).outcome ==
        topology::SelectorOutcome::kMatch) {
      ++matched;
    }
  }
  return matched;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main(int nodes, int rounds, bool smoke, const std::string& md_path) {
  absl::StatusOr<wire::DraObjects> slices = Captured("list-resourceslices.v1.json");
  absl::StatusOr<wire::DraObjects> classes = Captured("list-deviceclasses.v1.json");
  absl::StatusOr<topology::Policy> policy = common::LoadPolicy(kPolicy);
  if (!slices.ok() || !classes.ok() || !policy.ok()) {
    std::fprintf(stderr, "selector_cost: cannot read the captured objects or the policy\n");
    return 2;
  }
  const std::vector<topology::DraDevice> one_node = topology::CurrentDevices(slices->slices);
  std::vector<topology::DraDevice> devices;
  for (int n = 0; n < nodes; ++n) {
    for (topology::DraDevice d : one_node) {
      d.node = d.pool = absl::StrCat("node-", n);
      devices.push_back(std::move(d));
    }
  }
  struct Row {
    std::string tenant, device_class;
    std::vector<Form> forms;
  };
  std::vector<Row> rows;
  for (const char* tenant : {"inference", "acme", "open"}) {
    const std::vector<webhook::TenantSelector> limits =
        webhook::TenantSelectors(topology::ResolveTenant(*policy, tenant, {}));
    for (const char* class_name : {"mig.nvidia.com", "gpu.nvidia.com"}) {
      const topology::DraDeviceClass* device_class = nullptr;
      for (const topology::DraDeviceClass& c : classes->classes) {
        if (c.name == class_name) device_class = &c;
      }
      if (!device_class) {
        std::fprintf(stderr, "selector_cost: no captured class %s\n", class_name);
        return 2;
      }
      std::vector<std::string> per_limit, one;
      for (const webhook::TenantSelector& s : limits) per_limit.push_back(s.expression);
      if (std::string e = webhook::RequestExpression(limits, class_name); !e.empty()) {
        one.push_back(e);
      }
      Row row{tenant, class_name, {}};
      for (auto [name, request] : {std::pair{"class only", std::vector<std::string>{}},
                                   std::pair{"per limit", per_limit}, std::pair{"one", one}}) {
        std::vector<std::string> all = device_class->selectors;
        all.insert(all.end(), request.begin(), request.end());
        Form f;
        f.name = name;
        f.selectors = topology::CompileSelectors(all);
        f.request_selectors = request.size();
        row.forms.push_back(std::move(f));
      }
      rows.push_back(std::move(row));
    }
  }
  // Equivalence: the per-limit and the one-selector forms admit the same devices.
  int mismatches = 0;
  for (Row& row : rows) {
    for (const topology::DraDevice& d : devices) {
      const auto per_limit = topology::DeviceMatchesCompiled(d, row.forms[1].selectors).outcome;
      const auto one = topology::DeviceMatchesCompiled(d, row.forms[2].selectors).outcome;
      if (per_limit != one || per_limit == topology::SelectorOutcome::kNotEvaluated ||
          per_limit == topology::SelectorOutcome::kError) {
        if (mismatches++ < 5) {
          std::fprintf(stderr, "selector_cost: %s %s device %s: per limit %d, one %d\n",
                       row.tenant.c_str(), row.device_class.c_str(), d.name.c_str(),
                       static_cast<int>(per_limit), static_cast<int>(one));
        }
      }
    }
    for (Form& f : row.forms) f.matched = Pass(f, devices);
  }
  if (mismatches) {
    std::fprintf(stderr, "selector_cost: %d devices judged differently\n", mismatches);
    return 1;
  }
  if (smoke) {
    std::fprintf(stderr, "selector_cost: both forms admit the same devices in all %zu cases\n",
                 rows.size());
    return 0;
  }
  for (int round = 0; round < rounds; ++round) {
    for (Row& row : rows) {
      for (size_t j = 0; j < row.forms.size(); ++j) {
        Form& f = row.forms[(j + static_cast<size_t>(round)) % row.forms.size()];
        const Clock::time_point start = Clock::now();
        const size_t matched = Pass(f, devices);
        const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        if (matched != f.matched) return 1;
        f.ns_per_device.push_back(ns / static_cast<double>(devices.size()));
      }
    }
  }
  std::string md = absl::StrCat(
      "## Injected selectors' cost to an allocator-like evaluation (selector_cost)\n\n",
      "`bench/selector_cost.cc`: for every device, the class's selectors and then the request's, "
      "stopping at the first false, as kube-scheduler's allocator does; evaluated by the "
      "project's own CEL evaluator (`topology/dra/selector.h`), a stand-in for cel-go, so read "
      "the ratios. ",
      devices.size(),
      " devices (the captured NVIDIA ResourceSlice: a 1g.10gb and a 3g.40gb MIG "
      "device and a whole H100, on ",
      nodes, " nodes), the chart's captured classes; medians of ", rounds,
      " interleaved rounds. Tenants: inference (tier MIG only; profiles 1g.10gb, 2g.20gb; "
      "20Gi), acme (exclusive and MIG; three profiles; 80Gi), open (all but mig-shared; 80Gi). "
      "Both tenant forms admit exactly the same devices (checked).\n\n"
      "| tenant | class | matching devices | class only | per limit (before) | one selector "
      "(now) | per limit / class only | one / class only |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    const double floor = Median(row.forms[0].ns_per_device);
    const double per_limit = Median(row.forms[1].ns_per_device);
    const double one = Median(row.forms[2].ns_per_device);
    absl::StrAppend(
        &md, absl::StrFormat("| %s | %s | %zu | %.0f ns | %.0f ns (%zu) | %.0f ns (%zu) | %.2fx | "
                             "%.2fx |\n",
                             row.tenant, row.device_class, row.forms[2].matched, floor, per_limit,
                             row.forms[1].request_selectors, one, row.forms[2].request_selectors,
                             per_limit / floor, one / floor));
  }
  absl::StrAppend(&md, "\nPer device evaluated; in parentheses the selectors in the request.\n");
  std::fprintf(stdout, "%s", md.c_str());
  if (!md_path.empty()) std::ofstream(md_path) << md;
  return 0;
}

}  // namespace
}  // namespace selector_cost

int main(int argc, char** argv) {
  int nodes = 2000, rounds = 7;
  bool smoke = false;
  std::string md;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--smoke") {
      smoke = true;
      nodes = 3;
    } else if (flag == "--nodes" && has_value && absl::SimpleAtoi(argv[i + 1], &nodes) &&
               nodes > 0) {
      ++i;
    } else if (flag == "--rounds" && has_value && absl::SimpleAtoi(argv[i + 1], &rounds) &&
               rounds > 0) {
      ++i;
    } else if (flag == "--md" && has_value) {
      md = argv[++i];
    } else {
      std::fprintf(stderr,
                   "selector_cost: bad flag %s\nusage: selector_cost [--smoke] [--nodes N > 0] "
                   "[--rounds N > 0] [--md FILE]\n",
                   argv[i]);
      return 2;
    }
  }
  return selector_cost::Main(nodes, rounds, smoke, md);
}
