#!/usr/bin/env bash
# Compares the HTTPS paths of several commits on this machine, back to back: each commit is
# built (Release) from `git archive` into $WORK/<commit>, then load_bench runs ROUNDS times per
# commit, alternating, so drifting machine load falls on every commit alike. Reports per
# workload the same-run ratios to the echo baseline (throughput and round-trip p50), the mean
# of the rounds, and one summary line per commit.
#   bench/compare.sh 211bb01 HEAD                  # two commits, 2 rounds
#   ROUNDS=3 SIZES=100,5000 bench/compare.sh A B C
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${WORK:-/tmp/gpu-tenancy-compare}"
rounds="${ROUNDS:-2}"
sizes="${SIZES:-100,1000,5000}"
secs="${SECONDS_PER_WORKLOAD:-1.5}"
[ $# -ge 2 ] || { echo "usage: bench/compare.sh COMMIT COMMIT [COMMIT...]" >&2; exit 2; }
mkdir -p "$work"
commits=()
for c in "$@"; do
  sha="$(git -C "$root" rev-parse --short "$c")"
  commits+=("$sha")
  dir="$work/$sha"
  if [ ! -x "$dir/build/bench/load_bench" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    git -C "$root" archive "$sha" | tar -x -C "$dir"
    cmake -S "$dir" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$dir/build" gpu-tenancy load_bench >/dev/null
  fi
done
tables=()
for ((r = 1; r <= rounds; r++)); do
  for sha in "${commits[@]}"; do
    echo "== $sha round $r, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    (cd "$work/$sha" && ./build/bench/load_bench --sizes "$sizes" --seconds "$secs" --threads 4 \
      --md "$work/$sha-$r.md" --dat /dev/null >/dev/null)
    tables+=("$sha=$work/$sha-$r.md")
  done
done
python3 - "${tables[@]}" <<'PY'
import collections, re, statistics, sys

def micros(text):
    text = text.strip()
    for suffix, scale in ((" ms", 1000.0), (" us", 1.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return None

def ratios(path):
    """(size, workload) -> (throughput / echo, round-trip p50 / echo) of one load_bench table."""
    rows, echo, size = {}, {}, None
    for line in open(path):
        m = re.match(r"### (\d+) nodes", line)
        if m:
            size = int(m.group(1))
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if size is None or len(cells) < 10:
            continue
        try:
            rps, p50 = float(cells[3]), micros(cells[4])
        except ValueError:
            continue
        name = cells[0]
        if name.startswith("echo ("):
            echo[(size, name[6:-1])] = (rps, p50)
        elif "paced" not in name and "full Nodes" not in name:
            rows[(size, name)] = (rps, p50)
    out = {}
    for (size, name), (rps, p50) in rows.items():
        for (s, what), (erps, ep50) in echo.items():
            same = "AdmissionReview" in what if name.startswith("webhook") else what in name
            if s == size and same:
                out[(size, name)] = (rps / erps, p50 / ep50)
    return out

per_commit = collections.defaultdict(list)
for arg in sys.argv[1:]:
    sha, path = arg.split("=", 1)
    per_commit[sha].append(ratios(path))
shas = list(per_commit)
keys = sorted(set().union(*(r.keys() for runs in per_commit.values() for r in runs)))

def mean(sha, key, i):
    values = [r[key][i] for r in per_commit[sha] if key in r]
    return statistics.mean(values) if values else float("nan")

print("| nodes | workload | " + " | ".join(f"{s} throughput / echo" for s in shas) + " | " +
      " | ".join(f"{s} p50 / echo" for s in shas) + " |")
print("|---|---|" + "---|" * (2 * len(shas)))
for key in keys:
    print(f"| {key[0]} | {key[1]} | " + " | ".join(f"{mean(s, key, 0):.2f}" for s in shas) + " | " +
          " | ".join(f"{mean(s, key, 1):.2f}" for s in shas) + " |")
print()
for s in shas:
    pick = lambda prefix, i: statistics.mean(mean(s, k, i) for k in keys if k[1].startswith(prefix))
    print(f"- {s}: filter throughput / echo {pick('filter', 0):.3f}, prioritize {pick('prioritize', 0):.3f}, "
          f"webhook {pick('webhook', 0):.3f}; filter p50 / echo {pick('filter', 1):.2f}")
PY
