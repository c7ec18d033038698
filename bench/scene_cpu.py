#!/usr/bin/python3
"""CPU per 500-body scene query, per daemon thread (printed, not asserted).

Runs bench_throughput's scene phase (--scene W, one loop), samples
/proc/PID/task/TID/stat of its daemon over 5 s of back-to-back scene
queries, and prints each named thread's CPU per query, the CPU outside the
workers (serial: it does not shrink with more workers), the serial fraction
and the speed-up Amdahl's law gives for 12 workers.

  bench/scene_cpu.py BUILD_DIR [WORKERS]
"""
import os
import re
import subprocess
import sys
import time

bin_dir = sys.argv[1]
workers = sys.argv[2] if len(sys.argv) > 2 else "2"
hz = os.sysconf("SC_CLK_TCK")
bench = subprocess.Popen(
    [f"{bin_dir}/bench/bench_throughput", "--daemon", f"{bin_dir}/server/daemon/contactd", "--io-threads", "1",
     "--clients", "1", "--seconds", "8", "--no-redis", "--scene", workers], stdout=subprocess.PIPE, text=True)


def daemons():
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == bench.pid:
            found.append(pid)
    return found


def sample(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = (comm, (int(f[11]) + int(f[12])) / hz * 1000)
    return out


# bench_throughput first starts a daemon for its small-query phase; the
# second daemon it starts serves the scene
first = pid = None
while pid is None:
    time.sleep(0.02)
    for d in daemons():
        if first is None:
            first = d
        elif d != first:
            pid = d
time.sleep(1.5)  # past registration and the warm-up query
a, ta = sample(pid), time.time()
time.sleep(5.0)
b, tb = sample(pid), time.time()
out = bench.communicate()[0]
print(out.strip().splitlines()[-1])
ms = float(re.search(r"\(([\d.]+) ms/query", out).group(1))
queries = (tb - ta) * 1000 / ms
per = {}
for tid, (comm, cpu) in b.items():
    if tid in a:
        per[comm] = per.get(comm, 0.0) + (cpu - a[tid][1]) / queries
work = sum(v for k, v in per.items() if k.startswith("cd-worker"))
serial = sum(v for k, v in per.items() if not k.startswith("cd-worker"))
print(f"{queries:.0f} queries; CPU ms per query: " +
      ", ".join(f"{k} {v:.2f}" for k, v in sorted(per.items()) if v > 0.005))
f = serial / (serial + work)
print(f"workers {work:.2f} ms, other threads {serial:.2f} ms: serial fraction {f * 100:.1f}%, "
      f"Amdahl for 12 workers {1 / (f + (1 - f) / 12):.1f}x")
