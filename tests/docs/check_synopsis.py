#!/usr/bin/python3
"""The synopsis of docs/operations.md names the flags `contactd --help` lists.

    check_synopsis.py --contactd BIN [DOC]

The synopsis is the indented block of DOC (default docs/operations.md)
whose first line begins "contactd [". Every flag (--name) in the flags
section of `contactd --help` (from its "flags" line to the next blank
line, aliases named in the descriptions included) must appear in the
synopsis, and every flag in the synopsis must be one --help lists. Exits 1
naming the flags missing on either side (ctest's test_doc_synopsis).
"""
import argparse
import os
import re
import subprocess
import sys

FLAG_RE = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_flags(help_text):
    lines = help_text.split("\n")
    try:
        at = next(i for i, ln in enumerate(lines) if ln.startswith("flags"))
    except StopIteration:
        raise SystemExit("check_synopsis: no flags section in contactd --help")
    flags = set()
    for ln in lines[at + 1:]:
        if not ln.strip():
            break
        flags |= set(FLAG_RE.findall(ln))
    if not flags:
        raise SystemExit("check_synopsis: no flags in the flags section of contactd --help")
    return flags


def synopsis_flags(doc_text, doc):
    lines = doc_text.split("\n")
    try:
        at = next(i for i, ln in enumerate(lines) if ln.startswith("    contactd ["))
    except StopIteration:
        raise SystemExit("check_synopsis: %s has no synopsis (an indented block beginning \"contactd [\")" % doc)
    block = []
    for ln in lines[at:]:
        if not ln.startswith("    "):
            break
        block.append(ln)
    return set(FLAG_RE.findall("\n".join(block))), at + 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contactd", required=True)
    ap.add_argument("doc", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                          "docs", "operations.md"))
    args = ap.parse_args()
    args.doc = os.path.normpath(args.doc)
    help_text = subprocess.run([args.contactd, "--help"], stdout=subprocess.PIPE, check=True,
                               universal_newlines=True).stdout
    want = help_flags(help_text)
    with open(args.doc, encoding="utf-8") as f:
        have, line = synopsis_flags(f.read(), args.doc)
    missing, extra = sorted(want - have), sorted(have - want)
    if missing:
        print("FAIL %s:%d: the synopsis lacks flags that contactd --help lists: %s" % (
            args.doc, line, ", ".join(missing)))
    if extra:
        print("FAIL %s:%d: the synopsis names flags that contactd --help does not list: %s" % (
            args.doc, line, ", ".join(extra)))
    if missing or extra:
        sys.exit(1)
    print("%s:%d: the synopsis names the %d flags of contactd --help" % (args.doc, line, len(want)))


if __name__ == "__main__":
    main()
