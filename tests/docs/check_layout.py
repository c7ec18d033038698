#!/usr/bin/python3
"""The source tree keeps its layout rules.

    check_layout.py [--source DIR] [--exceptions FILE] [--ctags PROG]
    check_layout.py --self-test

Fails, naming each offender, when
  long-function  a function in a C file (.c, .h, .inc) under server/ or
                 client/ runs over 150 lines (from its first line to its
                 closing brace, as universal-ctags reports them);
  long-file      a source file (.c, .h, .inc, .py) under server/ or client/
                 is over 1,000 lines;
  two-way        two files of server/engine/ (or two of server/daemon/) call
                 each other: a call site `name(` in a function body of one
                 file reaches a function defined in the other, both ways
                 (x.c and x.h count as one file), unless each file carries
                 the line
                     Two-way with <the other file>: <reason>
  engine-include a file under server/daemon/ or client/ includes an engine
                 header (server/engine/*.h) other than ce.h, unless it
                 carries the line
                     Engine header <header>: <reason>
  name-prefix    a function of server/daemon/ that other files can call (not
                 static, defined in a .c file) is not named after its file:
                 cd_x.c defines cd_x or cd_x_*, or cd__x_* (an internal
                 shared through a private header); main() aside
  private-include a file under server/ or client/ includes a private header
                 (a name with a double underscore after its prefix, like
                 cd__conn.h: a layer's internals, libuv's uv__ discipline)
                 without being named on that header's line
                     Private to: <file> <file> ...
                 (so the daemon's protocol files, which see a connection
                 through cd_proto.h only, cannot include cd__conn.h)
  tmp-path       a file under tests/ or bench/ names a fixed path in the
                 machine's temporary directory (slash, "tmp"): tests write
                 only under the directory made for their run ($TMPDIR,
                 which tests/run.sh makes), so nothing an earlier run left
                 there can make one pass

A known violation is listed, with its reason, in the exceptions file
(default tests/docs/layout_exceptions.txt) as one line
    <the violation as this script prints it>  -- <reason>
Exceptions that match no violation any more are reported (remove them) but
do not fail. --self-test runs the check on small temporary trees, each with
one violation, and fails unless each is caught (and the clean and marked
trees pass).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 1000
C_EXT = (".c", ".h", ".inc")
SOURCE_EXT = C_EXT + (".py",)
SKIP_DIRS = {"build", "dist", "__pycache__", "node_modules", ".git"}
TWO_WAY_DIRS = ("server/engine", "server/daemon")
PREFIX_DIRS = ("server/daemon",)
INCLUDE_CHECK_DIRS = ("server/daemon", "client")
ENGINE_DIR = "server/engine"
PUBLIC_ENGINE_HEADER = "ce.h"

TWO_WAY_RE = re.compile(r"Two-way with (\S+?):\s+\S")
ENGINE_HEADER_RE = re.compile(r"Engine header (\S+?\.h):\s+\S")
PRIVATE_HEADER_RE = re.compile(r"^[a-z]+__\w+\.h$")
PRIVATE_TO_RE = re.compile(r"Private to:([^\n]*)")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
TMP_DIRS = ("tests", "bench")
TMP_EXT = C_EXT + (".cpp", ".py", ".sh", ".mjs", ".js", ".cmake", ".txt", ".md", ".json")
# the machine's temporary directory as a path of its own (not $TMPDIR, not
# a directory that merely ends in those letters); spelt in two pieces so
# that this file does not name it
TMP_PATH_RE = re.compile(r"(?<![\w.~$/-])/" + r"tmp(?![\w.-])")


def source_files(root, top, exts):
    """Paths (relative to root, '/'-separated) of the files under root/top."""
    out = []
    for d, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.endswith(".egg-info"))
        for f in sorted(files):
            if f.endswith(exts) and not f.endswith("_pb2.py"):
                out.append(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
    return out


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def ctags_functions(root, files, ctags):
    """[{name, path, line, end, static}] of the function definitions."""
    if not files:
        return []
    cmd = [ctags, "--languages=C", "--langmap=C:.c.h.inc", "--kinds-C=f", "--fields=+neF",
           "--output-format=json", "-f", "-"] + files
    try:
        p = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    except FileNotFoundError:
        raise SystemExit("check_layout: %s not found: install universal-ctags (deploy/deps.sh)" % ctags)
    if p.returncode:
        raise SystemExit("check_layout: %s failed: %s" % (ctags, p.stderr.strip()))
    out = []
    for ln in p.stdout.splitlines():
        t = json.loads(ln)
        if t.get("_type") != "tag" or t.get("kind") != "function":
            continue
        out.append({"name": t["name"], "path": t["path"], "line": int(t["line"]),
                    "end": int(t.get("end", t["line"])), "static": bool(t.get("file"))})
    return out


def strip_c(text):
    """The text with comments, string and character literals blanked (lines kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    pat = r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    return re.sub(pat, blank, text, flags=re.S)


def module(path):
    """x.c and x.h are one file for the two-way check."""
    return os.path.splitext(path)[0]


def long_functions(funcs):
    out = []
    for f in funcs:
        n = f["end"] - f["line"] + 1
        if n > MAX_FUNCTION_LINES:
            out.append(("long-function %s %s" % (f["path"], f["name"]),
                        "%d lines (limit %d)" % (n, MAX_FUNCTION_LINES)))
    return out


def long_files(root, files):
    out = []
    for rel in files:
        n = read(root, rel).count("\n")
        if n > MAX_FILE_LINES:
            out.append(("long-file %s" % rel, "%d lines (limit %d)" % (n, MAX_FILE_LINES)))
    return out


def calls_between(root, files, funcs):
    """{(caller module, callee module): example function} within one directory."""
    visible = {}  # name -> modules defining it where other files can call it
    for f in funcs:
        if not f["static"] or f["path"].endswith((".h", ".inc")):
            visible.setdefault(f["name"], set()).add(module(f["path"]))
    own = {}  # module -> names it defines (any linkage)
    for f in funcs:
        own.setdefault(module(f["path"]), set()).add(f["name"])
    edges = {}
    by_file = {}
    for f in funcs:
        by_file.setdefault(f["path"], []).append(f)
    for rel in files:
        lines = strip_c(read(root, rel)).split("\n")
        me = module(rel)
        for f in by_file.get(rel, []):
            body = "\n".join(lines[f["line"] - 1:f["end"]])
            for m in CALL_RE.finditer(body):
                name = m.group(1)
                if name in own.get(me, ()):
                    continue
                for callee in visible.get(name, ()):
                    if callee != me:
                        edges.setdefault((me, callee), name)
    return edges


def marker_names(text, rx):
    return {m.group(1) for m in rx.finditer(text)}


def two_way(root, funcs):
    out = []
    for d in TWO_WAY_DIRS:
        files = source_files(root, d, C_EXT)
        fs = [f for f in funcs if f["path"] in files]
        edges = calls_between(root, files, fs)
        names = {}  # module -> its files' names and their Two-way markers
        for rel in files:
            mod = module(rel)
            ent = names.setdefault(mod, {"files": [], "marks": set()})
            ent["files"].append(rel)
            ent["marks"] |= marker_names(read(root, rel), TWO_WAY_RE)
        for (a, b), via in sorted(edges.items()):
            if a > b or (b, a) not in edges:
                continue
            na, nb = names[a], names[b]
            a_marks_b = any(os.path.basename(x) in na["marks"] for x in nb["files"])
            b_marks_a = any(os.path.basename(x) in nb["marks"] for x in na["files"])
            if a_marks_b and b_marks_a:
                continue
            fa = shown(na["files"])
            fb = shown(nb["files"])
            out.append(("two-way %s %s" % (fa, fb),
                        "%s calls %s(), %s calls %s()" % (os.path.basename(fa), via, os.path.basename(fb),
                                                           edges[(b, a)])))
    return out


def shown(files):
    """A module by its .c file, else its first file."""
    cs = [f for f in files if f.endswith(".c")]
    return (cs or files)[0]


def engine_includes(root):
    engine = {os.path.basename(f) for f in source_files(root, ENGINE_DIR, (".h",))}
    engine.discard(PUBLIC_ENGINE_HEADER)
    out = []
    for d in INCLUDE_CHECK_DIRS:
        for rel in source_files(root, d, C_EXT):
            text = read(root, rel)
            marks = marker_names(text, ENGINE_HEADER_RE)
            for inc in INCLUDE_RE.findall(strip_c_keep_includes(text)):
                h = os.path.basename(inc)
                if h in engine and h not in marks:
                    out.append(("engine-include %s %s" % (rel, h),
                                "only %s is the engine's public header" % PUBLIC_ENGINE_HEADER))
    return out


def name_prefixes(funcs):
    out = []
    for f in funcs:
        d, base = os.path.split(f["path"])
        if d not in PREFIX_DIRS or f["static"] or not base.endswith(".c") or f["name"] == "main":
            continue
        mod = os.path.splitext(base)[0]
        name = f["name"]
        if name.startswith("cd__"):
            name = "cd_" + name[4:]
        if name != mod and not name.startswith(mod + "_"):
            out.append(("name-prefix %s %s" % (f["path"], f["name"]),
                        "a function other files call is named after its file: %s_*" % mod))
    return out


def private_includes(root):
    files = []
    for top in ("server", "client"):
        files += source_files(root, top, C_EXT)
    users = {}  # private header -> the files its "Private to:" line names
    for rel in files:
        h = os.path.basename(rel)
        if PRIVATE_HEADER_RE.match(h):
            names = set()
            for m in PRIVATE_TO_RE.finditer(read(root, rel)):
                names |= set(re.findall(r"[\w.]+\.(?:c|h|inc)\b", m.group(1)))
            users.setdefault(h, set()).update(names)
    out = []
    for rel in files:
        me = os.path.basename(rel)
        for inc in INCLUDE_RE.findall(strip_c_keep_includes(read(root, rel))):
            h = os.path.basename(inc)
            if h in users and me != h and me not in users[h]:
                allowed = " ".join(sorted(users[h])) or "no file"
                out.append(("private-include %s %s" % (rel, h), "%s is private to %s" % (h, allowed)))
    return out


def strip_c_keep_includes(text):
    """Comments blanked; include lines kept whole (their "file" is a string)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def tmp_paths(root):
    out = []
    for top in TMP_DIRS:
        for rel in source_files(root, top, TMP_EXT):
            for no, ln in enumerate(read(root, rel).split("\n"), 1):
                if TMP_PATH_RE.search(ln):
                    out.append(("tmp-path %s:%d" % (rel, no), "write under $TMPDIR, the directory made for the run"))
    return out


def check(root, ctags):
    """[(violation, detail)], sorted."""
    cfiles = []
    for top in ("server", "client"):
        cfiles += source_files(root, top, C_EXT)
    funcs = ctags_functions(root, cfiles, ctags)
    allfiles = []
    for top in ("server", "client"):
        allfiles += source_files(root, top, SOURCE_EXT)
    v = long_functions(funcs) + long_files(root, allfiles) + two_way(root, funcs) + engine_includes(root)
    v += private_includes(root) + name_prefixes(funcs) + tmp_paths(root)
    return sorted(set(v))


def read_exceptions(path):
    """{violation: reason}."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for no, ln in enumerate(f, 1):
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            key, sep, reason = ln.partition(" -- ")
            if not sep or not reason.strip():
                raise SystemExit("%s:%d: expected \"<violation> -- <reason>\"" % (path, no))
            out[" ".join(key.split())] = reason.strip()
    return out


def run(root, exceptions, ctags, out=sys.stdout):
    """0 when every violation is a listed exception."""
    found = check(root, ctags)
    allowed = read_exceptions(exceptions)
    bad = [(k, d) for k, d in found if k not in allowed]
    keys = {k for k, _ in found}
    for k, d in bad:
        print("layout: %s  (%s)" % (k, d), file=out)
    for k in sorted(set(allowed) - keys):
        print("layout: stale exception, remove it from %s: %s" % (os.path.basename(exceptions), k), file=out)
    print("layout: %d violations, %d listed as exceptions, %d new" % (len(found), len(found) - len(bad), len(bad)),
          file=out)
    return 1 if bad else 0


# ---- self-test -------------------------------------------------------------

def c_function(name, lines, calls=()):
    """A C function of exactly `lines` lines (lines >= 3)."""
    body = ["  %s();" % c for c in calls]
    body += ["  (void)0;"] * (lines - 2 - len(body))
    return "void %s(void) {\n%s\n}\n" % (name, "\n".join(body))


def write_tree(root, files):
    for rel, text in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)


def self_test(ctags):
    base = {
        "server/engine/ce.h": "void ce_public(void);\n",
        "server/engine/ce_bvh.h": "void ce_bvh_build(void);\n",
        "server/engine/ce_a.c": c_function("ce_a_run", 10, ["ce_public"]),
        "server/engine/ce_b.c": c_function("ce_b_run", 10),
        "server/daemon/cd_main.c": '#include "ce.h"\n' + c_function("cd_main_run", 5, ["ce_public"]),
        "client/cc_x.c": c_function("cc_x", MAX_FUNCTION_LINES),
        "server/daemon/cd__conn.h": "/* Private to: cd_conn.c cd_input.c */\nvoid cd__conn_go(void);\n",
        "server/daemon/cd_conn.c": '#include "cd__conn.h"\n' + c_function("cd_conn_run", 5, ["cd__conn_go"]),
    }
    mark_a = "/* Two-way with ce_b.c: test reason. */\n"
    mark_b = "/* Two-way with ce_a.c: test reason. */\n"
    cases = [
        # (what, changed files, expected violation or None for a pass, exceptions)
        ("clean tree", {}, None, ""),
        ("151-line function", {"client/cc_x.c": c_function("cc_x", MAX_FUNCTION_LINES + 1)},
         "long-function client/cc_x.c cc_x", ""),
        ("151-line static function in a header",
         {"server/engine/ce_bvh.h": "static inline " + c_function("ce_bvh_walk", MAX_FUNCTION_LINES + 1)},
         "long-function server/engine/ce_bvh.h ce_bvh_walk", ""),
        ("1,001-line file", {"server/daemon/cd_big.c": "/* x */\n" * (MAX_FILE_LINES + 1)},
         "long-file server/daemon/cd_big.c", ""),
        ("1,001-line Python file", {"client/python/m.py": "x = 1\n" * (MAX_FILE_LINES + 1)},
         "long-file client/python/m.py", ""),
        ("two-way engine files",
         {"server/engine/ce_a.c": c_function("ce_a_run", 10, ["ce_b_run"]),
          "server/engine/ce_b.c": c_function("ce_b_run", 10, ["ce_a_run"])},
         "two-way server/engine/ce_a.c server/engine/ce_b.c", ""),
        ("two-way daemon files",
         {"server/daemon/cd_p.c": c_function("cd_p", 5, ["cd_q"]),
          "server/daemon/cd_q.c": c_function("cd_q", 5, ["cd_p"])},
         "two-way server/daemon/cd_p.c server/daemon/cd_q.c", ""),
        ("two-way marked in one file only",
         {"server/engine/ce_a.c": mark_a + c_function("ce_a_run", 10, ["ce_b_run"]),
          "server/engine/ce_b.c": c_function("ce_b_run", 10, ["ce_a_run"])},
         "two-way server/engine/ce_a.c server/engine/ce_b.c", ""),
        ("two-way marked in both files",
         {"server/engine/ce_a.c": mark_a + c_function("ce_a_run", 10, ["ce_b_run"]),
          "server/engine/ce_b.c": mark_b + c_function("ce_b_run", 10, ["ce_a_run"])}, None, ""),
        ("one-way call and a call named only in a comment",
         {"server/engine/ce_a.c": c_function("ce_a_run", 10, ["ce_b_run"]),
          "server/engine/ce_b.c": "/* ce_a_run() is not called here */\n" + c_function("ce_b_run", 10)},
         None, ""),
        ("daemon includes an engine header",
         {"server/daemon/cd_main.c": '#include "ce_bvh.h"\n' + c_function("cd_main_run", 5)},
         "engine-include server/daemon/cd_main.c ce_bvh.h", ""),
        ("client includes an engine header",
         {"client/cc_y.c": "#include <ce_bvh.h>\n" + c_function("cc_y", 5)},
         "engine-include client/cc_y.c ce_bvh.h", ""),
        ("engine header with its reason",
         {"server/daemon/cd_main.c": '/* Engine header ce_bvh.h: test reason. */\n#include "ce_bvh.h"\n'
          + c_function("cd_main_run", 5)}, None, ""),
        ("protocol file includes the transport's private header",
         {"server/daemon/cd_handlers.c": '#include "cd__conn.h"\n' + c_function("cd_handlers_run", 5)},
         "private-include server/daemon/cd_handlers.c cd__conn.h", ""),
        ("private header named in a comment only",
         {"server/daemon/cd_handlers.c": '/* not #include "cd__conn.h" */\n' + c_function("cd_handlers_run", 5)},
         None, ""),
        ("daemon function not named after its file",
         {"server/daemon/cd_main.c": '#include "ce.h"\n' + c_function("cd_main_run", 5, ["ce_public"])
          + c_function("cd_other_name", 4)},
         "name-prefix server/daemon/cd_main.c cd_other_name", ""),
        ("static daemon function, internal cd__ name, main()",
         {"server/daemon/cd_main.c": '#include "ce.h"\n' + c_function("cd_main_run", 5, ["ce_public"])
          + "static " + c_function("helper", 4) + c_function("cd__main_shared", 4) + c_function("main", 4)},
         None, ""),
        ("test naming a fixed temporary path",
         {"tests/daemon/test_x.c": 'const char *p = "/' + 'tmp/x.json";\n'}, "tmp-path tests/daemon/test_x.c:1", ""),
        ("benchmark script naming the temporary directory",
         {"bench/run.sh": "set -e\nmktemp -d /" + "tmp/b-XXXXXX\n"}, "tmp-path bench/run.sh:2", ""),
        ("test writing under $TMPDIR and mounting a tmpfs",
         {"tests/daemon/test_y.c": 'getenv("TMPDIR"); mount("tmpfs", d, "tmpfs", 0, 0); /* a/' + 'tmp */\n',
          "tests/run.sh": "mktemp -d -t x.XXXXXX; echo $TMPDIR/" + "tmp\n"}, None, ""),
        ("listed exception",
         {"client/cc_x.c": c_function("cc_x", MAX_FUNCTION_LINES + 1)}, None,
         "long-function client/cc_x.c cc_x -- test reason\n"),
        ("exception for another function",
         {"client/cc_x.c": c_function("cc_x", MAX_FUNCTION_LINES + 1)}, "long-function client/cc_x.c cc_x",
         "long-function client/cc_z.c cc_x -- test reason\n"),
    ]
    failed = 0
    for what, changes, expect, exc in cases:
        with tempfile.TemporaryDirectory() as tmp:
            files = dict(base)
            files.update(changes)
            write_tree(tmp, files)
            excf = os.path.join(tmp, "exceptions.txt")
            with open(excf, "w", encoding="utf-8") as f:
                f.write(exc)

            class Buf(list):
                def write(self, s):
                    self.append(s)
            buf = Buf()
            rc = run(tmp, excf, ctags, out=buf)
            text = "".join(buf)
            ok = rc == 0 if expect is None else rc == 1 and ("layout: " + expect + "  (") in text
            print("%s: %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else "\n" + text))
            failed += not ok
    print("self-test: %d of %d cases failed" % (failed, len(cases)))
    return 1 if failed else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1].strip())
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--exceptions", default=None)
    ap.add_argument("--ctags", default=shutil.which("ctags-universal") or "ctags",
                    help="universal-ctags (default: ctags-universal, else ctags)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test(a.ctags)
    exc = a.exceptions or os.path.join(a.source, "tests/docs/layout_exceptions.txt")
    return run(a.source, exc, a.ctags)


if __name__ == "__main__":
    sys.exit(main())
