#!/usr/bin/python3
"""Write the limits table of docs/operations.md from `contactd --help`.

    gen_limits.py --contactd BIN [--check] [DOC]

The daemon prints every row of its limits table (server/daemon/cd_limits.h)
in --help; this script turns that section into a Markdown table and puts it
between the lines <!-- limits:begin --> and <!-- limits:end --> of DOC
(default docs/operations.md). With --check it changes nothing and exits 1
when the document's table differs from what the binary prints (ctest's
test_doc_limits), so a limit added, changed or removed in cd_limits.h fails
the test until this script is run again.
"""
import argparse
import difflib
import os
import re
import subprocess
import sys

BEGIN, END = "<!-- limits:begin -->", "<!-- limits:end -->"
ROW = re.compile(r"^  (\w+)\s+(\d+) (\S+)\s+(.*)$")


def human(value, unit):
    """268435456 bytes -> "256 MiB"; 10000 bodies -> "10 000 bodies"."""
    v = int(value)
    if unit == "bytes" and v >= 1024:
        for div, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if v % div == 0:
                return "%d %s" % (v // div, name)
    return "%s %s" % ("{:,}".format(v).replace(",", " "), unit)


def table(help_text):
    rows, on = [], False
    for line in help_text.split("\n"):
        if line.startswith("limits ("):
            on = True
            continue
        if on:
            if not line.strip():
                break
            m = ROW.match(line)
            if not m:
                raise SystemExit("gen_limits: cannot read the --help line %r" % line)
            rows.append(m.groups())
    if not rows:
        raise SystemExit("gen_limits: no limits section in --help")
    out = ["| limit | default | meaning |", "|---|---|---|"]
    for name, value, unit, desc in rows:
        out.append("| `%s` | %s | %s |" % (name, human(value, unit), desc.replace("|", "\\|")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contactd", required=True)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("doc", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                                                          "operations.md"))
    args = ap.parse_args()
    help_text = subprocess.run([args.contactd, "--help"], stdout=subprocess.PIPE, check=True,
                               universal_newlines=True).stdout
    new_rows = table(help_text)
    with open(args.doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    try:
        b, e = lines.index(BEGIN), lines.index(END)
    except ValueError:
        raise SystemExit("gen_limits: %s lacks the %s / %s lines" % (args.doc, BEGIN, END))
    old_rows = lines[b + 1:e]
    if args.check:
        if old_rows != new_rows:
            sys.stdout.writelines(difflib.unified_diff([r + "\n" for r in old_rows], [r + "\n" for r in new_rows],
                                                       "document", "contactd --help"))
            print("%s: the limits table is out of date; run tests/docs/gen_limits.py --contactd %s"
                  % (args.doc, args.contactd))
            sys.exit(1)
        print("%s: limits table matches contactd --help (%d limits)" % (args.doc, len(new_rows) - 2))
        return
    lines[b + 1:e] = new_rows
    with open(args.doc, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
