#!/usr/bin/env python3
"""docs/architecture.md's rooms table says what the CMake files declare.

Each `gpu_tenancy_room(TARGET ROOM LOWER...)` call (cmake/rooms.cmake) gives ROOM's include
path the rooms it may see. The table's "may include" column must name exactly those rooms, in
backquotes, and every room with a call must have
a row. The DRA section must name every file of topology/dra/, so the sub-room reads whole from
the page.

Usage: rooms_doc.py [--root DIR] | --self-test
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

_ROOM_CALL = re.compile(r"gpu_tenancy_room\(\s*(\S+)\s+(\S+)((?:\s+[\w-]+)*)\s*\)")
_ROW = re.compile(r"^\| `([\w-]+)/`[^|]*\|[^|]*\| ([^|]*) \|")
_QUOTED = re.compile(r"`([\w-]+)`")
_DRA_HEADING = "## DRA, one sub-room"


def declared_rooms(root):
    """Room -> the rooms its include path holds, from every CMakeLists.txt outside test/."""
    files = subprocess.run(["git", "-C", root, "ls-files", "*CMakeLists.txt"],
                           capture_output=True, text=True, check=True).stdout.split()
    rooms = {}
    for path in files:
        if path.split("/", 1)[0] in ("test", "bench", "fuzz"):
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            for _target, room, lower in _ROOM_CALL.findall(f.read()):
                seen = rooms.setdefault(room, set())
                seen.update(name for name in lower.split() if name != room)
    return rooms


def documented_rooms(page, known):
    """Room -> the rooms its row's "may include" column names."""
    rows = {}
    for line in page.splitlines():
        match = _ROW.match(line)
        if not match:
            continue
        room, column = match.groups()
        rows[room] = {name for name in _QUOTED.findall(column) if name in known}
    return rows


def dra_section(page):
    start = page.find(_DRA_HEADING)
    if start < 0:
        return None
    end = page.find("\n## ", start + len(_DRA_HEADING))
    return page[start:] if end < 0 else page[start:end]


def check(root):
    with open(os.path.join(root, "docs/architecture.md"), encoding="utf-8") as f:
        page = f.read()
    declared = declared_rooms(root)
    known = set(declared) | {"base"}
    documented = documented_rooms(page, known)
    problems = []
    for room in sorted(declared):
        if room not in documented:
            problems.append(f"room {room}/ has no row in the rooms table")
            continue
        missing = sorted(declared[room] - {"base"} - documented[room])
        extra = sorted(documented[room] - declared[room])
        if missing:
            problems.append(f"{room}/ may include {', '.join(missing)} (CMake) but its row omits it")
        if extra:
            problems.append(f"{room}/'s row names {', '.join(extra)}, which CMake does not give it")
    section = dra_section(page)
    dra_dir = os.path.join(root, "topology/dra")
    if section is None:
        problems.append(f"no section '{_DRA_HEADING}'")
    elif os.path.isdir(dra_dir):
        for name in sorted(os.listdir(dra_dir)):
            stem = os.path.splitext(name)[0]
            if f"topology/dra/{stem}" not in section and f"`{stem}." not in section:
                problems.append(f"the DRA section does not name topology/dra/{name}")
    return problems, len(declared)


def self_test():
    """The check fails on a tree whose table or DRA section disagrees with its CMake files."""
    cases = {
        "agrees": ("| `a/` | x | abseil only | y |\n| `b/` | x | `a` | y |\n", []),
        "missing": ("| `a/` | x | abseil only | y |\n| `b/` | x | nothing | y |\n",
                    ["b/ may include a (CMake) but its row omits it"]),
        "extra": ("| `a/` | x | `b` | y |\n| `b/` | x | `a` | y |\n",
                  ["a/'s row names b, which CMake does not give it"]),
        "no row": ("| `a/` | x | abseil only | y |\n", ["room b/ has no row in the rooms table"]),
    }
    failed = 0
    for name, (table, expected) in cases.items():
        with tempfile.TemporaryDirectory() as root:
            subprocess.run(["git", "init", "-q", root], check=True)
            os.makedirs(os.path.join(root, "a"))
            os.makedirs(os.path.join(root, "b"))
            os.makedirs(os.path.join(root, "docs"))
            os.makedirs(os.path.join(root, "topology/dra"))
            with open(os.path.join(root, "a/CMakeLists.txt"), "w") as f:
                f.write("gpu_tenancy_room(a a)\n")
            with open(os.path.join(root, "b/CMakeLists.txt"), "w") as f:
                f.write("gpu_tenancy_room(b b a)\n")
            open(os.path.join(root, "topology/dra/model.h"), "w").close()
            open(os.path.join(root, "topology/dra/selector.cc"), "w").close()
            with open(os.path.join(root, "docs/architecture.md"), "w") as f:
                f.write(table + f"\n{_DRA_HEADING}\n\n`topology/dra/model.h`\n")
            subprocess.run(["git", "-C", root, "add", "."], check=True)
            problems, _ = check(root)
            expected = expected + ["the DRA section does not name topology/dra/selector.cc"]
            if problems != expected:
                print(f"self-test {name}: expected {expected}, got {problems}")
                failed += 1
    if failed:
        return 1
    print(f"self-test: all {len(cases)} cases found what they should")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    problems, rooms = check(args.root)
    for problem in problems:
        print(f"docs/architecture.md: {problem}")
    if problems:
        return 1
    print(f"the rooms table matches the {rooms} rooms the CMake files declare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
