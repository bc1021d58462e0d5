#!/usr/bin/env python3
"""Fails when a file of the repository names a repository path that does not exist.

A newcomer who clones the repository must be able to follow every pointer in it. Checked in
every tracked text file (`git ls-files`; outside a git work tree, every file but build trees):

  - paths under docs and test/testdata: must be a tracked file or a folder holding one;
  - Markdown file names (`*.md`): with a folder, the path must resolve from the repository
    root or from the naming file's folder; a bare name must be the name of some tracked file;
  - paths that start with a top-level folder of the repository and end in a source or data
    extension (.h, .cc, .py, .sh, .yaml, .json, ...): must resolve likewise;
  - paths that start with ../ must resolve from the naming file's folder (unless they leave
    the repository);
  - relative link targets in Markdown files: must resolve from the file's folder, and a
    `#fragment` on a link to a Markdown page (or on its own, to the same page) must be the
    anchor of one of that page's headings, as GitHub makes them.

Paths resolve from the repository root, from the naming file's folder, and (for test inputs
named as the test helpers load them, `extender/bind.request.json`) from test/testdata. Tokens
inside URLs, tokens written with shell variables (`$tmp/out.md`) and paths git ignores (the
outputs of scripts, such as certs/out/) are not paths of the repository and are skipped, and
so are recorded tool logs (*.log), whose paths are the tool's.

Usage: repo_paths.py [--root DIR]   (default: the repository this script is in)
       repo_paths.py --self-test      (the check run on small trees with known dangling paths)
Prints one line per dangling reference, `file:line: names "path", which the repository lacks`,
and exits 1 if there is any.
"""
import argparse
import os
import re
import subprocess
import sys

# A path token: no word character, dot, slash, dash or shell/template sigil right before it.
_START = r"(?<![\w./$@{}-])"
_SEGMENT = r"[\w.+-]+"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'`<>)\]]*")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_SOURCE_EXTENSIONS = ("h", "cc", "py", "sh", "yaml", "yml", "json", "cmake", "txt", "md", "awk",
                      "supp", "html", "css", "js", "png", "svg")


def is_git_root(root):
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True)
        return top.returncode == 0 and os.path.samefile(top.stdout.strip(), root)
    except OSError:
        return False


def git_ignored(root, paths):
    """The subset of `paths` that git ignores (generated outputs)."""
    # git refuses the whole query when one path leaves the repository.
    paths = [p for p in paths if not os.path.normpath(p).startswith("..")]
    if not paths:
        return set()
    if is_git_root(root):
        out = subprocess.run(["git", "-C", root, "check-ignore", "--no-index", "--stdin"],
                             input="\n".join(paths) + "\n", capture_output=True, text=True)
        return set(out.stdout.split())
    # Without git (an exported tree): the root .gitignore's plain folder lines, such as
    # "/certs/out/", are enough for the outputs the repository names.
    folders = []
    try:
        with open(os.path.join(root, ".gitignore"), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.endswith("/") and not line.startswith("#") and not set("*?[!") & set(line):
                    folders.append(line.strip("/") + "/")
    except OSError:
        pass
    return {p for p in paths if any(p.startswith(folder) for folder in folders)}


def tracked_files(root):
    if is_git_root(root):
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True).stdout
        return [f for f in out.decode("utf-8").split("\0") if f]
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
        self._anchors = {}
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
            # ../... from the naming file's folder
            ("relative", re.compile(_START + r"((?:\.\./)+(?:" + _SEGMENT + r"/?)*)")),
        ]

    def exists(self, path, base):
        for candidate in (path, os.path.normpath(os.path.join(base, path)),
                          os.path.normpath(os.path.join("test/testdata", path))):
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
                elif kind == "relative":
                    resolved = os.path.normpath(os.path.join(base, token))
                    ok = resolved.startswith("..") or self.exists(resolved, "")
                else:
                    ok = self.exists(token, base)
                if not ok:
                    found.append(token)
        if name.endswith(".md"):
            for m in _MD_LINK.finditer(line):
                target, _, fragment = m.group(1).partition("#")
                if _URL.match(target) or target.startswith("mailto:"):
                    continue
                page = os.path.normpath(os.path.join(base, target)) if target else name
                if target and not self.exists(page, ""):
                    found.append(target)
                elif fragment and page.endswith(".md") and fragment not in self.anchors(page):
                    found.append(m.group(1))
        return sorted(set(found))

    def anchors(self, page):
        """The anchors GitHub gives the headings of a Markdown page (code blocks skipped)."""
        if page not in self._anchors:
            seen = {}
            in_code = False
            try:
                with open(os.path.join(self.root, page), encoding="utf-8") as f:
                    lines = f.readlines()
            except OSError:
                lines = []
            for line in lines:
                if line.startswith("```"):
                    in_code = not in_code
                heading = None if in_code else re.match(r"#{1,6} (.*)", line)
                if heading:
                    slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
                    slug = slug.replace(" ", "-")
                    count = seen.get(slug, 0)
                    seen[slug] = count + 1
                    seen.setdefault(f"{slug}-{count}" if count else slug, 1)
            self._anchors[page] = set(seen)
        return self._anchors[page]

    def run(self):
        found = []
        for name in sorted(self.files):
            if name.endswith(".log"):
                continue  # recorded tool output: its paths are the tool's, not ours
            if os.path.abspath(os.path.join(self.root, name)) == os.path.abspath(__file__):
                continue  # this file: its self-test names dangling paths on purpose
            try:
                with open(os.path.join(self.root, name), encoding="utf-8") as f:
                    lines = f.readlines()
            except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
                continue  # binary, or deleted in the work tree
            for number, line in enumerate(lines, 1):
                found.extend((name, number, token) for token in self.dangling(name, line))
        ignored = git_ignored(self.root, sorted({token for _, _, token in found}))
        return [(name, number, token) for name, number, token in found if token not in ignored]


def report(problems):
    for name, number, token in problems:
        print(f'{name}:{number}: names "{token}", which the repository lacks')


# The check must be able to fail: each case is a small tree (outside git, so every file counts
# as tracked) whose src/a.h holds one line, and the dangling paths the check must report there.
# The tree always has docs/present.md, docs/wire/page.md and src/a.h.
_SELF_TEST_CASES = [
    ("docs page", "// see docs/absent.md", ["docs/absent.md"]),
    ("docs folder", "// see docs/gone/", ["docs/gone/"]),
    ("test input", "// reads test/testdata/none/x.json", ["test/testdata/none/x.json"]),
    ("bare md name", "// see ROADMAP.md", ["ROADMAP.md"]),
    ("md path", "// see notes/wire.md", ["notes/wire.md"]),
    ("source path", "// as src/gone.cc does", ["src/gone.cc"]),
    ("relative path", "// copied from ../elsewhere/payloads/", ["../elsewhere/payloads/"]),
    ("several", "// docs/present.md, GUIDE.md and src/b.h", ["GUIDE.md", "src/b.h"]),
    ("present", "// docs/present.md, docs/wire/, page.md, src/a.h, ../docs/wire/page.md", []),
    ("skipped", "// https://example.com/x/README.md, $tmp/out.md, ../../../outside.cc", []),
]


def self_test():
    import tempfile
    failures = 0
    for name, line, expected in _SELF_TEST_CASES:
        with tempfile.TemporaryDirectory() as root:
            tree = {"docs/present.md": "# Top\n[page](wire/page.md) [a.h](../src/a.h)\n",
                    "docs/wire/page.md": "back to [present](../present.md#top)\n",
                    "src/a.h": line + "\n"}
            for path, text in tree.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            got = sorted(token for _, _, token in Checker(root, tracked_files(root)).run())
        if got == sorted(expected):
            print(f"ok    {name}")
        else:
            print(f"FAIL  {name}: {line!r} reported {got}, expected {sorted(expected)}")
            failures += 1
    # A dangling Markdown link is reported at its line.
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs/index.md"), "w", encoding="utf-8") as f:
            f.write("# Index\n\nSee [the policy](policy-model.md#tiers).\n")
        got = Checker(root, tracked_files(root)).run()
    if got == [("docs/index.md", 3, "policy-model.md")]:
        print("ok    markdown link")
    else:
        print(f"FAIL  markdown link: reported {got}")
        failures += 1
    # A link to a heading the page lacks is reported; headings inside code blocks do not count.
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        pages = {"docs/index.md": "# Index\n\n## The `guard`: after admission\n\n```sh\n# Fenced\n```\n"
                                  "[a](#the-guard-after-admission) [b](#fenced) [c](policy.md#tiers)"
                                  " [d](policy.md#tiers-1) [e](policy.md#quotas)\n",
                 "docs/policy.md": "# Policy\n## Tiers\n## Tiers\n"}
        for path, text in pages.items():
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        got = sorted(token for _, _, token in Checker(root, tracked_files(root)).run())
    if got == ["#fenced", "policy.md#quotas"]:
        print("ok    heading anchors")
    else:
        print(f"FAIL  heading anchors: reported {got}")
        failures += 1
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "..", ".."))
    parser.add_argument("--root", default=default_root)
    parser.add_argument("--self-test", action="store_true",
                        help="check the checker on small trees with known dangling paths")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.abspath(args.root)
    problems = Checker(root, tracked_files(root)).run()
    report(problems)
    if problems:
        print(f"{len(problems)} reference(s) to paths the repository lacks", file=sys.stderr)
        return 1
    print("every path named in the repository exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
