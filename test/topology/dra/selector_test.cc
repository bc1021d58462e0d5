// DRA device selectors evaluated as kube-scheduler's allocator does: the NVIDIA classes and the
// forms a webhook injects against a full GPU and two MIG devices from a captured ResourceSlice,
// runtime errors and how && / || absorb them, semver ordering, the constructs outside the subset,
// and hostile input, which is never evaluated and never crashes.
#include "topology/dra/selector.h"

#include <string>
#include <vector>

#include "cel/parse.h"
#include "cel/semver.h"
#include "gtest/gtest.h"
#include "test/support/test_inputs.h"
#include "topology/dra/model.h"
#include "wire/dra_codec.h"

namespace topology {
namespace {

using cel::CelAst;
using cel::CelNode;
using cel::ParseCel;
using cel::Semver;

struct SelectorDevices {
  DraDevice gpu, mig_1g, mig_3g;
};

// The three devices of test/testdata/dra/list-resourceslices.v1.json (node-a: gpu-1, a
// 1g.10gb and a 3g.40gb), plus what newer drivers publish and the capture lacks: the PCI bus
// and versions on the full GPU.
const SelectorDevices& CapturedSelectorDevices() {
  static const SelectorDevices* devices = [] {
    auto* out = new SelectorDevices;
    absl::StatusOr<wire::DraObjects> parsed = wire::ParseDraList(
        testing_support::JsonOrFail(testing_support::Testdata("dra/list-resourceslices.v1.json")));
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) return out;
    for (const DraDevice& d : CurrentDevices(parsed->slices)) {
      if (d.name == "gpu-1") out->gpu = d;
      if (d.name == "gpu-0-mig-1g10gb-19-0") out->mig_1g = d;
      if (d.name == "gpu-0-mig-3g40gb-9-4") out->mig_3g = d;
    }
    out->gpu.attributes["resource.kubernetes.io/pciBusID"] = DraAttribute::String("0000:1b:00.0");
    out->gpu.attributes["gpu.nvidia.com/cudaComputeCapability"] = {DraAttribute::Kind::kVersion,
                                                                   "9.0.0"};
    out->gpu.attributes["gpu.nvidia.com/driverVersion"] = {DraAttribute::Kind::kVersion,
                                                           "570.124.6"};
    out->gpu.attributes["gpu.nvidia.com/numa"] = {DraAttribute::Kind::kInt, "", 1};
    out->gpu.attributes["gpu.nvidia.com/coherent"] = {DraAttribute::Kind::kBool, "", 0, true};
    return out;
  }();
  return *devices;
}

// One letter per device (gpu, 1g, 3g): M match, N no match, E error, X not evaluated.
char Letter(const SelectorResult& r) {
  switch (r.outcome) {
    case SelectorOutcome::kMatch:
      return 'M';
    case SelectorOutcome::kNoMatch:
      return 'N';
    case SelectorOutcome::kError:
      return 'E';
    case SelectorOutcome::kNotEvaluated:
      return 'X';
  }
  return '?';
}

std::string Letters(const std::string& expression) {
  const SelectorDevices& d = CapturedSelectorDevices();
  const CompiledSelector s = CompiledSelector::Compile(expression);
  std::string out;
  for (const DraDevice* device : {&d.gpu, &d.mig_1g, &d.mig_3g}) out += Letter(s.Evaluate(*device));
  return out;
}

struct SelectorRow {
  const char* name;
  const char* expression;
  const char* want;  // per device: gpu, 1g.10gb, 3g.40gb
};

void RunSelectorRows(const std::vector<SelectorRow>& rows) {
  ASSERT_FALSE(CapturedSelectorDevices().gpu.name.empty());
  for (const SelectorRow& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(Letters(row.expression), row.want) << row.expression;
  }
}

TEST(DraSelectorTest, NvidiaDeviceClasses) {
  RunSelectorRows({
      {"gpu.nvidia.com",
       "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
       "MNN"},
      {"mig.nvidia.com",
       "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
       "NMM"},
      {"vfio.gpu.nvidia.com",
       "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
       "NNN"},
      {"compute-domain class, other driver",
       "device.driver == 'compute-domain.nvidia.com' && "
       "device.attributes['compute-domain.nvidia.com'].type == 'daemon'",
       "NNN"},
      {"compute-domain channel: false absorbs the missing key",
       "device.driver == 'compute-domain.nvidia.com' && "
       "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
       "device.attributes['compute-domain.nvidia.com'].id == 0",
       "NNN"},
  });
}

TEST(DraSelectorTest, InjectedForms) {
  RunSelectorRows({
      {"profile with the in guard",
       R"("profile" in device.attributes["gpu.nvidia.com"] && )"
       R"(device.attributes["gpu.nvidia.com"].profile in ["1g.10gb","2g.20gb"])",
       "NMN"},
      {"full GPUs only",
       R"(device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu")",
       "MNN"},
      {"memory cap 40Gi",
       R"("memory" in device.capacity["gpu.nvidia.com"] && )"
       R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) <= 0)",
       "NMM"},
      {"memory cap 20Gi",
       R"("memory" in device.capacity["gpu.nvidia.com"] && )"
       R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) <= 0)",
       "NMN"},
      {"SM cap: a full GPU publishes no multiprocessors",
       R"("multiprocessors" in device.capacity["gpu.nvidia.com"] && )"
       R"(device.capacity["gpu.nvidia.com"].multiprocessors.compareTo(quantity("60")) <= 0)",
       "NMM"},
      {"architecture", R"(device.attributes["gpu.nvidia.com"].architecture == "Hopper")", "MMM"},
      {"compute capability",
       R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability)"
       R"(.isGreaterThan(semver("8.9.0")))",
       "MMM"},
      {"compute capability too old",
       R"(device.attributes["gpu.nvidia.com"].cudaComputeCapability)"
       R"(.isLessThan(semver("9.0.0")))",
       "NNN"},
      {"PCI allow-list: MIG devices of the capture lack the attribute",
       R"(device.attributes["resource.kubernetes.io"].pciBusID in ["0000:1b:00.0","0000:3b:00.0"])",
       "MEE"},
      {"PCI allow-list with the guard",
       R"("pciBusID" in device.attributes["resource.kubernetes.io"] && )"
       R"(device.attributes["resource.kubernetes.io"].pciBusID in ["0000:1b:00.0"])",
       "MNN"},
      {"single-quoted index and field",
       "device.attributes['gpu.nvidia.com']['profile'] == '3g.40gb'", "ENM"},
      {"driver version",
       R"(device.attributes["gpu.nvidia.com"].driverVersion.compareTo()"
       R"(semver("570.100.0")) >= 0)",
       "MMM"},
      {"product, lowered",
       R"(device.attributes["gpu.nvidia.com"].productName.lowerAscii())"
       R"(.contains("h100"))",
       "MMM"},
  });
}

TEST(DraSelectorTest, ValuesAndOperators) {
  RunSelectorRows({
      {"int attribute", "device.attributes['gpu.nvidia.com'].numa == 1", "MEE"},
      {"int ordering", "device.attributes['gpu.nvidia.com'].numa >= 1 ", "MEE"},
      {"bool attribute", "device.attributes['gpu.nvidia.com'].coherent", "MEE"},
      {"bool negated", "!device.attributes['gpu.nvidia.com'].coherent", "NEE"},
      {"string ordering", "device.attributes['gpu.nvidia.com'].type < 'h'", "MNN"},
      {"different types are not equal", "device.attributes['gpu.nvidia.com'].type == 1", "NNN"},
      {"different types do not order", "device.attributes['gpu.nvidia.com'].type < 1", "EEE"},
      {"!= across types", "device.driver != 0", "MMM"},
      {"unknown domain is an empty map", "size(device.attributes['example.com']) == 0", "MMM"},
      {"domain in attributes", "'resource.kubernetes.io' in device.attributes", "MNN"},
      {"size of a domain", "device.attributes['gpu.nvidia.com'].size() > 6", "MMM"},
      {"has()", "has(device.attributes['gpu.nvidia.com'].profile)", "NMM"},
      {"ternary",
       "device.attributes['gpu.nvidia.com'].type == 'gpu' ? true : "
       "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'",
       "MNM"},
      {"quantity equality is by value",
       "device.capacity['gpu.nvidia.com'].memory == "
       "quantity('40448Mi')",
       "NNM"},
      {"startsWith / endsWith",
       "device.attributes['gpu.nvidia.com'].uuid.startsWith('MIG-') && "
       "device.attributes['gpu.nvidia.com'].uuid.endsWith('df9')",
       "NNM"},
      {"escapes", R"("gpu\x2e\u006evidia\056com" == device.driver && '\'' == "'")", "MMM"},
      {"raw and triple-quoted strings", R"(r'\d' == "\\d" && """a"b""" == 'a"b')", "MMM"},
      {"size counts code points", "size('h\u00e9') == 2", "MMM"},
      {"list index", "[1, 2, 3][1] == 2 && -9223372036854775808 < 0", "MMM"},
      {"semver accessors", "device.attributes['gpu.nvidia.com'].driverVersion.minor() == 124",
       "MMM"},
      {"isQuantity / isSemver", "isQuantity('1Gi') && !isSemver('1.0')", "MMM"},
      {"comments and newlines", "// a comment\ndevice.driver ==\n 'gpu.nvidia.com'", "MMM"},
  });
}

// device.allowMultipleAllocations (DRAConsumableCapacity) is the device's bool, false when the
// slice does not publish it, as the allocator's CEL environment has it: the selector the webhook
// gives an untrusted tenant keeps the multi-allocatable GPU of a captured-shape v1.36 slice out
// and the plain one in.
TEST(DraSelectorTest, AllowMultipleAllocations) {
  absl::StatusOr<wire::DraObjects> parsed = wire::ParseDraList(testing_support::JsonOrFail(
      testing_support::Testdata("dra/consumable-list-resourceslices.v1.json")));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const std::vector<DraDevice> devices = CurrentDevices(parsed->slices);
  ASSERT_EQ(devices.size(), 2u);
  const DraDevice& shared = devices[0];
  const DraDevice& whole = devices[1];
  struct Row {
    const char* expression;
    SelectorOutcome shared, whole;
  };
  const std::vector<Row> rows = {
      {"device.allowMultipleAllocations", SelectorOutcome::kMatch, SelectorOutcome::kNoMatch},
      {"!device.allowMultipleAllocations", SelectorOutcome::kNoMatch, SelectorOutcome::kMatch},
      {"device.allowMultipleAllocations == false", SelectorOutcome::kNoMatch,
       SelectorOutcome::kMatch},
      {"device.allowMultipleAllocations == 'true'", SelectorOutcome::kNoMatch,
       SelectorOutcome::kNoMatch},
      {"device.allowMultipleAllocations.x", SelectorOutcome::kError, SelectorOutcome::kError},
      {"device.driver == 'gpu.nvidia.com' && !device.allowMultipleAllocations",
       SelectorOutcome::kNoMatch, SelectorOutcome::kMatch},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.expression);
    const CompiledSelector s = CompiledSelector::Compile(row.expression);
    EXPECT_TRUE(s.supported()) << s.unsupported_reason();
    EXPECT_EQ(s.Evaluate(shared).outcome, row.shared);
    EXPECT_EQ(s.Evaluate(whole).outcome, row.whole);
  }
  // The MIG and full GPU devices of the older capture publish no such field: false.
  EXPECT_EQ(Letters("!device.allowMultipleAllocations"), "MMM");
}

TEST(DraSelectorTest, ErrorsAndAbsorption) {
  RunSelectorRows({
      {"missing key without guard", "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
       "EMN"},
      {"missing key with guard",
       "'profile' in device.attributes['gpu.nvidia.com'] && "
       "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'",
       "NMN"},
      {"false && error", "false && device.attributes['x.io'].y", "NNN"},
      {"error && false", "device.attributes['x.io'].y && false", "NNN"},
      {"true && error", "true && device.attributes['x.io'].y", "EEE"},
      {"true || error", "true || device.attributes['x.io'].y", "MMM"},
      {"error || true", "device.attributes['x.io'].y || true", "MMM"},
      {"false || error", "false || device.attributes['x.io'].y", "EEE"},
      {"non-bool operand is an error", "1 && true", "EEE"},
      {"non-bool operand absorbed", "1 && false", "NNN"},
      {"invalid quantity",
       "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('4 G')) > 0", "EEE"},
      {"invalid semver", "semver('1.0') == semver('1.0.0')", "EEE"},
      {"quantity against semver", "quantity('1').compareTo(semver('1.0.0')) == 0", "EEE"},
      {"not a bool", "device.driver", "EEE"},
      {"index out of range", "[1][3] == 1", "EEE"},
      {"field of a string", "device.driver.x == 1", "EEE"},
      {"ternary on a string", "'a' ? true : false", "EEE"},
  });
  const SelectorDevices& d = CapturedSelectorDevices();
  SelectorResult r = EvaluateSelector("device.attributes['gpu.nvidia.com'].profile == 'x'", d.gpu);
  EXPECT_EQ(r.outcome, SelectorOutcome::kError);
  EXPECT_EQ(r.detail, "no such key: profile");
  r = EvaluateSelector("device.attributes['gpu.nvidia.com'].type < 1", d.gpu);
  EXPECT_EQ(r.detail, "no such overload");
}

TEST(DraSelectorTest, ACallOutsideTheSubsetKeepsTheTreeForReadersOfItsShape) {
  const CelAst ast = ParseCel("device.driver == 'x' && device.driver.matches('y')");
  ASSERT_GE(ast.root, 0);
  EXPECT_EQ(ast.nodes[ast.root].kind, CelNode::Kind::kAnd);
  EXPECT_EQ(ast.unsupported, "function matches") << "and so not evaluated";
  EXPECT_LT(ParseCel("device.driver.matches('y') && (").root, 0) << "a syntax error keeps none";
  EXPECT_LT(ParseCel("device.driver.matches('y') && 1 + 1 == 2").root, 0)
      << "arithmetic stops the parse";
}

TEST(DraSelectorTest, NotEvaluatedNamesTheConstruct) {
  struct Row {
    const char* expression;
    const char* detail;
  };
  const std::vector<Row> rows = {
      {R"(device.attributes["gpu.nvidia.com"].productName.lowerAscii().matches("^.*h100.*$"))",
       "function matches"},
      {"device.attributes['gpu.nvidia.com'].exists(k, k == 'x')", "macro exists"},
      {"cel.bind(x, 1, x == 1)", "cel.bind"},
      {"[1, 2].all(x, x > 0)", "macro all"},
      {"device.capacity['gpu.nvidia.com'].memory.isInteger()", "function isInteger"},
      {"1 + 1 == 2", "arithmetic operator +"},
      {"2 * 3 == 6", "arithmetic operator *"},
      {"1.5 > 1", "double literal"},
      {"1u == 1u", "unsigned int literal"},
      {"b'x' == b'x'", "bytes literal"},
      {"{'a': 1}['a'] == 1", "map literal"},
      {"device == null", "device used as a value"},
      {"request.name == 'x'", "undeclared reference to 'request'"},
      {"string(1) == '1'", "function string"},
      {"semver('1.0', true) == semver('1.0.0')", "function semver with 2 arguments"},
      // The first construct outside the subset names it, whatever follows.
      {"device.driver.matches('x') && 1 + 1 == 2", "function matches"},
      {"device.driver.matches('x') && (", "function matches"},
  };
  const DraDevice& gpu = CapturedSelectorDevices().gpu;
  for (const Row& row : rows) {
    SCOPED_TRACE(row.expression);
    const CompiledSelector s = CompiledSelector::Compile(row.expression);
    EXPECT_FALSE(s.supported());
    SelectorResult r = s.Evaluate(gpu);
    EXPECT_EQ(r.outcome, SelectorOutcome::kNotEvaluated);
    EXPECT_EQ(r.detail, row.detail);
    EXPECT_EQ(s.expression(), row.expression);
  }
}

TEST(DraSelectorTest, GarbageIsNotEvaluatedNeverACrash) {
  std::vector<std::string> inputs = {
      "",
      "(",
      "((device.driver == 'gpu.nvidia.com')",
      "device.driver == 'gpu.nvidia.com'))",
      "device.driver == 'unterminated",
      "device.driver == \"bad \\q escape\"",
      "'\\u12'",
      "'\\ud800'",
      "device.",
      "device.attributes[",
      "a b c",
      "== ==",
      "device.driver = 'x'",
      "99999999999999999999 == 1",
      "9223372036854775808 == 1",
      "true ? 1",
      "'\n'",
      "\x01\xff",
      "has(1)",
      "in",
      "[1, 2",
      std::string(1 << 20, 'a'),
      std::string(kMaxSelectorBytes + 1, ' ') + "true",
      std::string(5000, '(') + "true" + std::string(5000, ')'),
      std::string(3000, '!') + "true",
      std::string(3000, '-') + "1 == 1",
      "[" + std::string(3000, '[') + std::string(3000, ']') + "]",
  };
  std::string chain = "true";
  for (int i = 0; i < 1000; ++i) chain += " == true";
  inputs.push_back(chain);
  std::string methods = "device.driver";
  for (int i = 0; i < 1000; ++i) methods += ".lowerAscii()";
  inputs.push_back(methods + " == 'x'");
  const DraDevice& gpu = CapturedSelectorDevices().gpu;
  for (const std::string& input : inputs) {
    SCOPED_TRACE(input.substr(0, 60));
    SelectorResult r = EvaluateSelector(input, gpu);
    EXPECT_EQ(r.outcome, SelectorOutcome::kNotEvaluated);
    EXPECT_FALSE(r.detail.empty());
  }
  // Long but flat chains are fine: && and || do not nest.
  std::string flat = "true";
  for (int i = 0; i < 250; ++i) flat += " && device.driver == 'gpu.nvidia.com'";
  EXPECT_EQ(EvaluateSelector(flat, gpu).outcome, SelectorOutcome::kMatch);
  std::string nested = std::string(20, '(') + "true" + std::string(20, ')');
  EXPECT_EQ(EvaluateSelector(nested, gpu).outcome, SelectorOutcome::kMatch);
}

TEST(DraSelectorTest, SemverOrdering) {
  // Each is older than the next, per semver 2.0.0 section 11.
  const std::vector<std::string> ordered = {
      "1.0.0-alpha",  "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
      "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0",
      "1.0.1",        "1.2.0",         "1.10.0",           "2.0.0",
      "10.0.0",
  };
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    SCOPED_TRACE(ordered[i] + " < " + ordered[i + 1]);
    std::optional<Semver> a = Semver::Parse(ordered[i]), b = Semver::Parse(ordered[i + 1]);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(Semver::Compare(*a, *b), -1);
    EXPECT_EQ(Semver::Compare(*b, *a), 1);
    EXPECT_EQ(Letters("semver('" + ordered[i] + "').isLessThan(semver('" + ordered[i + 1] + "'))"),
              "MMM");
  }
  EXPECT_EQ(Semver::Compare(*Semver::Parse("1.0.0+build.1"), *Semver::Parse("1.0.0+other")), 0);
  EXPECT_EQ(Semver::Parse("1.2.3-rc.1+b.5")->ToString(), "1.2.3-rc.1+b.5");
  for (const char* bad : {"1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "1..0",
                          "1.0.0-a..b", "18446744073709551616.0.0", ""}) {
    EXPECT_FALSE(Semver::Parse(bad).has_value()) << bad;
  }
  EXPECT_EQ(Letters("device.attributes['gpu.nvidia.com'].driverVersion == semver('570.124.6')"),
            "MMM");
  EXPECT_EQ(Letters("semver('570.124.6').compareTo(semver('570.86.16')) == 1"), "MMM");
}

TEST(DraSelectorTest, DeviceMatchesClassThenRequest) {
  const SelectorDevices& d = CapturedSelectorDevices();
  DraDeviceClass mig{"mig.nvidia.com",
                     {"device.driver == 'gpu.nvidia.com' && "
                      "device.attributes['gpu.nvidia.com'].type == 'mig'"},
                     ""};
  const std::vector<std::string> profile = {
      "device.attributes['gpu.nvidia.com'].profile == "
      "'1g.10gb'"};
  // The class runs first, so the request never sees the GPU, which has no profile.
  EXPECT_EQ(DeviceMatches(d.gpu, &mig, profile).outcome, SelectorOutcome::kNoMatch);
  EXPECT_EQ(DeviceMatches(d.mig_1g, &mig, profile).outcome, SelectorOutcome::kMatch);
  EXPECT_EQ(DeviceMatches(d.mig_3g, &mig, profile).outcome, SelectorOutcome::kNoMatch);
  EXPECT_EQ(DeviceMatches(d.mig_1g, &mig, {}).outcome, SelectorOutcome::kMatch);

  DraDeviceClass any{"any", {}, ""};
  SelectorResult r = DeviceMatches(d.gpu, &any, profile);
  EXPECT_EQ(r.outcome, SelectorOutcome::kError);
  EXPECT_EQ(r.detail, "no such key: profile");

  // The first selector that is not true decides.
  r = DeviceMatches(d.mig_1g, &mig, {"device.driver.matches('x')", "false"});
  EXPECT_EQ(r.outcome, SelectorOutcome::kNotEvaluated);
  EXPECT_EQ(r.detail, "function matches");
  EXPECT_EQ(DeviceMatches(d.mig_1g, &mig, {"false", "device.driver.matches('x')"}).outcome,
            SelectorOutcome::kNoMatch);
  EXPECT_EQ(DeviceMatches(d.mig_1g, &mig, {"device.attributes['x.io'].y", "false"}).outcome,
            SelectorOutcome::kError);

  r = DeviceMatches(d.gpu, nullptr, {});
  EXPECT_EQ(r.outcome, SelectorOutcome::kNotEvaluated);
  EXPECT_EQ(r.detail, "device class not found");

  const std::vector<CompiledSelector> compiled = CompileSelectors(mig.selectors);
  EXPECT_EQ(DeviceMatchesCompiled(d.mig_3g, compiled).outcome, SelectorOutcome::kMatch);
  EXPECT_EQ(DeviceMatchesCompiled(d.gpu, compiled).outcome, SelectorOutcome::kNoMatch);
}

TEST(DraSelectorTest, UnqualifiedKeysBelongToTheDriver) {
  DraDevice d;
  d.driver = "example.com";
  d.attributes["model"] = DraAttribute::String("x1");
  d.capacity["example.com/slots"] = Quantity::FromUnits(4);
  EXPECT_EQ(EvaluateSelector("device.attributes['example.com'].model == 'x1'", d).outcome,
            SelectorOutcome::kMatch);
  EXPECT_EQ(EvaluateSelector("'example.com' in device.attributes", d).outcome,
            SelectorOutcome::kMatch);
  EXPECT_EQ(EvaluateSelector("device.capacity['example.com'].slots.isGreaterThan(quantity('3'))", d)
                .outcome,
            SelectorOutcome::kMatch);
}

TEST(DraSelectorTest, TheMacrosAndNullOfPlainDataStayOutside) {
  // The macros and null stay outside the device selector subset.
  DraDevice device;
  device.driver = "gpu.nvidia.com";
  EXPECT_EQ(EvaluateSelector("[1].exists(x, x == 1)", device).detail, "macro exists");
  EXPECT_EQ(EvaluateSelector("device.driver != null", device).detail, "null");
  EXPECT_EQ(EvaluateSelector("object.spec == 1", device).detail,
            "undeclared reference to 'object'");
}

}  // namespace
}  // namespace topology
