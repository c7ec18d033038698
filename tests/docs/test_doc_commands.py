#!/usr/bin/python3
"""Every shell command shown in the documentation runs as written.

    test_doc_commands.py --source DIR --build DIR [FILE.md ...]

Commands are the lines beginning with "$ " inside ```console blocks (a line
ending in a backslash continues on the next; a here-document runs to its
terminator). The lines after a command, up to the next command, are its
output as shown. Each command runs with bash in a scratch directory that
mirrors the source tree (a link to each top-level entry) with `build` linked
to the build directory under test, so the documents' paths
(./build/client/contactctl, client/examples/...) work as written; PATH is
/usr/bin:/bin (Debian's python3) and CONTACTD_ADDR points at a contactd this
test starts on an ephemeral port, so commands that use the default address
reach it. The commands of one file run in order, in the same directory.

A command must exit 0. Where output is shown, the actual standard output
must match it line by line: runs of white space are equal, "..." inside a
line matches any text, a line of "..." alone matches any number of lines,
and numbers with a decimal point or an exponent match to a relative 1e-6
(or 1e-9 absolute), so the last bits of a build's floating point do not
matter; other text, integers and ids must be equal.

A block is skipped when the line before its fence is
    <!-- doc-test: skip REASON -->
(for commands that need root, run for long or never end); every skipped
block is listed with its reason in the test's output.
"""
import argparse
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP_RE = re.compile(r"<!--\s*doc-test:\s*skip\s+(.*?)\s*-->")
NUM_RE = r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
TOKEN_RE = re.compile(r"(\.\.\.|" + NUM_RE + r")")


def parse_blocks(path):
    """[(line, skip_reason, [(line, command, [expected output lines])])]."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        m = SKIP_RE.search(lines[i - 1]) if i > 0 else None
        start, i = i + 1, i + 1
        cmds = []
        while i < len(lines) and lines[i].strip() != "```":
            ln = lines[i]
            if ln.startswith("$ "):
                cmd, at = ln[2:], i + 1
                while cmd.endswith("\\"):
                    i += 1
                    cmd += "\n" + lines[i]
                hd = re.search(r"<<-?\s*'?(\w+)'?", cmd)
                if hd:
                    while lines[i + 1].strip() != hd.group(1):
                        i += 1
                        cmd += "\n" + lines[i]
                    i += 1
                    cmd += "\n" + lines[i]
                cmds.append((at, cmd, []))
            elif cmds:
                cmds[-1][2].append(ln)
            elif ln.strip():
                raise SystemExit("%s:%d: console block output before any command" % (path, i + 1))
            i += 1
        blocks.append((start, m.group(1) if m else None, cmds))
        i += 1
    return blocks


def line_matches(expected, actual):
    exp, act = " ".join(expected.split()), " ".join(actual.split())
    parts = TOKEN_RE.split(exp)
    pattern, nums = "", []
    for k, p in enumerate(parts):
        if k % 2 == 0:
            pattern += r"\s*".join(re.escape(w) for w in p.split(" ")) if p else ""
        elif p == "...":
            pattern += ".*?"
        else:
            pattern += "(" + NUM_RE + ")"
            nums.append(p)
    m = re.fullmatch(pattern, act)
    if not m:
        return False
    for want, got in zip(nums, m.groups()):
        if "." in want or "e" in want.lower():
            w, g = float(want), float(got)
            if not math.isclose(w, g, rel_tol=1e-6, abs_tol=1e-9):
                return False
        elif want != got:
            return False
    return True


def output_matches(expected, actual):
    """Match with "..." lines as wildcards over any number of lines."""
    exp = [e for e in expected]
    while exp and not exp[-1].strip():
        exp.pop()
    act = actual.rstrip("\n").split("\n") if actual.strip() else []

    def rec(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i].strip() == "...":
            return any(rec(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and line_matches(exp[i], act[j]) and rec(i + 1, j + 1)
    return rec(0, 0)


def start_daemon(contactd, work):
    log_path = os.path.join(work, "contactd.log")
    log = open(log_path, "wb")
    proc = subprocess.Popen([contactd, "--listen", "127.0.0.1:0", "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=log)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        m = re.search(r'msg="listening" tcp=\S+ port=(\d+)', text)
        if m and 'msg="ready"' in text:
            return proc, log, "127.0.0.1:" + m.group(1)
        if proc.poll() is not None:
            raise SystemExit("contactd exited during startup:\n" + text)
        time.sleep(0.02)
    proc.kill()
    raise SystemExit("contactd did not become ready")


def mirror(source, build, where):
    for name in os.listdir(source):
        if name == "build" or name.startswith(".git"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(where, name))
    os.symlink(os.path.abspath(build), os.path.join(where, "build"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    source = os.path.abspath(args.source)
    files = args.files or ["README.md", "bench/README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    contactd = os.path.join(args.build, "server", "daemon", "contactd")
    tmp = tempfile.mkdtemp(prefix="doc-commands-")
    failures, ran, skipped = [], 0, []
    proc, log, addr = start_daemon(contactd, tmp)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "CONTACTD_ADDR": addr, "LANG": "C.UTF-8",
           "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        for rel in files:
            path = os.path.join(source, rel)
            if not os.path.exists(path):
                continue
            cwd = os.path.join(tmp, "cwd-" + rel.replace("/", "_"))
            os.mkdir(cwd)
            mirror(source, args.build, cwd)
            for start, skip, cmds in parse_blocks(path):
                if skip:
                    skipped.append("%s:%d (%s)" % (rel, start, skip))
                    continue
                for at, cmd, expected in cmds:
                    ran += 1
                    r = subprocess.run(["bash", "-c", "set -o pipefail\n" + cmd], cwd=cwd, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600,
                                       universal_newlines=True)
                    where = "%s:%d: $ %s" % (rel, at, cmd.split("\n")[0])
                    if r.returncode != 0:
                        failures.append("%s\n  exit status %d\n  stdout: %s\n  stderr: %s" % (
                            where, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
                    elif any(e.strip() for e in expected) and not output_matches(expected, r.stdout):
                        failures.append("%s\n  output differs from the document.\n  shown:\n%s\n  got:\n%s" % (
                            where, "\n".join("    " + e for e in expected),
                            "\n".join("    " + a for a in r.stdout.rstrip("\n").split("\n"))))
                    else:
                        print("ok   %s" % where)
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(60)
        log.close()
        if rc != 0:
            failures.append("contactd exited %d" % rc)
        shutil.rmtree(tmp, ignore_errors=True)
    for s in skipped:
        print("skip %s" % s)
    for f in failures:
        print("FAIL %s" % f)
    print("%d commands run, %d failed, %d blocks skipped" % (ran, len(failures), len(skipped)))
    sys.exit(1 if failures or ran == 0 else 0)


if __name__ == "__main__":
    main()
