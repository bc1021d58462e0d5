#include "common/flag_table.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace common {
namespace {

constexpr Flag kHelp{"help", "", "print this help and exit", 'h'};

// The flag spelt `name` after its dashes: a long name, or a one-letter form.
const Flag* Lookup(const FlagTable& table, absl::string_view name) {
  if (name == kHelp.name || (name.size() == 1 && name[0] == kHelp.short_name)) return &kHelp;
  for (const Flag& f : table.flags) {
    if (f.name == name || (name.size() == 1 && f.short_name == name[0])) return &f;
  }
  return nullptr;
}

std::string LeftColumn(const Flag& f) {
  std::string out = f.short_name ? absl::StrCat("-", std::string(1, f.short_name), ", --", f.name)
                                 : absl::StrCat("    --", f.name);
  if (!f.value.empty()) absl::StrAppend(&out, " ", f.value);
  return out;
}

}  // namespace

const Flag* FlagTable::Find(absl::string_view name) const {
  for (const Flag& f : flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::StatusOr<ParsedFlags> FlagTable::Parse(const std::vector<std::string>& args) const {
  ParsedFlags out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    absl::string_view spelt = absl::string_view(arg).substr(arg[1] == '-' ? 2 : 1);
    absl::string_view inline_value;
    const size_t eq = spelt.find('=');
    const bool has_inline = eq != absl::string_view::npos;
    if (has_inline) {
      inline_value = spelt.substr(eq + 1);
      spelt = spelt.substr(0, eq);
    }
    const Flag* flag = Lookup(*this, spelt);
    if (!flag) return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    const std::string name(flag->name);
    if (flag->value.empty()) {
      if (has_inline)
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      out.switches.insert(name);
      continue;
    }
    if (has_inline) {
      out.values[name].emplace_back(inline_value);
    } else if (i + 1 < args.size()) {
      out.values[name].push_back(args[++i]);
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
  }
  return out;
}

std::optional<int> FlagTable::ParseOrExit(const std::vector<std::string>& args,
                                          ParsedFlags& flags) const {
  absl::StatusOr<ParsedFlags> parsed = Parse(args);
  if (!parsed.ok()) return Refuse(parsed.status());
  if (parsed->Has("help")) {
    std::fputs(Usage().c_str(), stdout);
    return 0;
  }
  flags = *std::move(parsed);
  return std::nullopt;
}

int FlagTable::Refuse(const absl::Status& error) const {
  std::fprintf(stderr, "error: %s\n%s", std::string(error.message()).c_str(), Usage().c_str());
  return 2;
}

std::string FlagTable::Usage() const {
  std::string out;
  for (size_t i = 0; i < usage.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "usage: " : "       ", usage[i], "\n");
  }
  if (!about.empty()) absl::StrAppend(&out, "\n", about, about.back() == '\n' ? "" : "\n");
  std::vector<const Flag*> all;
  for (const Flag& f : flags) all.push_back(&f);
  all.push_back(&kHelp);
  // Help starts in one column; a left part too wide for it puts its help on the next line.
  constexpr size_t kMaxColumn = 34;
  size_t column = 0;
  for (const Flag* f : all) column = std::max(column, LeftColumn(*f).size() + 4);
  column = std::min(column, kMaxColumn);
  absl::StrAppend(&out, "\nflags:\n");
  const std::string indent(column, ' ');
  for (const Flag* f : all) {
    std::string left = absl::StrCat("  ", LeftColumn(*f));
    if (left.size() + 2 > column) {
      absl::StrAppend(&out, left, "\n", indent);
    } else {
      absl::StrAppend(&out, left, std::string(column - left.size(), ' '));
    }
    bool first = true;
    for (absl::string_view line : absl::StrSplit(f->help, '\n')) {
      absl::StrAppend(&out, first ? "" : indent, line, "\n");
      first = false;
    }
  }
  return out;
}

absl::StatusOr<double> NumberFlag(const ParsedFlags& flags, const std::string& name,
                                  double fallback, double low, double high) {
  if (!flags.Has(name)) return fallback;
  double value = 0;
  if (!absl::SimpleAtod(flags.Get(name), &value) || !(value >= low && value <= high)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s takes a number from %.15g to %.15g", name, low, high));
  }
  return value;
}

absl::StatusOr<int64_t> IntFlag(const ParsedFlags& flags, const std::string& name, int64_t fallback,
                                int64_t low, int64_t high) {
  if (!flags.Has(name)) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(flags.Get(name), &value) || value < low || value > high) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " takes a whole number from ", low, " to ", high));
  }
  return value;
}

namespace {

// absl::FormatDuration, except that zero reads "0s".
std::string DurationText(absl::Duration d) {
  return d == absl::ZeroDuration() ? "0s" : absl::FormatDuration(d);
}

}  // namespace

absl::StatusOr<absl::Duration> DurationFlag(const ParsedFlags& flags, const std::string& name,
                                            absl::Duration fallback, absl::Duration low,
                                            absl::Duration high, absl::string_view example) {
  if (!flags.Has(name)) return fallback;
  absl::Duration value;
  if (!absl::ParseDuration(flags.Get(name), &value) || value < low || value > high) {
    const std::string range = high == absl::InfiniteDuration()
                                  ? absl::StrCat("at least ", DurationText(low))
                                  : absl::StrCat(DurationText(low), "..", DurationText(high));
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " takes a duration such as ", example, " (", range, ")"));
  }
  return value;
}

}  // namespace common
