#!/usr/bin/python3
"""A 1 kHz controller loop against one contactd, from Python and from C.

Each tick (1 ms apart for `seconds`; a tick that starts late starts at
once, without catching up) sends the bodies' states and waits
for their contact: as a stream update and its result (Stream.update /
update_arrays, then Stream.result), or as one ContactQuery. Printed per
client, mode and body count: ticks, achieved rate, p50 / p99 / max latency
(send to result), ticks whose latency passed 1 ms, and the client's CPU
(share of one core). 1 body: a sphere on a rigid floor; 100 bodies: 100
spheres on it (100 pairs), sent through update_arrays ((100, 7) poses)
and read as arrays (Stream.result(arrays=True)).
The C rows come from bench_control (the C library). Prints, asserts nothing.

usage: bench/controller_loop.py BUILD_DIR [seconds]     (needs the Python
client installed, e.g. BUILD_DIR/pyvenv/bin/python bench/controller_loop.py)
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from contactd_client import Body, Client

R, E = 0.05, 1e5


def report(client, mode, nb, lat, wall, cpu):
    lat = np.sort(np.asarray(lat))
    n = len(lat)
    print("%-7s %-6s %3d bodies: %5d ticks %7.1f Hz  p50 %6.0f us  p99 %6.0f us  max %7.0f us  over 1 ms %4d  "
          "client CPU %4.1f%%" % (client, mode, nb, n, n / wall, lat[n // 2] * 1e6, lat[int(n * 0.99)] * 1e6,
                                  lat[-1] * 1e6, int((lat > 1e-3).sum()), 100 * cpu / wall), flush=True)


def loop(c, mode, nb, secs, ball, floor):
    ids = np.arange(1, nb + 1)
    xy = np.stack([ids % 10 * 0.2, ids // 10 * 0.2], axis=1).astype(float)
    bodies = [Body(int(i), ball, position=(float(xy[i - 1, 0]), float(xy[i - 1, 1]), 0.045)) for i in ids]
    bodies.append(Body(nb + 1, floor))
    pairs = [(int(i), nb + 1) for i in ids]
    poses = np.zeros((nb, 7))
    poses[:, :2] = xy
    poses[:, 3] = 1.0
    s = c.stream(bodies, pairs=pairs) if mode == "stream" else None
    lat = []
    t0, c0 = time.monotonic(), time.process_time()
    due, k = t0, 0
    while True:
        # ticks 1 ms apart; a late tick starts at once and the clock moves on (no catching up)
        due = max(due + 1e-3, time.monotonic())
        if due > t0 + secs:
            break
        left = due - time.monotonic()
        if left > 0:
            time.sleep(left)  # (no spinning: the CPU column is the client's work)
        k += 1
        poses[:, 2] = 0.045 + 0.0005 * ((k + ids) % 5)
        ts = time.monotonic()
        if s is not None:
            if nb == 1:
                seq = s.update({1: {"position": tuple(poses[0, :3])}})
            else:
                seq = s.update_arrays(ids, poses)
            r = s.result(arrays=nb > 1)
            assert r.sequence == seq and len(r.arrays().a if nb > 1 else r.pairs) == nb
        else:
            for i, b in enumerate(bodies[:nb]):
                b.position = (xy[i, 0], xy[i, 1], poses[i, 2])
            r = c.query(bodies, pairs=pairs)
            assert len(r.pairs) == nb
        lat.append(time.monotonic() - ts)
    report("Python", mode, nb, lat, time.monotonic() - t0, time.process_time() - c0)
    if s is not None:
        s.close()


def main():
    build = os.path.abspath(sys.argv[1])
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    d = tempfile.mkdtemp(prefix="bench-ctl-")
    sock = os.path.join(d, "contactd.sock")
    with open(os.path.join(d, "log"), "wb") as log:
        p = subprocess.Popen([os.path.join(build, "server/daemon/contactd"), "--listen", "none", "--unix", sock,
                              "--workers", "2"], stderr=log)
    try:
        for _ in range(500):
            if os.path.exists(sock):
                break
            time.sleep(0.01)
        addr = "unix:" + sock
        print("%.0f s per row, Unix socket, contactd --workers 2, %d online cores" % (secs, os.cpu_count()))
        with Client(addr) as c:
            ball = c.register_sphere(R, modulus=E, hint=R / 4)
            floor = c.register_half_space(rigid=True)
            for nb in (1, 100):
                for mode in ("stream", "query"):
                    loop(c, mode, nb, secs, ball, floor)
        for nb in (1, 100):
            subprocess.run([os.path.join(build, "bench/bench_control"), addr, str(secs), str(nb)], check=True)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
