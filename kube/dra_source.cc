#include "kube/dra_source.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "topology/policy.h"
#include "wire/dra_codec.h"

namespace kube {
namespace {

constexpr char kDiscoveryPath[] = "/apis/resource.k8s.io";

struct ObjectName {
  std::string namespace_name, name;
};

ObjectName NamespaceAndName(const common::JsonValue& object) {
  const common::JsonValue* meta = common::FindMember(object, "metadata");
  if (!meta) return {};
  return {std::string(common::StringOr(*meta, "namespace")),
          std::string(common::StringOr(*meta, "name"))};
}

void Ignored(absl::string_view kind, const absl::Status& status) {
  common::Log(common::LogLevel::kWarn, "object ignored",
              {{"kind", kind}, {"reason", status.message()}});
}

// Parses every item with `parse`, leaving out (and logging) those it refuses.
template <typename T, typename Parse>
std::vector<T> ParseAll(const std::vector<const common::JsonValue*>& items, absl::string_view kind,
                        Parse parse) {
  std::vector<T> out;
  out.reserve(items.size());
  for (const common::JsonValue* item : items) {
    absl::StatusOr<T> parsed = parse(*item);
    if (parsed.ok()) {
      out.push_back(*std::move(parsed));
    } else {
      Ignored(kind, parsed.status());
    }
  }
  return out;
}

}  // namespace

std::string ChooseDraVersion(const common::JsonValue& api_group) {
  std::vector<std::string> offered;
  if (const common::JsonValue* versions = common::FindNonNull(api_group, "versions");
      versions && versions->IsArray()) {
    for (const auto& v : versions->GetArray()) {
      if (v.IsObject()) offered.emplace_back(common::StringOr(v, "version"));
    }
  }
  for (const char* wanted : {"v1", "v1beta2", "v1beta1"}) {
    if (std::find(offered.begin(), offered.end(), wanted) != offered.end()) return wanted;
  }
  return "";
}

common::ClaimAudit ClaimAuditEvent(const topology::ClaimTransition& transition,
                                   const topology::DraState& devices,
                                   const topology::ModelState* current) {
  const topology::DraClaim& claim = *transition.claim;
  common::ClaimAudit r;
  r.change = transition.kind == topology::ClaimTransition::Kind::kAllocated
                 ? common::ClaimAudit::Change::kAllocated
             : transition.deleted ? common::ClaimAudit::Change::kClaimDeleted
                                  : common::ClaimAudit::Change::kAllocationRemoved;
  r.namespace_name = claim.namespace_name;
  r.claim = claim.name;
  r.uid = claim.uid;
  r.node = claim.allocated_node;
  for (const topology::DraAllocationResult& result : claim.results) {
    common::AuditDevice d;
    d.device = result.Id().ToString();
    if (const topology::DraDevice* device = devices.Find(result)) {
      d.type = device->type;
      d.uuid = device->uuid;
      d.mig_profile = device->profile;
      if (r.node.empty()) r.node = device->node;
    }
    r.devices.push_back(std::move(d));
  }
  for (const topology::DraReservation& reservation : claim.reserved_for) {
    r.reserved_for.push_back(reservation.name);
  }
  if (current) {
    topology::TenantRef tenant =
        topology::ResolveTenant(*current->policy, claim.namespace_name,
                                current->snapshot->NamespaceLabels(claim.namespace_name));
    r.tenant = {tenant.name, tenant.tier ? tenant.tier->name : ""};
  }
  return r;
}

DraSource::DraSource(Api& client, ClusterState& state, ReflectorOptions options)
    : client_(client), state_(state), options_(options) {}

DraSource::~DraSource() { Stop(); }

void DraSource::SetAuditLog(common::AuditLog* audit, std::function<bool()> gate) {
  common::MutexLock lock(&mu_);
  audit_ = audit;
  gate_ = std::move(gate);
}

void DraSource::Start() {
  thread_ = std::thread([this] {
    common::NameThisThread("dra-discovery");
    Run();
  });
}

void DraSource::Stop() {
  stop_.store(true);
  {
    common::MutexLock lock(&sleep_mu_);  // so a Sleep() cannot miss it
  }
  sleep_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
  std::vector<std::unique_ptr<Reflector>> reflectors;
  {
    common::MutexLock lock(&mu_);
    reflectors.swap(reflectors_);
  }
  // Without mu_: a reflector being stopped may be waiting for it in a handler.
  for (auto& r : reflectors) r->Stop();
}

std::string DraSource::version() const {
  common::MutexLock lock(&mu_);
  return version_;
}

uint64_t DraSource::watch_restarts() const {
  common::MutexLock lock(&mu_);
  uint64_t n = 0;
  for (const auto& r : reflectors_) n += r->counters().watch_restarts.load();
  return n;
}

bool DraSource::Sleep(std::chrono::milliseconds d) {
  common::MutexLock lock(&sleep_mu_);
  options_.clock->WaitFor(&sleep_mu_, &sleep_cv_, d, [this] { return stop_.load(); });
  return !stop_.load();
}

void DraSource::Run() {
  std::chrono::milliseconds backoff = options_.backoff_initial;
  bool announced_absent = false;
  while (!stop_.load()) {
    absl::StatusOr<ApiResponse> r = client_.Get(kDiscoveryPath);
    std::string version;
    bool absent = false;
    if (r.ok() && r->status == 404) {
      absent = true;
    } else if (r.ok() && r->status == 200) {
      absl::StatusOr<rapidjson::Document> doc = common::ParseJson(r->body);
      if (doc.ok() && doc->IsObject()) {
        version = ChooseDraVersion(*doc);
        absent = version.empty();
      }
    }
    if (!version.empty()) {
      common::Log(common::LogLevel::kInfo, "reading resource.k8s.io", {{"version", version}});
      StartReflectors(version);
      return;
    }
    if (!absent) {
      common::Log(common::LogLevel::kWarn, "resource.k8s.io discovery failed",
                  {{"error", !r.ok()            ? std::string(r.status().message())
                             : r->status == 200 ? std::string("unreadable APIGroup")
                                                : DescribeError(*r)}});
      if (!Sleep(backoff)) return;
      backoff = std::min(backoff * 2, options_.backoff_max);
      continue;
    }
    backoff = options_.backoff_initial;
    if (!announced_absent) {
      // No DRA on this cluster: publish that (an empty state), so nothing waits for it.
      common::Log(common::LogLevel::kInfo,
                  "resource.k8s.io not served (v1, v1beta2 or v1beta1): no DRA objects", {});
      announced_absent = true;
      state_.ReplaceDra(std::make_shared<const topology::DraState>());
      synced_.store(true);
    }
    // The group may be enabled later (an upgrade): ask again now and then.
    if (!Sleep(options_.resync)) return;
  }
}

void DraSource::StartReflectors(const std::string& version) {
  common::MutexLock lock(&mu_);
  if (stop_.load()) return;
  version_ = version;
  const char* plurals[kKinds] = {"resourceslices", "resourceclaims", "deviceclasses",
                                 "resourceclaimtemplates"};
  for (int kind = 0; kind < kKinds; ++kind) {
    reflectors_.push_back(std::make_unique<Reflector>(
        client_, absl::StrCat("/apis/resource.k8s.io/", version, "/", plurals[kind]),
        HandlerFor(static_cast<Kind>(kind)), options_));
  }
  for (auto& r : reflectors_) r->Start();
}

ReflectorHandler DraSource::HandlerFor(Kind kind) {
  switch (kind) {
    case kSlices:
      return {[this](const std::vector<const common::JsonValue*>& items) {
                auto slices = ParseAll<topology::DraSlice>(
                    items, "ResourceSlice",
                    [](const common::JsonValue& v) { return wire::ParseResourceSlice(v); });
                common::MutexLock lock(&mu_);
                store_.ReplaceSlices(std::move(slices));
                PublishLocked(kSlices, {});
              },
              [this](absl::string_view type, const common::JsonValue& object) {
                common::MutexLock lock(&mu_);
                if (type == "DELETED") {
                  store_.DeleteSlice(NamespaceAndName(object).name);
                } else if (absl::StatusOr<topology::DraSlice> s = wire::ParseResourceSlice(object);
                           s.ok()) {
                  store_.UpsertSlice(*std::move(s));
                } else {
                  Ignored("ResourceSlice", s.status());
                  return;
                }
                PublishLocked(kSlices, {});
              }};
    case kClaims:
      return {[this](const std::vector<const common::JsonValue*>& items) {
                auto claims = ParseAll<topology::DraClaim>(
                    items, "ResourceClaim",
                    [](const common::JsonValue& v) { return wire::ParseResourceClaim(v); });
                common::MutexLock lock(&mu_);
                std::vector<topology::ClaimTransition> changes =
                    store_.ReplaceClaims(std::move(claims));
                // The first list is where watching starts: what it holds was allocated before.
                if (!claims_baseline_) changes.clear();
                claims_baseline_ = true;
                PublishLocked(kClaims, std::move(changes));
              },
              [this](absl::string_view type, const common::JsonValue& object) {
                common::MutexLock lock(&mu_);
                std::vector<topology::ClaimTransition> changes;
                if (type == "DELETED") {
                  ObjectName n = NamespaceAndName(object);
                  changes = store_.DeleteClaim(n.namespace_name, n.name);
                } else if (absl::StatusOr<topology::DraClaim> c = wire::ParseResourceClaim(object);
                           c.ok()) {
                  changes = store_.UpsertClaim(*std::move(c));
                } else {
                  Ignored("ResourceClaim", c.status());
                  return;
                }
                PublishLocked(kClaims, std::move(changes));
              }};
    case kClasses:
      return {
          [this](const std::vector<const common::JsonValue*>& items) {
            auto classes = ParseAll<topology::DraDeviceClass>(
                items, "DeviceClass",
                [](const common::JsonValue& v) { return wire::ParseDeviceClass(v); });
            common::MutexLock lock(&mu_);
            store_.ReplaceClasses(std::move(classes));
            PublishLocked(kClasses, {});
          },
          [this](absl::string_view type, const common::JsonValue& object) {
            common::MutexLock lock(&mu_);
            if (type == "DELETED") {
              store_.DeleteClass(NamespaceAndName(object).name);
            } else if (absl::StatusOr<topology::DraDeviceClass> c = wire::ParseDeviceClass(object);
                       c.ok()) {
              store_.UpsertClass(*std::move(c));
            } else {
              Ignored("DeviceClass", c.status());
              return;
            }
            PublishLocked(kClasses, {});
          }};
    case kTemplates:
    case kKinds:
      break;
  }
  return {
      [this](const std::vector<const common::JsonValue*>& items) {
        auto templates = ParseAll<topology::DraClaim>(
            items, "ResourceClaimTemplate",
            [](const common::JsonValue& v) { return wire::ParseResourceClaimTemplate(v); });
        common::MutexLock lock(&mu_);
        store_.ReplaceTemplates(std::move(templates));
        PublishLocked(kTemplates, {});
      },
      [this](absl::string_view type, const common::JsonValue& object) {
        common::MutexLock lock(&mu_);
        if (type == "DELETED") {
          ObjectName n = NamespaceAndName(object);
          store_.DeleteTemplate(n.namespace_name, n.name);
        } else if (absl::StatusOr<topology::DraClaim> t = wire::ParseResourceClaimTemplate(object);
                   t.ok()) {
          store_.UpsertTemplate(*std::move(t));
        } else {
          Ignored("ResourceClaimTemplate", t.status());
          return;
        }
        PublishLocked(kTemplates, {});
      }};
}

void DraSource::PublishLocked(Kind kind, std::vector<topology::ClaimTransition> transitions) {
  listed_[kind] = true;
  for (topology::ClaimTransition& t : transitions) unpublished_.push_back(std::move(t));
  // Until every kind is listed a state would be partial (claims without the slices that say
  // which devices they hold), so the first publication waits for the last list.
  if (!std::all_of(std::begin(listed_), std::end(listed_), [](bool b) { return b; })) return;
  std::shared_ptr<const topology::DraState> next = store_.Build();
  Audit(unpublished_, *published_, *next);
  unpublished_.clear();
  published_ = next;
  state_.ReplaceDra(std::move(next));
  synced_.store(true);
}

void DraSource::Audit(const std::vector<topology::ClaimTransition>& transitions,
                      const topology::DraState& before, const topology::DraState& after) {
  if (transitions.empty() || !audit_ || (gate_ && !gate_())) return;
  std::shared_ptr<const topology::ModelState> current = state_.Current();
  for (const topology::ClaimTransition& t : transitions) {
    // A release names the devices as they were published while the claim held them.
    const bool allocated = t.kind == topology::ClaimTransition::Kind::kAllocated;
    audit_->Write(ClaimAuditEvent(t, allocated ? after : before, current.get()));
  }
}

}  // namespace kube
