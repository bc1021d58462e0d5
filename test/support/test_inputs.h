// Test support: what a test reads as input, as strings and documents. Files by path, files
// under test/testdata and the repository's own sources (through the GT_TESTDATA_DIR and
// GT_SOURCE_DIR definitions every test binary gets), and JSON texts parsed as the product
// parses them. Header-only, so test binaries that link no support library can use it.
#ifndef GPU_TENANCY_TEST_SUPPORT_TEST_INPUTS_H_
#define GPU_TENANCY_TEST_SUPPORT_TEST_INPUTS_H_

#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace testing_support {

// The file's bytes; "" when it cannot be opened (for files a test expects may be missing).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The file's bytes, and a test failure naming it when it cannot be opened.
inline std::string ReadFileOrFail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

#ifdef GT_TESTDATA_DIR
// test/testdata/<relative>, which must exist.
inline std::string Testdata(absl::string_view relative) {
  return ReadFileOrFail(absl::StrCat(GT_TESTDATA_DIR, "/", relative));
}
#endif

#ifdef GT_SOURCE_DIR
// A file of the repository, <relative> to its root, which must exist.
inline std::string SourceFile(absl::string_view relative) {
  return ReadFileOrFail(absl::StrCat(GT_SOURCE_DIR, "/", relative));
}
#endif

// `text` parsed by common::ParseJson; an empty document and a test failure when it is not JSON.
inline rapidjson::Document JsonOrFail(absl::string_view text) {
  absl::StatusOr<rapidjson::Document> doc = common::ParseJson(text);
  EXPECT_TRUE(doc.ok()) << doc.status() << " in " << text.substr(0, 300);
  if (!doc.ok()) return rapidjson::Document();
  return std::move(doc).value();
}

}  // namespace testing_support

#endif  // GPU_TENANCY_TEST_SUPPORT_TEST_INPUTS_H_
