#!/usr/bin/env python3
"""Every metric family the source code names has its row in docs/metrics.md.

The live test (`EveryExportedMetricFamilyIsInTheMetricsReference`) checks what one replica
exports; families that only some paths export (the node agent's, a histogram's own series)
are caught here, from the string literals of the source: any "gpu_tenancy_..." name outside
test/, bench/ and fuzz/ must appear in the page in backquotes (a histogram's _bucket, _sum and
_count series count as their family, and a literal that only starts names, such as
"gpu_tenancy_tls" for the TLS port's families, must start some name of the page).

Usage: metrics_doc.py [--root DIR]
"""
import argparse
import os
import re
import subprocess
import sys

_NAME = re.compile(r'"(gpu_tenancy_[a-z0-9_]+)')
_SERIES_SUFFIXES = ("_bucket", "_sum", "_count")


def source_names(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "*.cc", "*.h"], capture_output=True,
                           text=True, check=True).stdout.split()
    names = {}
    for path in files:
        if path.split("/", 1)[0] in ("test", "bench", "fuzz"):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                for name in _NAME.findall(line):
                    for suffix in _SERIES_SUFFIXES:
                        if name.endswith(suffix):
                            name = name[: -len(suffix)]
                    names.setdefault(name, f"{path}:{number}")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
    args = parser.parse_args()
    with open(os.path.join(args.root, "docs/metrics.md"), encoding="utf-8") as f:
        page = f.read()
    names = source_names(args.root)
    missing = sorted((where, name) for name, where in names.items()
                     if f"`{name}`" not in page and f"`{name}_" not in page)
    for where, name in missing:
        print(f"{where}: {name} is not in docs/metrics.md")
    if missing:
        return 1
    print(f"all {len(names)} metric families of the source are in docs/metrics.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
