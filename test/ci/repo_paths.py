#!/usr/bin/env python3
"""Fails when a file of the repository names a repository path that does not exist.

A newcomer who clones the repository must be able to follow every pointer in it. Checked in
every tracked text file (`git ls-files`; outside a git work tree, every file but build trees):

  - paths under docs and test/testdata: must be a tracked file or a folder holding one;
  - Markdown file names (`*.md`): with a folder, the path must resolve from the repository
    root or from the naming file's folder; a bare name must be the name of some tracked file;
  - paths that start with a top-level folder of the repository and end in a source or data
    extension (.h, .cc, .py, .sh, .yaml, .json, ...): must resolve likewise;
  - relative link targets in Markdown files: must resolve from the file's folder.

Tokens inside URLs and tokens written with shell variables (`$tmp/out.md`) are not paths of
the repository and are skipped.

Usage: repo_paths.py [--root DIR]   (default: the repository this script is in)
Prints one line per dangling reference, `file:line: names "path", which the repository lacks`,
and exits 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

# A path token: no word character, dot, slash, dash or shell/template sigil right before it.
_START = r"(?<![\w./$@{}<>*-])"
_SEGMENT = r"[\w.+-]+"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'`<>)\]]*")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_SOURCE_EXTENSIONS = ("h", "cc", "py", "sh", "yaml", "yml", "json", "cmake", "txt", "md", "awk",
                      "supp", "html", "css", "js", "png", "svg")


def tracked_files(root):
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True)
        if top.returncode == 0 and os.path.samefile(top.stdout.strip(), root):
            out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                                 check=True).stdout
            return [f for f in out.decode("utf-8").split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not d.startswith("build")]
        rel = os.path.relpath(dirpath, root)
        files.extend(os.path.normpath(os.path.join(rel, f)) for f in filenames)
    return files


def strip_token(token):
    # Sentence punctuation and Markdown emphasis are not part of a path.
    return token.rstrip(".,:;*_-")


class Checker:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.folders = set()
        for f in files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.folders.add("/".join(parts[:i]))
        self.basenames = {os.path.basename(f) for f in files}
        top = sorted(d for d in self.folders if "/" not in d)
        alternatives = "|".join(re.escape(d) for d in top)
        self.patterns = [
            # docs/... and test/testdata/...
            ("prefix", re.compile(_START + r"((?:docs|test/testdata)/(?:" + _SEGMENT + r"/?)*)")),
            # any *.md name, with or without folders
            ("md", re.compile(_START + r"((?:" + _SEGMENT + r"/)*" + _SEGMENT + r"\.md)(?![\w/])")),
            # <top-level folder>/.../<name>.<source extension>
            ("source", re.compile(_START + r"((?:" + alternatives + r")/(?:" + _SEGMENT + r"/)*" +
                                  _SEGMENT + r"\.(?:" + "|".join(_SOURCE_EXTENSIONS) +
                                  r"))(?![\w/])")),
        ]

    def exists(self, path, base):
        for candidate in (path, os.path.normpath(os.path.join(base, path))):
            candidate = candidate.rstrip("/")
            if candidate in self.files or candidate in self.folders or candidate in ("", "."):
                return True
        return False

    def dangling(self, name, line):
        base = os.path.dirname(name)
        text = _URL.sub(" ", line)
        found = []
        for kind, pattern in self.patterns:
            for m in pattern.finditer(text):
                token = strip_token(m.group(1))
                if kind == "md" and "/" not in token:
                    ok = token in self.basenames
                else:
                    ok = self.exists(token, base)
                if not ok:
                    found.append(token)
        if name.endswith(".md"):
            for m in _MD_LINK.finditer(line):
                target = m.group(1).split("#", 1)[0]
                if not target or _URL.match(target) or target.startswith("mailto:"):
                    continue
                if not self.exists(os.path.normpath(os.path.join(base, target)), base):
                    found.append(target)
        return sorted(set(found))

    def run(self):
        problems = 0
        for name in sorted(self.files):
            try:
                with open(os.path.join(self.root, name), encoding="utf-8") as f:
                    lines = f.readlines()
            except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
                continue  # binary, or deleted in the work tree
            for number, line in enumerate(lines, 1):
                for token in self.dangling(name, line):
                    print(f'{name}:{number}: names "{token}", which the repository lacks')
                    problems += 1
        return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", ".."))
    parser.add_argument("--root", default=default_root)
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    problems = Checker(root, tracked_files(root)).run()
    if problems:
        print(f"{problems} reference(s) to paths the repository lacks", file=sys.stderr)
        return 1
    print("every path named in the repository exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
