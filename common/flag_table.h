// A command's flags declared once, as a table that both parses argv and writes the --help
// text, so the two never disagree. Flags are "--name value", "--name=value" or, where a flag
// has a one-letter form, "-x value"; anything not starting with '-' (and "-" itself, stdin) is
// positional. Unknown flags, a value given to a switch and a flag missing its value are
// errors naming the flag: a typo never silently changes behaviour. "--help" and "-h" are
// always accepted. Values are strings here; each command converts them into its typed options
// and names the flag when a value is wrong.
//
//   const common::FlagTable kTable{
//       {"gpu-tenancy plan --input FILE [--policy FILE] [-o FORMAT]"},
//       "Sizes each workload's GPU memory ...",
//       {{"input", "FILE", "the workloads and the fleet"},
//        {"output", "FORMAT", "text, yaml or json (default text)", 'o'}}};
//   ASSIGN_OR_RETURN(common::ParsedFlags flags, kTable.Parse(args));
//   if (flags.Has("help")) std::cout << kTable.Usage();
#ifndef GPU_TENANCY_COMMON_FLAG_TABLE_H_
#define GPU_TENANCY_COMMON_FLAG_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace common {

struct Flag {
  absl::string_view name;   // the long form, --name
  absl::string_view value;  // what the value is ("FILE", "30s"); empty for a switch
  absl::string_view help;   // what it does; '\n' continues it on another line
  char short_name = 0;      // also -x, when set
};

// Each flag given, under its long name, whichever form the command line used.
struct ParsedFlags {
  std::map<std::string, std::vector<std::string>> values;  // repeated flags keep every value
  std::set<std::string> switches;                          // switches that were given
  std::vector<std::string> positional;

  bool Has(const std::string& name) const { return values.count(name) || switches.count(name); }
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = values.find(name);
    return it == values.end() ? fallback : it->second.back();
  }
};

struct FlagTable {
  std::vector<absl::string_view> usage;  // one line per way to call the command
  absl::string_view about;               // what the command does, after the usage lines
  std::vector<Flag> flags;               // --help is implied

  [[nodiscard]] absl::StatusOr<ParsedFlags> Parse(const std::vector<std::string>& args) const;
  // For a command's entry point: parses `args` into `flags`, or gives the exit code to stop
  // with: 0 once --help has printed the usage to stdout, 2 once Refuse has.
  [[nodiscard]] std::optional<int> ParseOrExit(const std::vector<std::string>& args,
                                               ParsedFlags& flags) const;
  // Prints "error: <message>" and the usage to stderr; returns 2, the exit code of bad usage.
  int Refuse(const absl::Status& error) const;
  // "usage: ...", the about text, then one aligned line per flag.
  std::string Usage() const;
  // The flag with this long name, or null.
  const Flag* Find(absl::string_view name) const;
};

// The flag's value as a number from `low` to `high`, or `fallback` when it was not given; an
// InvalidArgument naming the flag and the range otherwise.
[[nodiscard]] absl::StatusOr<double> NumberFlag(const ParsedFlags& flags, const std::string& name,
                                                double fallback, double low, double high);
[[nodiscard]] absl::StatusOr<int64_t> IntFlag(const ParsedFlags& flags, const std::string& name,
                                              int64_t fallback, int64_t low, int64_t high);
// The same for a duration ("90s", "500ms", "2h"): "--NAME takes a duration such as EXAMPLE
// (LOW..HIGH)"; an infinite `high` reads "(at least LOW)".
[[nodiscard]] absl::StatusOr<absl::Duration> DurationFlag(const ParsedFlags& flags,
                                                          const std::string& name,
                                                          absl::Duration fallback,
                                                          absl::Duration low, absl::Duration high,
                                                          absl::string_view example);

}  // namespace common

#endif  // GPU_TENANCY_COMMON_FLAG_TABLE_H_
