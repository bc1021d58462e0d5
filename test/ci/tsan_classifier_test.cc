// .ci/classify-tsan.awk, which decides whether a ThreadSanitizer report fails the CI's tsan
// stage, run on captured and hand-made reports. The reports' repository root is
// /src/gpu-tenancy, passed as ROOT the way .ci/sanitizers passes the checkout.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "test/support/serve_process.h"
#include "test/support/shell.h"

namespace {

using testing_support::CommandResult;
using testing_support::RunShell;
using testing_support::ShellQuote;
using testing_support::TempDir;

struct Sorted {
  int exit_code = -1;
  std::string counts;     // what the script prints: "<ours> <libraries>"
  std::string ours;       // the reports it counted as ours
  std::string libraries;  // the reports it left to the libraries
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Capture(const std::string& name) {
  return absl::StrCat(GT_TESTDATA_DIR, "/ci/tsan/", name);
}

// Runs the classifier over log files, as .ci/sanitizers does over build-tsan/sanitizer-logs/.
Sorted Classify(const std::vector<std::string>& log_paths) {
  TempDir out;
  std::vector<std::string> words;
  for (const std::string& path : log_paths) words.push_back(ShellQuote(path));
  CommandResult run = RunShell(
      absl::StrCat("awk -v ROOT=/src/gpu-tenancy -v OURS=", ShellQuote(out.File("ours.txt")),
                   " -v LIB=", ShellQuote(out.File("libraries.txt")), " -f ",
                   ShellQuote(absl::StrCat(GT_SOURCE_DIR, "/.ci/classify-tsan.awk")), " ",
                   absl::StrJoin(words, " ")));
  return {run.exit_code, run.out, ReadAll(out.File("ours.txt")), ReadAll(out.File("libraries.txt")),
          run.err};
}

TEST(TsanClassifierTest, SortsEachReport) {
  struct Case {
    std::string log;
    bool ours;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"library_static.log", false,
       "httplib's static std::set, filled by one worker and read by another: every frame is in "
       "libcpp-httplib"},
      {"library_static_unrestored.log", false,
       "the same race with the filling write's stack lost; the thread that allocated the block "
       "in httplib made that write"},
      {"library_regex_template_copy.log", false,
       "httplib's static std::regex, where the racing std:: frames are copies without line info "
       "that a static library brought into the test binary"},
      {"unrestored_other_thread.log", true,
       "a lost stack from a thread other than the allocating one could be anything"},
      {"unrestored_our_allocation.log", true, "the block was allocated by our handler"},
      {"race_in_our_code.log", true, "one access is in kube/cluster_state.cc"},
      {"deadlock_in_our_code.log", true, "a lock-order inversion through our frames"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.log + ": " + c.why);
    Sorted sorted = Classify({Capture(c.log)});
    ASSERT_EQ(sorted.exit_code, 0) << sorted.err;
    EXPECT_EQ(sorted.counts, c.ours ? "1 0" : "0 1");
    const std::string& kept = c.ours ? sorted.ours : sorted.libraries;
    EXPECT_NE(kept.find("WARNING: ThreadSanitizer: "), std::string::npos) << kept;
    EXPECT_EQ((c.ours ? sorted.libraries : sorted.ours), "");
  }
}

// One process's log holds every report it found, one after another: a report's sections and
// lost stacks must not carry over into the next.
TEST(TsanClassifierTest, ReportsInOneLogAreJudgedApart) {
  std::string combined;
  for (const char* log :
       {"unrestored_our_allocation.log", "library_static_unrestored.log", "race_in_our_code.log",
        "library_static.log", "unrestored_other_thread.log"}) {
    combined += ReadAll(Capture(log));
  }
  // Each capture is framed by separator lines; TSan writes one separator between reports.
  const std::string kSeparator = "==================\n";
  for (size_t at; (at = combined.find(kSeparator + kSeparator)) != std::string::npos;) {
    combined.replace(at, 2 * kSeparator.size(), kSeparator);
  }
  TempDir dir;
  std::ofstream(dir.File("tsan.1234")) << combined;
  Sorted sorted = Classify({dir.File("tsan.1234")});
  ASSERT_EQ(sorted.exit_code, 0) << sorted.err;
  EXPECT_EQ(sorted.counts, "3 2");
}

TEST(TsanClassifierTest, AnEmptyLogHoldsNoReports) {
  TempDir dir;
  std::ofstream(dir.File("tsan.1")) << "";
  Sorted sorted = Classify({dir.File("tsan.1")});
  ASSERT_EQ(sorted.exit_code, 0) << sorted.err;
  EXPECT_EQ(sorted.counts, "0 0");
}

}  // namespace
