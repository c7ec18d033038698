#!/usr/bin/python3
"""Which engine files call functions defined in which other engine files.

Lists, for every .c file of server/engine, the other engine files whose
functions it calls (functions found with `ctags --c-kinds=f`, calls found as
identifiers followed by "(" outside comments and strings), then every pair of
files that call each other both ways. Exits 1 when such a pair exists and
neither file states the reason at its top ("two-way:" in its first comment).

usage: check_engine_deps.py [server/engine] [-v]
"""
import os
import re
import subprocess
import sys


def strip(src):
    """The source without comments, string and character literals."""
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)
    return pat.sub(lambda m: ' ' if m.group(0)[0] in '/"\'' else '', src)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('-')]
    verbose = '-v' in sys.argv
    d = args[0] if args else os.path.join(os.path.dirname(__file__), '..', '..', 'server', 'engine')
    files = sorted(f for f in os.listdir(d) if f.endswith('.c'))
    out = subprocess.run(['ctags', '-x', '--c-kinds=f', '--file-scope=no'] + [os.path.join(d, f) for f in files],
                         capture_output=True, text=True, check=True).stdout
    owner = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            owner.setdefault(parts[0], os.path.basename(parts[3]))
    calls = {}
    for f in files:
        with open(os.path.join(d, f)) as fh:
            text = strip(fh.read())
        used = set(re.findall(r'\b([A-Za-z_]\w*)\s*\(', text))
        calls[f] = {}
        for name in sorted(used):
            o = owner.get(name)
            if o and o != f:
                calls[f].setdefault(o, []).append(name)
    for f in files:
        if verbose or calls[f]:
            print(f'{f}: ' + ', '.join(f'{o} ({" ".join(n)})' for o, n in sorted(calls[f].items())))
    bad = 0
    for i, f in enumerate(files):
        for g in files[i + 1:]:
            if g in calls[f] and f in calls[g]:
                heads = []
                for x in (f, g):
                    with open(os.path.join(d, x)) as fh:
                        head = fh.read().split('*/', 1)[0]
                    heads.append('two-way:' in head)
                state = 'stated' if all(heads) else 'NOT STATED'
                print(f'two-way {f} <-> {g} ({state}): {f} calls {" ".join(calls[f][g])}; '
                      f'{g} calls {" ".join(calls[g][f])}')
                bad += not all(heads)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
