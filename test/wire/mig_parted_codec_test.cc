#include "wire/mig_parted_codec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace wire {
namespace {

TEST(MigPartedCodecTest, ReadsMigManagersFormat) {
  absl::StatusOr<topology::MigPartedFile> f = ParseMigPartedConfig(R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  custom:
    - device-filter: ["0x233010DE", "0x233110DE"]
      devices: [0, 1]
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "3g.40gb": 1
    - device-filter: "0x20B010DE"
      devices: all
      mig-enabled: true
      mig-devices: {}
)");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Names(), (std::vector<std::string>{"all-disabled", "custom"}));
  const topology::MigPartedLayout* custom = f->Find("custom");
  ASSERT_NE(custom, nullptr);
  ASSERT_EQ(custom->entries.size(), 2u);
  EXPECT_FALSE(custom->entries[0].all_devices);
  EXPECT_EQ(custom->entries[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(custom->entries[0].device_filter.size(), 2u);
  EXPECT_EQ(custom->entries[0].mig_devices,
            (std::vector<std::pair<std::string, int>>{{"1g.10gb", 2}, {"3g.40gb", 1}}));
  EXPECT_EQ(custom->entries[1].device_filter, (std::vector<std::string>{"0x20B010DE"}));
  EXPECT_TRUE(custom->entries[1].all_devices);
  EXPECT_FALSE(f->Find("all-disabled")->entries[0].mig_enabled);
}

TEST(MigPartedCodecTest, ReadsThePlansMigPartedSection) {
  absl::StatusOr<topology::MigPartedFile> f = ParseMigPartedConfig(R"(summary: {}
migParted:
  version: v1
  mig-configs:
    gpu-tenancy-h100-a:
      - devices:
          - 0
        mig-enabled: true
        mig-devices:
          3g.40gb: 1
devicePlugin: {}
)");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->Names(), (std::vector<std::string>{"gpu-tenancy-h100-a"}));
}

TEST(MigPartedCodecTest, ErrorsNameTheField) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"version: v2\nmig-configs: {}\n", "version: expected v1"},
           {"version: v1\n", "mig-configs: expected a mapping"},
           {"version: v1\nmig-configs:\n  a: []\n", "mig-configs.a: expected a list"},
           {"version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: true\n",
            "mig-configs.a[0].devices: expected \"all\""},
           {"version: v1\nmig-configs:\n  a:\n    - devices: all\n",
            "mig-configs.a[0]: mig-enabled is required"},
           {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
            "      mig-devices:\n        1g.10gb: lots\n",
            "mig-configs.a[0].mig-devices.1g.10gb: expected a whole number"},
           {"version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
            "      gpus: 1\n",
            "mig-configs.a[0].gpus: unknown field"},
       }) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<topology::MigPartedFile> f = ParseMigPartedConfig(c.text);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.status().message().find(c.error), std::string::npos) << f.status();
  }
}

TEST(MigPartedCodecTest, ReadsMigManagersConfigMap) {
  absl::StatusOr<topology::MigPartedFile> f = ParseMigPartedConfigMap(
      R"({"kind":"ConfigMap","data":{"config.yaml":"version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"}})");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_NE(f->Find("all-disabled"), nullptr);
  EXPECT_FALSE(ParseMigPartedConfigMap(R"({"kind":"ConfigMap","data":{"a":"x","b":"y"}})").ok());
  absl::StatusOr<topology::MigPartedFile> bad =
      ParseMigPartedConfigMap(R"({"kind":"ConfigMap","data":{"config.yaml":"version: v3"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ConfigMap data config.yaml: version"), std::string::npos);
}

}  // namespace
}  // namespace wire
