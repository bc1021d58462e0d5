// server::FileWatcher: each way a watched file changes (contents, only the timestamp, a rename
// over it, the Secret-volume symlink swap, deletion, creation, any of several paths) gives a
// callback, one per change, after the change has held for one more poll; the baseline is taken
// when the watcher is made; and destroying it does not wait out the poll interval. Waits are
// bounded; the only timing assertion is a lower bound (a settle poll can only make it later).
#include "server/file_watch.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/support/serve_process.h"

namespace server {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "<missing>";
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Replaces the file in one rename(2), so no poll can see it half written.
void Replace(const std::string& path, const std::string& text) {
  Write(path + ".next", text);
  std::filesystem::rename(path + ".next", path);
}

// Sets a file's modification time to `seconds` past the epoch, leaving its contents alone.
void SetMtime(const std::string& path, time_t seconds) {
  timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

// What the callbacks saw: one entry per call, made by `read` on the watcher's thread.
class Calls {
 public:
  explicit Calls(std::function<std::string()> read) : read_(std::move(read)) {}
  std::function<void()> Callback() {
    return [this] {
      std::string seen = read_();
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(std::move(seen));
      at_.push_back(Steady::now());
      changed_.notify_all();
    };
  }
  // True once there were at least `n` calls (within 10 s).
  bool AwaitCount(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return seen_.size() >= n; });
  }
  std::vector<std::string> seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  Steady::time_point at(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return at_.at(i);
  }

 private:
  std::function<std::string()> read_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> seen_;
  std::vector<Steady::time_point> at_;
};

TEST(FileWatcherTest, EachKindOfChangeIsSeen) {
  struct Row {
    const char* name;
    // Lays out `dir` and returns the watched paths.
    std::function<std::vector<std::string>(const std::string& dir)> before;
    std::function<void(const std::string& dir)> change;
  };
  auto one_file = [](const std::string& dir) {
    Write(dir + "/f", "old");
    SetMtime(dir + "/f", 1'000'000);
    return std::vector<std::string>{dir + "/f"};
  };
  // A Secret volume as kubelet keeps it: f -> ..data/f, ..data -> ..gen1.
  auto secret_volume = [](const std::string& dir) {
    fs::create_directories(dir + "/..gen1");
    Write(dir + "/..gen1/f", "old");
    fs::create_directory_symlink("..gen1", dir + "/..data");
    fs::create_symlink("..data/f", dir + "/f");
    return std::vector<std::string>{dir + "/f"};
  };
  const Row rows[] = {
      {"new contents", one_file, [](const std::string& d) { Write(d + "/f", "new contents"); }},
      {"same size and inode, another timestamp", one_file,
       [](const std::string& d) { SetMtime(d + "/f", 2'000'000); }},
      {"renamed over", one_file,
       [](const std::string& d) {
         Write(d + "/f.tmp", "old");
         SetMtime(d + "/f.tmp", 1'000'000);  // same size and time: only the inode differs
         fs::rename(d + "/f.tmp", d + "/f");
       }},
      {"symlink swap", secret_volume,
       [](const std::string& d) {
         fs::create_directories(d + "/..gen2");
         Write(d + "/..gen2/f", "new");
         fs::create_directory_symlink("..gen2", d + "/..data_tmp");
         fs::rename(d + "/..data_tmp", d + "/..data");
       }},
      {"deleted", one_file, [](const std::string& d) { fs::remove(d + "/f"); }},
      {"created", [](const std::string& d) { return std::vector<std::string>{d + "/later"}; },
       [](const std::string& d) { Write(d + "/later", "x"); }},
      {"the second of two paths",
       [&](const std::string& d) {
         Write(d + "/other", "same");
         return std::vector<std::string>{d + "/other", one_file(d)[0]};
       },
       [](const std::string& d) { Write(d + "/f", "changed"); }},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    testing_support::TempDir dir;
    std::vector<std::string> paths = row.before(dir.path());
    Calls calls([] { return std::string(); });
    FileWatcher watcher(paths, milliseconds(20), calls.Callback());
    row.change(dir.path());  // at once: the baseline is from construction, not thread start
    EXPECT_TRUE(calls.AwaitCount(1)) << "change not seen";
  }
}

TEST(FileWatcherTest, OneCallbackPerChangeAndEachSeesTheChangedState) {
  testing_support::TempDir dir;
  const std::string path = dir.File("policy.yaml");
  Write(path, "v0");
  Calls calls([&] { return Read(path); });
  FileWatcher watcher({path}, milliseconds(20), calls.Callback());
  for (const char* version : {"v1", "v22", "v333"}) {
    SCOPED_TRACE(version);
    size_t before = calls.seen().size();
    Replace(path, version);
    ASSERT_TRUE(calls.AwaitCount(before + 1));
    // A second call for the same change, or one before it, would have seen an older version.
    EXPECT_EQ(calls.seen().back(), version);
  }
  EXPECT_EQ(calls.seen(), (std::vector<std::string>{"v1", "v22", "v333"}));
}

TEST(FileWatcherTest, APairWrittenTogetherIsReportedOnceItHasSettled) {
  testing_support::TempDir dir;
  const std::string cert = dir.File("tls.crt");
  const std::string key = dir.File("tls.key");
  Write(cert, "cert-1");
  Write(key, "key-1");
  const milliseconds interval(300);
  Calls calls([&] { return Read(cert) + "+" + Read(key); });
  FileWatcher watcher({cert, key}, interval, calls.Callback());
  Replace(cert, "cert-2");
  Replace(key, "key-2");
  Steady::time_point written = Steady::now();
  ASSERT_TRUE(calls.AwaitCount(1));
  EXPECT_EQ(calls.seen()[0], "cert-2+key-2") << "a half-written pair was picked up";
  // The poll that saw the change is followed by one more before the callback.
  EXPECT_GE(calls.at(0) - written, interval);
}

TEST(FileWatcherTest, DestroyingItDoesNotWaitOutTheInterval) {
  testing_support::TempDir dir;
  Write(dir.File("f"), "x");
  Calls calls([] { return std::string(); });
  auto watcher = std::make_unique<FileWatcher>(std::vector<std::string>{dir.File("f")},
                                               std::chrono::hours(1), calls.Callback());
  Steady::time_point start = Steady::now();
  watcher.reset();
  EXPECT_LT(Steady::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(calls.seen().empty());
}

}  // namespace
}  // namespace server
