#!/usr/bin/env python3
"""docs/flags.md is what the binary's own --help says, command by command.

The flags are declared once, in each command's flag table, which parses argv and writes the
usage; this page is generated from that usage, so the reference cannot drift from the code.

Usage: flags_doc.py --binary build/gpu-tenancy --write docs/flags.md   (regenerate the page)
       flags_doc.py --binary build/gpu-tenancy --check docs/flags.md   (exit 1 if it differs)
"""
import argparse
import difflib
import re
import subprocess
import sys

HEADER = """# Flags

Every subcommand of `gpu-tenancy` and its flags, as `gpu-tenancy COMMAND --help` prints them.
This page is generated from the binary (`python3 test/ci/flags_doc.py --binary
build/gpu-tenancy --write docs/flags.md`) and `ctest -R ci.flags_doc` fails when it differs,
so it says what the code does. What the commands are for: [cli.md](cli.md).
"""


def run(binary, *args):
    out = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        sys.exit(f"{binary} {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def commands(binary):
    """The command names `gpu-tenancy help` lists, in its order."""
    text = run(binary, "help")
    listed = text.split("commands:", 1)[1]
    names = []
    for line in listed.splitlines():
        m = re.match(r"  ([a-z][a-z-]*)  ", line)
        if m:
            names.append(m.group(1))
    if not names:
        sys.exit(f"{binary} help lists no commands")
    return names


def render(binary):
    parts = [HEADER]
    for name in commands(binary):
        usage = run(binary, name, "--help").rstrip("\n")
        parts.append(f"## {name}\n\n```\n{usage}\n```\n")
    return "\n".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="PAGE")
    group.add_argument("--check", metavar="PAGE")
    args = parser.parse_args()
    page = render(args.binary)
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(page)
        return 0
    with open(args.check, encoding="utf-8") as f:
        current = f.read()
    if current == page:
        print(f"{args.check} matches the binary's --help")
        return 0
    sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), page.splitlines(True),
                                               args.check, "the binary's --help"))
    print(f"\n{args.check} is stale: regenerate it with --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
