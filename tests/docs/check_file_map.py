#!/usr/bin/python3
"""The file maps of docs/architecture.md match the source tree, and the
file names that sources and documents mention are files of the tree.

    check_file_map.py --source DIR
    check_file_map.py --self-test

Each entry of MAPS names a section of docs/architecture.md (its heading,
without the #s) and the directory its table maps. The first column of the
table names files relative to that directory, in backticks, several to a
cell if need be (`ce_math.[ch]` stands for ce_math.c and ce_math.h; a
file in a subdirectory is named with its path, `contactctl/ctl.h`). Every
source file (SOURCE_SUFFIXES) under the directory, subdirectories
included, must be named exactly once, and every name must be a file or
directory that exists (a directory's row, `examples/scenes/`, names no
file for it). The failure message lists, per section, the files missing
from the map, the names of files that do not exist and the names given
twice, so a file added, moved or removed fails the test until its row is
written.

To map another directory, add a (heading, directory) pair to MAPS and a
section with a table to the document; check_map() is the whole check.

Named files: check_named_files() reads every text file under SCAN (build
output and tests/docs, whose self-tests make names up, aside) for names
of the project's files (NAME_RE: ce_*.c, cd_*.h, td_*.c, test_*.py, ...)
and fails for each that no file of the tree has (by base name), so a
comment or document naming a file that was renamed or split is caught.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

DOC = os.path.join("docs", "architecture.md")
SOURCE_SUFFIXES = (".c", ".h", ".inc", ".cpp", ".py", ".proto")
# (section heading in DOC, directory its table maps, relative to the source root)
MAPS = [
    ("Engine files (`server/engine/`)", "server/engine"),
    ("Daemon files (`server/daemon/`)", "server/daemon"),
    ("Clients (`client/`)", "client"),
]
# Directories that hold build output or packaging by-products, never sources.
SKIP_DIRS = re.compile(r"^(\..*|build.*|__pycache__|.*\.egg-info|node_modules)$")
CODE_RE = re.compile(r"`([^`]+)`")
# Where check_named_files() looks, relative to the source root.
SCAN = ["README.md", "docs", "server", "client", "proto", "bench", "deploy", "viewer", "tests"]
SCAN_SKIP = {os.path.join("tests", "docs")}
NAME_RE = re.compile(r"(?<![\w.-])(?:ce|cd|cc|ctl|td|test|bench|check|gen|make|run)_[a-z0-9_]+"
                     r"\.(?:c|h|inc|cpp|py|sh)\b")


def expand(name):
    """"ce_math.[ch]" -> ["ce_math.c", "ce_math.h"]; other names as they are."""
    m = re.fullmatch(r"(.*)\[(\w+)\](.*)", name)
    if not m:
        return [name]
    return [m.group(1) + ch + m.group(3) for ch in m.group(2)]


def map_names(text, heading):
    """[(line number, name)] from the first column of the table under heading."""
    lines = text.split("\n")
    try:
        at = next(i for i, ln in enumerate(lines) if ln.lstrip("#").strip() == heading and ln.startswith("#"))
    except StopIteration:
        raise SystemExit("%s: no section headed %r (tests/docs/check_file_map.py MAPS)" % (DOC, heading))
    names, in_table = [], False
    for i in range(at + 1, len(lines)):
        ln = lines[i]
        if ln.startswith("#"):
            break
        if not ln.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        first = ln.split("|")[1]
        if set(first.strip()) <= set("-: "):
            continue
        for code in CODE_RE.findall(first):
            for name in expand(code.strip()):
                names.append((i + 1, name))
    return names


def source_files(root, directory, suffixes=SOURCE_SUFFIXES):
    """Source files under root/directory, as paths relative to it."""
    top = os.path.join(root, directory)
    found = set()
    for d, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if not SKIP_DIRS.match(x)]
        for f in files:
            if f.endswith(suffixes):
                found.add(os.path.relpath(os.path.join(d, f), top))
    return found


def check_map(root, text, heading, directory, suffixes=SOURCE_SUFFIXES):
    """Problems (strings) with the table under heading against root/directory; [] if none."""
    files = source_files(root, directory, suffixes)
    named, problems = {}, []
    for line, name in map_names(text, heading):
        named.setdefault(name, []).append(line)
    missing = sorted(files - set(named))
    extra = sorted(n for n in named if not os.path.exists(os.path.join(root, directory, n)))
    twice = sorted(n for n in named if len(named[n]) > 1)
    if missing:
        problems.append("missing from the map (add a row): " + ", ".join(os.path.join(directory, f) for f in missing))
    if extra:
        problems.append("named but no such file (remove or rename the row): " + ", ".join(
            "%s (line %d)" % (os.path.join(directory, n), named[n][0]) for n in extra))
    if twice:
        problems.append("named more than once (keep one): " + ", ".join(
            "%s (lines %s)" % (os.path.join(directory, n), ", ".join(map(str, named[n]))) for n in twice))
    return ["%s, section \"%s\": %s" % (DOC, heading, p) for p in problems]


def tree_names(root):
    """Base names of every file in the tree (build output aside)."""
    names = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not SKIP_DIRS.match(x)]
        names.update(files)
    return names


def check_named_files(root, scan=SCAN, skip=SCAN_SKIP):
    """Problems (strings) for each mention of a project file name that no file has; [] if none."""
    exist, problems = tree_names(root), []
    paths = []
    for entry in scan:
        top = os.path.join(root, entry)
        if os.path.isfile(top):
            paths.append(entry)
        for d, dirs, files in os.walk(top):
            dirs[:] = sorted(x for x in dirs if not SKIP_DIRS.match(x)
                             and os.path.relpath(os.path.join(d, x), root) not in skip)
            paths += sorted(os.path.relpath(os.path.join(d, f), root) for f in files)
    for rel in paths:
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # images and other binary files
        for n, line in enumerate(text.split("\n"), 1):
            for name in NAME_RE.findall(line):
                if name not in exist:
                    problems.append("%s:%d names %s, which is no file of the tree (renamed, split or removed?)"
                                    % (rel, n, name))
    return problems


def check_tree(root):
    with open(os.path.join(root, DOC), encoding="utf-8") as f:
        text = f.read()
    problems, counted = [], 0
    for heading, directory in MAPS:
        problems += check_map(root, text, heading, directory)
        counted += len(source_files(root, directory))
    return problems + check_named_files(root), counted


def self_test():
    """The checks catch a missing file, a name of no file, a name given twice and a stale file name."""
    root = tempfile.mkdtemp(prefix="file-map-selftest-")
    try:
        os.makedirs(os.path.join(root, "lib", "sub"))
        os.makedirs(os.path.join(root, "lib", "build-x"))
        for f in ("a.c", "a.h", "b.c", "sub/s.py", "build-x/gen.c", "notes.txt"):
            open(os.path.join(root, "lib", f), "w").close()
        head = "# Doc\n\n## Lib (`lib/`)\n\n| file | what |\n|---|---|\n"
        good = head + "| `a.[ch]` | a |\n| `b.c` | b, not `zz.c` |\n| `sub/s.py`, `sub/` | s |\n\n## Next\n| `q.c` | x |\n"
        cases = [
            (good, []),
            (head + "| `a.[ch]` | a |\n| `sub/` | s |\n", ["missing from the map (add a row): lib/b.c, lib/sub/s.py"]),
            (good.replace("| `b.c` |", "| `b.c`, `gone.h` |"),
             ["named but no such file (remove or rename the row): lib/gone.h (line 8)"]),
            (good.replace("| `b.c` |", "| `b.c`, `a.c` |"),
             ["named more than once (keep one): lib/a.c (lines 7, 8)"]),
        ]
        failed = 0
        for text, want in cases:
            got = check_map(root, text, "Lib (`lib/`)", "lib")
            want = ["%s, section \"Lib (`lib/`)\": %s" % (DOC, w) for w in want]
            if got != want:
                failed += 1
                print("FAIL self-test:\n  document:\n%s\n  want: %s\n  got:  %s" % (text, want, got))
        with open(os.path.join(root, "lib", "b.c"), "w") as f:
            f.write("/* b.c: see a.h and cd_gone.c; run_x.sh */\n#include \"a.h\"\n")
        os.makedirs(os.path.join(root, "docs", "skipped"))
        with open(os.path.join(root, "docs", "skipped", "x.md"), "w") as f:
            f.write("ce_made_up.c\n")
        with open(os.path.join(root, "docs", "y.md"), "w") as f:
            f.write("`cd_a.c` and\n`lib/ce_old.h`\n")
        for f in ("cd_a.c", "run_x.sh"):
            open(os.path.join(root, "lib", f), "w").close()
        cases.append(None)
        got = check_named_files(root, ["docs", "lib"], {os.path.join("docs", "skipped")})
        want = ["%s names %s, which is no file of the tree (renamed, split or removed?)" % w
                for w in (("docs/y.md:2", "ce_old.h"), ("lib/b.c:1", "cd_gone.c"))]
        if got != want:
            failed += 1
            print("FAIL self-test (named files):\n  want: %s\n  got:  %s" % (want, got))
        print("self-test: %d of %d cases as expected" % (len(cases) - failed, len(cases)))
        return 1 if failed else 0
    finally:
        shutil.rmtree(root)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", help="the source tree's root")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.source:
        ap.error("--source DIR or --self-test")
    problems, counted = check_tree(args.source)
    for p in problems:
        print("FAIL " + p)
    if problems:
        print("%d problems; edit %s (the file maps), or the files named, to match the tree" % (len(problems), DOC))
        sys.exit(1)
    print("%s: the file maps name each of the %d source files under %s once; every file named under %s exists"
          % (DOC, counted, ", ".join(d + "/" for _, d in MAPS), ", ".join(SCAN)))


if __name__ == "__main__":
    main()
