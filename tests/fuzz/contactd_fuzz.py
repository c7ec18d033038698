#!/usr/bin/python3
"""Mutation fuzzer for contactd: protobuf frames and JSON lines.

It starts the daemon itself (--daemon) on an ephemeral TCP port and a Unix
socket, with a config written into --work-dir (tight limits, so that the
limit paths are reached; --big raises the element, body and pair limits and
the sizes the mutations grow things to).

What it sends. A corpus of valid requests is built with the Python client's
own message construction (contactd_client.register_request, query_request,
open_stream_request, ...): every shape kind, every mesh file
format of tests/engine/data, queries of every pair kind, detail level and
contact model, filters and exclusions, streams. A keeper connection
registers the corpus geometry and holds it, so queries find it. Each batch
opens 1 to --conns connections at once (TCP, a quarter over the Unix
socket), 35% of them JSON, and sends 8-80 messages on each, derived from the
corpus by
  - message-level mutations: fields set to extremes (NaN, inf, huge or
    negative integers, unknown enum values, odd strings, known geometry
    ids), repeated fields emptied, cut, duplicated up to a cap, shuffled or
    filled with junk, sub-messages and oneof members set or cleared, the
    payload swapped for another request kind;
  - byte-level mutations of whole messages and of embedded mesh files:
    bit flips, inserts, deletes, duplications, splices, interesting 32-bit
    values, doubles and varints, numbers in text replaced, lines deleted,
    repeated or swapped; random protobuf wire data (bad tags, wire types,
    lengths, groups) inside an Envelope field;
  - JSON mutations of the object (values replaced by odd tokens such as
    1e400, NaN, "\\ud800", 2^64, keys deleted, renamed or duplicated, arrays
    grown, nesting up to 20 000 deep, strings and numbers swapped) and of
    the text (lines merged or split, BOM, CR, trailing garbage, invalid
    UTF-8, NUL, lines longer than max_frame_bytes);
  - framing: wrong, non-minimal, over-long and huge length prefixes,
    truncated, empty and repeated frames, JSON on a protobuf connection and
    protobuf on a JSON one;
  - connection behaviour: 1-7 byte pieces, slow sending, half close, RST
    after or in the middle of the requests.

What it checks after every batch, failing on the first problem:
  - the daemon still runs;
  - its log holds only its own logfmt lines and none at level=error (a
    sanitizer report, "runtime error:", an abort message is anything else);
  - no reply was an INTERNAL, UNKNOWN, DATA_LOSS or unspecified error, an
    unparsable frame or JSON line, or an Envelope without payload (replies
    cut short by the server closing the connection are not counted);
  - on a new connection it answers hello, registers a ball and a floor
    (cached: the keeper holds them) and answers the sphere-on-floor query
    with status surface, a force within 15% of the analytic one and equal
    (to a relative 1e-9) to the first check's, a pair apart with status
    none; every 10th batch also the same query as a JSON line over the Unix
    socket. "Stops answering" is no reply within 60 s.
At the end the daemon gets SIGTERM and must exit 0 with a clean log
(LeakSanitizer reports at exit). Nothing is timed and no memory is measured
against a threshold: the peak RSS is only printed.

On a failure it prints what went wrong, at which batch of which seed and
the options that rerun it, saves the bytes each connection of that batch
sent (connN.bin; meta.json has their wire format, behaviour, message sizes
and what was wrong), a copy of the daemon log and, if the daemon hung and
gdb is installed, its threads' stacks in WORK/finding-seedS-batchN/, kills
the daemon and exits 1.

Reproducing. Every random choice of batch N comes from (--seed, N) alone,
so the same seed and batches generate the same inputs (what the daemon does
with them across connections and threads, and so where a connection it
closes stops, is not fixed). --from-batch N --batches N reruns batch N
alone against a fresh daemon; if the failure needs what the earlier batches
left behind, rerun from batch 1.

ctest runs a short smoke of this (test_fuzz_smoke, tests/fuzz/CMakeLists.txt:
a fixed seed and number of batches). A long run by hand, against a sanitizer
build, from the source directory:

    cmake -S . -B build-fz-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCONTACTD_SANITIZE=ON
    cmake --build build-fz-asan -j"$(nproc)"
    sh tests/common/install_python_client.sh build-fz-asan/venv
    build-fz-asan/venv/bin/python tests/fuzz/contactd_fuzz.py --daemon build-fz-asan/server/daemon/contactd \\
        --data-dir tests/engine/data --work-dir build-fz-asan/work --minutes 60 [--big]

(the seed is printed; pass --seed to repeat a run; --batches and --minutes
may be combined, the first reached ends the run). The daemon inherits the
environment, ASAN_OPTIONS and UBSAN_OPTIONS included.

Out of memory too: with --daemon .../tests/daemon/contactd_faults and
--faults N, about one allocation in N fails while each batch runs (the
shim's serve mode, armed with SIGUSR1 and disarmed with SIGUSR2 before the
checks, each signal waiting for the shim's line in the log), so every bad-input path is also tried with its allocations
failing; ctest's test_fuzz_faults_smoke does this briefly.
"""
import argparse
import collections
import copy
import hashlib
import json
import math
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import DecodeError

pb = cc = None  # contactd_pb2 and contactd_client, imported in main() (installed, or from --client-dir and --pb2-dir)

# the health check: a ball of radius R and modulus E at height H above a rigid floor
R, E, H = 0.05, 1e5, 0.045
HEALTH_TIMEOUT_S = 60  # "stops answering"
CONN_DEADLINE_S = 20  # a fuzz connection gives up sending after this long
NAN, INF = float("nan"), float("inf")


def sphere_force(r, e, h):
    """Hydroelastic force of a compliant sphere (pressure E * depth / r)
    whose centre is h above a rigid plane."""
    return 2 * math.pi * e / r * (r * (r * r - h * h) / 2 - (r ** 3 - h ** 3) / 3)


def varint(n):
    """The client's varint of n taken modulo 2**64, so that negative and
    oversized values encode as the wire would carry them."""
    return cc.encode_varint(n & ((1 << 64) - 1))


def frame(body):
    return varint(len(body)) + body


class Finding(Exception):
    """What went wrong; ends the run. hung: the daemon stopped answering."""

    def __init__(self, what, hung=False):
        super().__init__(what)
        self.hung = hung


# ---------------------------------------------------------------------------
# the daemon
# ---------------------------------------------------------------------------

# Tight limits, so that fuzz inputs reach the paths beyond them: long JSON lines
# and big frames pass max_frame_bytes, grown lists the body, pair and element
# limits, detailed replies max_reply_bytes, a few connections together
# request_memory_bytes (and then the slow-sender deadline), streams
# max_streams_per_conn; 2 pairs per job split queries across both workers.
SMALL_LIMITS = {
    "max_frame_bytes": 65536, "decode_budget_bytes": 262144, "max_bodies_per_query": 16,
    "max_pairs_per_query": 64, "max_inflight_per_conn": 4, "max_output_bytes": 65536,
    "max_reply_bytes": 65536, "reply_memory_bytes": 262144, "request_memory_bytes": 131072,
    "frame_grace_ms": 500, "frame_min_rate_bytes": 65536, "idle_timeout_ms": 10000, "linger_ms": 200,
    "max_streams_per_conn": 2, "cache_bytes": 16 << 20, "max_mesh_elements": 20000,
    "worker_arena_bytes": 16 << 20, "pairs_per_job": 2, "build_workers": 1,
}
BIG_LIMITS = {"max_mesh_elements": 100000, "max_bodies_per_query": 2000, "max_pairs_per_query": 20000}
# --auth: the daemon has principals; the fuzzer's own clients log in with
# AUTH_TOKEN (every role), most fuzz connections start with it, and Hellos
# with it, a wrong token and a token of fewer roles are in the corpus, so
# mutation reaches the token path of Hello. Failures never lock out the
# address every client shares (auth_fail_max is out of reach).
AUTH_TOKEN = "fuzz-token-0123456789"
AUTH_LIMITS = {"auth_fail_max": 1 << 40, "auth_fail_delay_ms": 0}


def auth_principals(path):
    """The principals file of --auth: the fuzzer (token, every role), a
    query-only robot (token), and this uid on the Unix socket."""
    doc = {"principals": [
        {"name": "fuzz", "token_sha256": hashlib.sha256(AUTH_TOKEN.encode()).hexdigest(),
         "roles": ["query", "register", "admin"], "tenant": "*"},
        {"name": "robot", "token_sha256": hashlib.sha256(b"robot").hexdigest(), "roles": ["query"], "tenant": "a"},
        {"name": "me", "uid": os.getuid(), "roles": ["query", "register", "admin"], "tenant": "*"}]}
    with open(path, "w") as f:
        json.dump(doc, f)


def login_request(token=AUTH_TOKEN):
    return pb.Envelope(request_id=1, hello=pb.Hello(protocol_version=1, client_name="fuzz", token=token))


class Daemon:
    def __init__(self, binary, config, log_path, unix_path, env=None):
        self.binary, self.config, self.log_path, self.unix_path = binary, config, log_path, unix_path
        self.env = env
        self.proc = None
        self.port = None
        self.log_pos = 0  # log bytes already scanned

    def start(self):
        if os.path.exists(self.unix_path):
            os.unlink(self.unix_path)
        with open(self.log_path, "wb") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [self.binary, "--listen", "127.0.0.1:0", "--unix", self.unix_path, "--workers", "2",
                 "--config", self.config], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                env=self.env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            m = re.search(r'msg="listening" tcp=\S+ port=(\d+)', text)
            if m and 'msg="ready"' in text:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise Finding("contactd exited at startup (status %s):\n%s" % (self.proc.returncode, text))
            time.sleep(0.05)
        raise Finding("contactd did not log ready within 60 s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal_and_wait(self, sig, ack, timeout=20):
        """Send sig and wait until the log gets a line that ack (a regular
        expression) matches from its start (contactd_faults acknowledges
        arming and disarming so: two signals in a row could have their
        handlers run at once, in either order)."""
        pos = os.path.getsize(self.log_path)
        self.proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as f:
                f.seek(pos)
                data = f.read()
            if any(re.match(ack.encode(), ln) for ln in data.split(b"\n")):
                return
            if not self.alive():
                return  # check_alive says why
            time.sleep(0.002)
        raise Finding("contactd_faults did not acknowledge signal %d within %d s" % (sig, timeout))

    def peak_rss_mb(self):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def new_log_lines(self):
        """Complete log lines written since the last call."""
        with open(self.log_path, "rb") as f:
            f.seek(self.log_pos)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self.log_pos += end
        # split at "\n" only: splitlines() also splits at U+2028 and the like, which a
        # client's name can hold and the daemon logs as it is
        return data[:end].decode("utf-8", "replace").split("\n")[:-1]

    def stop(self):
        """SIGTERM; the exit status, or None if it did not exit within 60 s (then killed)."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        return self.proc.returncode

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()


def bad_log_lines(lines):
    """The daemon writes only logfmt lines ("ts=... level=... msg=...", control
    characters escaped): anything else on its stderr is a sanitizer report,
    an abort or assertion message, or similar. level=error is logged only when
    something failed that should not (e.g. a reply could not be encoded).
    contactd_faults (--faults) also writes "faults: ..." lines."""
    return [ln for ln in lines if not (ln.startswith("ts=") or ln.startswith("faults: ")) or " level=error " in ln]


def exit_status_text(rc):
    if rc < 0:
        return "status %d (killed by %s)" % (rc, signal.Signals(-rc).name)
    return "status %d" % rc


# ---------------------------------------------------------------------------
# corpus: valid requests built by the Python client's own code
# ---------------------------------------------------------------------------

class Numbered:
    """Request ids as one client connection would number them: 1, 2, ...
    for requests, the top bit and 1, 2, ... for stream updates."""

    STREAM_BIT = 1 << 63

    def __init__(self):
        self.next, self.next_update = 1, 1

    def __call__(self, env):
        if env.WhichOneof("msg") == "stream_update":
            env.request_id = self.STREAM_BIT | self.next_update
            self.next_update += 1
        else:
            env.request_id = self.next
            self.next += 1
        return env


OBJ_TET = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
CUBE_V = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
CUBE_T = [(0, 3, 2), (0, 2, 1), (4, 5, 6), (4, 6, 7), (0, 1, 5), (0, 5, 4), (1, 2, 6), (1, 6, 5),
          (2, 3, 7), (2, 7, 6), (3, 0, 4), (3, 4, 7)]
TET_V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
TET_F = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]


def positive_tet(a, b, c, d, v):
    """(a, b, c, d) ordered so that the tetrahedron has positive volume."""
    u, w, x = ([v[k][i] - v[a][i] for i in range(3)] for k in (b, c, d))
    det = (u[0] * (w[1] * x[2] - w[2] * x[1]) - u[1] * (w[0] * x[2] - w[2] * x[0])
           + u[2] * (w[0] * x[1] - w[1] * x[0]))
    return (a, b, c, d) if det > 0 else (a, c, b, d)


# the unit cube as 12 tets around its centre (vertex 8)
CENTRE_TETS = [positive_tet(a, b, c, 8, CUBE_V + [(0.5, 0.5, 0.5)]) for a, b, c in CUBE_T]


def registrations(data_dir):
    """[(kind, Envelope)]: every shape kind and mesh file format; by the
    client's register_request() where it has a helper, by hand for
    tetMesh/triMesh."""
    num = Numbered()
    out = []

    def rd(name):
        with open(os.path.join(data_dir, name), "rb") as f:
            return f.read()

    def reg(kind, shape, **kw):
        out.append((kind, num(cc.register_request(shape, **kw))))

    reg("sphere", "sphere", radius=R, modulus=E, hint=R / 4)  # the health check's ball
    reg("half_space_rigid", "half_space", rigid=True)  # and floor
    reg("sphere_rigid", "sphere", radius=0.1, rigid=True, hint=0.03, dissipation=0.5, friction=0.3)
    reg("box", "box", size=(0.1, 0.2, 0.05), modulus=1e6, hint=0.05)
    reg("box_rigid", "box", size=(0.3, 0.3, 0.3), rigid=True, hint=0.1)
    reg("cylinder", "cylinder", radius=0.05, length=0.02, modulus=1e6, hint=0.02)
    reg("capsule", "capsule", radius=0.02, length=0.1, modulus=1e6, hint=0.01)
    reg("ellipsoid", "ellipsoid", semi_axes=(0.03, 0.02, 0.01), modulus=1e6, hint=0.01)
    reg("half_space_soft", "half_space", modulus=1e6, slab=0.1)
    reg("convex", "convex", points=CUBE_V + [(0.5, 0.5, 1.3)], rigid=True, name="roof")
    reg("obj_tet", "mesh", data=OBJ_TET, rigid=True, format="obj")
    reg("obj_cube", "mesh", data=rd("cube.obj"), rigid=True, format="obj")
    reg("obj_cube_soft", "mesh", data=rd("cube.obj"), modulus=1e5, hint=0.5, format="obj", edge_length=0.5,
        field="distance")
    reg("obj_tet_laplace", "mesh", data=OBJ_TET, modulus=1e5, hint=0.3, edge_length=0.3, field="laplace",
        core_depth=0.0, hull_if_open=True)
    reg("stl_ascii", "mesh", data=rd("cube_ascii.stl"), rigid=True, format="stl")
    reg("stl_binary", "mesh", data=rd("cube_binary.stl"), rigid=True)  # format sniffed
    # compliant tet mesh files: two tets, no interior vertex, so a (zero) vertex pressure field
    for kind, name, fmt in (("vtk", "two_tets.vtk", "vtk"), ("vtk_bin", "two_tets_binary.vtk", None),
                            ("vtk51", "two_tets_v51.vtk", None), ("msh22", "two_tets_v22.msh", "msh"),
                            ("msh22b", "two_tets_v22_binary.msh", None), ("msh41", "two_tets_v41.msh", None),
                            ("msh41b", "two_tets_v41_binary.msh", None)):
        env = num(cc.register_request("mesh", data=rd(name), modulus=1e5, **({"format": fmt} if fmt else {})))
        env.register_geometry.vertex_pressure.values.extend([0.0] * 5)
        out.append((kind, env))
    reg("hf4", "heightfield", heights=[[0.0, 0.1, 0.0, 0.1]] * 4, dx=0.5, origin=(-1, -1, 0))
    reg("hf8c2", "heightfield", heights=[0.01 * ((i * 7) % 5) for i in range(64)], nx=8, ny=8, dx=0.25,
        dy=0.3, continuity=2, origin=(-1, -1, -0.1))

    def by_hand(kind, compliant, **fields):
        env = pb.Envelope()
        g = env.register_geometry
        g.compliance = pb.COMPLIANCE_COMPLIANT if compliant else pb.COMPLIANCE_RIGID
        for name, value in fields.items():
            setattr(g, name, value)
        out.append((kind, env))
        return g

    g = by_hand("tet_mesh", True, modulus=1e5)
    g.tet_mesh.vertices.extend(x for v in CUBE_V + [(0.5, 0.5, 0.5)] for x in v)
    g.tet_mesh.tets.extend(i for t in CENTRE_TETS for i in t)
    g = by_hand("tet_mesh_p", True, modulus=2e5, want_progress=True)  # with a per-vertex pressure
    g.tet_mesh.vertices.extend(x for v in TET_V for x in v)
    g.tet_mesh.tets.extend([0, 1, 2, 3])
    g.tet_mesh.pressure.values.extend([0.0] * 4)
    g = by_hand("tri_mesh", False)  # rigid cube with two convex pieces
    g.tri_mesh.vertices.extend(x for v in CUBE_V for x in v)
    g.tri_mesh.triangles.extend(i for f in CUBE_T for i in f)
    g.tri_mesh.convex_pieces.add().points.extend(x for v in CUBE_V[:4] + [(0.5, 0.5, 0.5)] for x in v)
    g.tri_mesh.convex_pieces.add().points.extend(x for v in CUBE_V[4:] + [(0.5, 0.5, 0.4)] for x in v)
    g.point_stiffness.value = 1e4
    g.material.friction = 0.5
    g = by_hand("tri_mesh_open", False)
    g.tri_mesh.vertices.extend(x for v in TET_V for x in v)
    g.tri_mesh.triangles.extend([0, 2, 1, 0, 1, 3])
    g.tri_mesh.allow_open = True
    g = by_hand("tri_mesh_soft", True, modulus=1e5, resolution_hint=0.3)  # tetrahedralised by the daemon
    g.tri_mesh.vertices.extend(x for v in TET_V for x in v)
    g.tri_mesh.triangles.extend(i for f in TET_F for i in f)
    g.surface.field = pb.FIELD_KIND_LAPLACE
    return out


def request_sequences(ids):
    """Lists of Envelopes (requests meant to be sent in that order) using the
    registered geometry ids (kind -> id)."""
    Body = cc.Body
    num = Numbered()
    seqs = []

    def g(kind):
        return ids.get(kind, "0" * 64)

    seqs += [[num(e)] for e in (cc.hello_request("fuzz"), cc.stats_request(),
                                cc.has_request([g("sphere"), g("box"), "0" * 64, "zz"]),
                                cc.release_request([g("sphere"), "0" * 64]), cc.release_request([]),
                                cc.has_request([]))]
    rot = (math.cos(0.3), math.sin(0.3), 0.0, 0.0)
    queries = [
        dict(bodies=[Body(1, g("sphere"), position=(0, 0, H)), Body(2, g("half_space_rigid"))], pairs=[(1, 2)],
             detail="patches"),
        dict(bodies=[Body(1, g("sphere"), position=(0, 0, H)), Body(2, g("half_space_rigid"))], pairs=[(1, 2)],
             detail="surface", representation="triangle", point_contacts=True, stiction_tolerance=1e-3),
        dict(bodies=[Body(1, g("sphere"), position=(0, 0, H), linear_velocity=(0.1, 0, -0.2),
                          angular_velocity=(0, 1, 0), material=(1.0, 0.4)),
                     Body(2, g("half_space_soft"))], pairs=[(1, 2)], contact_model="hydroelastic"),
        dict(bodies=[Body(1, g("box"), position=(0, 0, 0.02), orientation=rot), Body(2, g("sphere_rigid")),
                     Body(3, g("capsule"), position=(0.05, 0, 0.05)), Body(4, g("half_space_rigid"))],
             pairs=None, margin=0.01, detail="patches"),
        dict(bodies=[Body(1, g("cylinder"), position=(0, 0, 0.005)), Body(2, g("ellipsoid"), position=(0, 0, 0.015)),
                     Body(3, g("convex"), position=(0, 0, -0.95)), Body(4, g("tri_mesh"), position=(0.3, 0, -0.9))],
             pairs=[(1, 2), (2, 1), (1, 3), (3, 4)], contact_model="point"),
        dict(bodies=[Body(1, g("tet_mesh"), position=(0, 0, -0.95)), Body(2, g("half_space_rigid")),
                     Body(3, g("vtk"), position=(0.2, 0.2, -0.9)), Body(4, g("obj_cube_soft"), position=(2, 0, -0.9))],
             pairs=[(1, 2), (3, 2), (4, 2), (1, 3)], detail="surface", point_contacts=True),
        dict(bodies=[Body(1, g("sphere"), position=(0, 0, 0.1 + H)), Body(2, g("hf4"))], pairs=[(1, 2)],
             detail="patches"),
        dict(bodies=[Body(1, g("sphere"), position=(0, 0, 0.01)), Body(2, g("hf8c2")),
                     Body(3, g("box_rigid"), position=(0.2, 0, 0.1))], pairs=None, contact_model="point"),
        dict(bodies=[Body(1, g("obj_cube"), position=(0, 0, 0)), Body(2, g("stl_ascii"), position=(0.5, 0, 0)),
                     Body(3, g("stl_binary"), position=(0.9, 0.1, 0.1), orientation=rot),
                     Body(4, g("obj_tet"), position=(0, 0.8, 0)), Body(5, g("tri_mesh_open"), position=(0, 0.9, 0.5)),
                     Body(6, g("obj_tet"), position=(0.2, 0.2, 0.8))], pairs=None, margin=0.1),
        dict(bodies=[Body(1, g("msh22"), position=(0, 0, -0.5)), Body(2, g("msh41b"), position=(0.3, 0, -0.2)),
                     Body(3, g("vtk_bin"), position=(0, 0.3, -0.3)), Body(4, g("tet_mesh_p"), position=(0, 0, -0.7)),
                     Body(5, g("half_space_soft"))], pairs=None, detail="surface", representation="polygon"),
    ]
    for q in queries:
        seqs.append([num(cc.query_request(q.pop("bodies"), q.pop("pairs"), **q))])
    # collision filters, an exclusion and per-pair models: the client has no helper for these
    env = pb.Envelope(request_id=77)
    q = env.contact_query
    for i, kind in enumerate(["sphere", "box", "capsule", "half_space_rigid"]):
        b = q.bodies.add(body_id=10 + i, geometry_id=g(kind), name="b%d" % i)
        b.pose.position.z = 0.02 * i
        b.filter.group = 1 << i
        b.filter.mask = 0xFFFFFFFF ^ (1 << (i ^ 1))
    q.all_pairs.margin = 0.05
    q.all_pairs.exclude.add(a=10, b=13)
    q.options.detail = pb.DETAIL_PATCHES
    seqs.append([env])
    env = pb.Envelope(request_id=78)
    q = env.contact_query
    q.bodies.add(body_id=1, geometry_id=g("sphere")).pose.position.z = H
    q.bodies.add(body_id=2, geometry_id=g("half_space_rigid"))
    q.pairs.add(a=1, b=2, contact_model=pb.CONTACT_MODEL_POINT)
    q.pairs.add(a=2, b=1, contact_model=pb.CONTACT_MODEL_HYDROELASTIC_WITH_FALLBACK)
    seqs.append([env])
    # streams: open, four updates, close
    for latest, pairs in ((False, [(1, 2)]), (True, None), (False, None)):
        num = Numbered()  # a connection of its own: its stream is the first, id 1
        seq = [num(cc.open_stream_request([Body(1, g("sphere"), position=(0, 0, H)), Body(2, g("half_space_rigid")),
                                           Body(3, g("box"), position=(0.5, 0, 0.02))], pairs,
                                          latest_only=latest, detail="patches"))]
        for k in range(4):
            seq.append(num(cc.stream_update_request(1, k + 1, {
                1: {"position": (0, 0, H - 0.001 * k), "linear_velocity": (0, 0, -0.1)},
                3: {"orientation": (1, 0, 0, 0)}})))
        seq.append(num(cc.close_stream_request(1)))
        seqs.append(seq)
    return seqs


class Corpus:
    """The valid requests mutations start from: registrations, request
    sequences, and all of them together (pool)."""

    def __init__(self, regs, ids, auth=False):
        self.regs = [env for _kind, env in regs]
        self.ids = [ids[kind] for kind, _env in regs if kind in ids]  # registration order: deterministic
        self.seqs = request_sequences(ids)
        self.login = login_request() if auth else None
        if auth:
            self.seqs += [[login_request()], [login_request("wrong")], [login_request("robot")]]
        self.pool = self.regs + [env for seq in self.seqs for env in seq]


# ---------------------------------------------------------------------------
# mutation: every random choice is drawn from Gen.rng
# ---------------------------------------------------------------------------

I32 = [0, 1, -1, 2, 3, 4, 5, 7, 8, 255, 256, 65535, 65536, 2 ** 31 - 1, -2 ** 31, 2 ** 30, 1000000, 46341]
U32 = [0, 1, 2, 3, 4, 255, 65535, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 1000000, 65537]
I64 = [0, 1, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 1, 2 ** 62, 2 ** 63 - 1, -2 ** 63]
U64 = [0, 1, 2, 2 ** 32 - 1, 2 ** 32, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, (1 << 63) | 1]
DBL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 5e-324, -5e-324, 1e-12, 1e-7, 1e6, 1e12, 1e300,
       1.7976931348623157e308, -1.7976931348623157e308, NAN, INF, -INF, 2.0 ** 31, 2.0 ** 63, 0.999,
       1.0000001, 1.001, 1e-3, 3.0, 4.0, -1e-300, 2.2250738585072014e-308]
ENUMS = [-1, 0, 1, 2, 3, 4, 5, 6, 99, 2 ** 31 - 1, -2 ** 31]
STRS = ["", "x", "0" * 64, "f" * 64, "0" * 63, "0" * 65, "A" * 64, "\x00", "a\x00b", "é", "\U0001F600",
        "z" * 5000, "\u2028", "\\", "\"", "../../etc/passwd", "%s%n%s", "\ufeff"]
INTERESTING32 = [0, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x10000, 0xFFFF, 100000, 0x40000000, 1, 4]
NUM_RE = re.compile(rb"-?\d+(\.\d*)?([eE][-+]?\d+)?")
NUM_REPL = [b"0", b"-1", b"1", b"2", b"3", b"4", b"nan", b"inf", b"-inf", b"1e309", b"2147483647", b"2147483648",
            b"-2147483649", b"4294967296", b"99999999999999999999", b"1e-320", b"0x10", b"", b"-0", b"1.5",
            b"100000", b"5000000"]
FILE_STARTS = [b"", b"solid x\n", b"ply\n", b"$MeshFormat\n", b"# vtk DataFile Version 2.0\n", b"\x00" * 84]


class Raw(str):
    """A JSON token jdump() writes as it is (invalid or unusual JSON)."""


JVALS = [None, True, False, 0, -1, 1, 0.5, [], {}, "", "NaN", "Infinity", "-Infinity", "nan", "1e400",
         Raw("1e400"), Raw("-1e400"), Raw("NaN"), Raw("-0"), Raw("1E-400"), Raw("18446744073709551616"),
         "18446744073709551615", "18446744073709551616", "-9223372036854775809", "9223372036854775807",
         Raw("9223372036854775808"), Raw("4294967296"), 4294967295, 2147483648, -2147483649, 2147483647,
         Raw("9007199254740993"), 1.5, "1.5", "0x10", " 1", "1 ", "1e3", Raw("1e3"), "\ud800", Raw('"\\ud800"'),
         Raw('"\\u0000"'), Raw('"\\udc00\\ud800"'), "0" * 64, "AAAA", "AAA", "A===", "_-_-", "*", "x" * 10000,
         [1, 2, 3], [[]], {"x": 1}, "MESH_FORMAT_OBJ", "DETAIL_SURFACE", "BOGUS_ENUM", 99, -5, Raw("01"),
         Raw("1."), Raw(".5"), Raw("+1"), Raw("0e"), Raw("true1"), Raw('"\\x41"'), Raw("'a'")]


def jdump(o):
    """json.dumps that also writes Raw tokens (ASCII only: odd strings are escaped)."""
    if isinstance(o, Raw):
        return str(o)
    if isinstance(o, list):
        return "[" + ",".join(jdump(x) for x in o) + "]"
    if isinstance(o, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + jdump(v) for k, v in o.items()) + "}"
    return json.dumps(o)


def json_line(env):
    return (json.dumps(json_format.MessageToDict(env), separators=(",", ":")) + "\n").encode()


def json_paths(o, path, out, depth=0):
    out.append(path)
    if depth > 12:
        return
    if isinstance(o, dict):
        for k in list(o):
            json_paths(o[k], path + [k], out, depth + 1)
    elif isinstance(o, list):
        for i in range(min(len(o), 10)):
            json_paths(o[i], path + [i], out, depth + 1)


def json_copy(o):
    return json.loads(json.dumps(o))


class Gen:
    """The inputs of one batch. Every choice is drawn from self.rng, seeded
    from the seed and the batch number, so a batch is reproducible."""

    def __init__(self, rng, known_ids, big):
        self.rng = rng
        self.known_ids = known_ids
        self.big = big
        self.max_scalars = 100000 if big else 6000  # most elements a repeated scalar field grows to
        self.max_messages = 3000 if big else 400  # most elements a repeated message field grows to
        self.max_json_list = 20000 if big else 3000
        # Growth compounds (a list of grown lists, an object copied into itself):
        # one edit grows a message by at most this, and an edit that leaves it
        # larger than this is undone. Far above max_frame_bytes with the small limits.
        self.max_bytes = (16 << 20) if big else (1 << 20)

    def chance(self, p):
        return self.rng.random() < p

    def most_elements(self, n, size):
        """How many elements a list of n taking size bytes (with whatever holds it)
        may grow to and grow by at most max_bytes."""
        return n + self.max_bytes * n // max(1, size)

    # ---- values ----
    def value(self, fd):
        """An interesting value for a scalar field."""
        r, t = self.rng, fd.type
        if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
            return r.choice(I32) if self.chance(0.85) else r.randint(-20, 100)
        if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
            return r.choice(U32) if self.chance(0.85) else r.randint(0, 100)
        if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
            return r.choice(I64)
        if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
            return r.choice(U64) if self.chance(0.85) else r.randint(0, 10)
        if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
            return r.choice(DBL) if self.chance(0.8) else r.uniform(-2, 2)
        if t == FD.TYPE_BOOL:
            return self.chance(0.5)
        if t == FD.TYPE_ENUM:
            return r.choice(ENUMS)
        if t == FD.TYPE_STRING:
            return r.choice(self.known_ids) if self.known_ids and self.chance(0.4) else r.choice(STRS)
        if t == FD.TYPE_BYTES:
            return r.randbytes(r.randint(0, 64))
        raise ValueError(t)

    # ---- bytes ----
    def mutate_bytes(self, data, maxlen=1 << 16, text=True):
        """1-5 byte-level edits; text=True adds number and line edits."""
        r = self.rng
        b = bytearray(data)
        for _ in range(r.choice([1, 1, 1, 2, 3, 5])):
            op = r.randrange(12)
            if op == 0 and b:  # bit flip
                b[r.randrange(len(b))] ^= 1 << r.randrange(8)
            elif op == 1 and b:  # random byte
                b[r.randrange(len(b))] = r.randrange(256)
            elif op == 2:  # insert random bytes
                i = r.randint(0, len(b))
                b[i:i] = r.randbytes(r.choice([1, 1, 2, 4, 8, 32]))
            elif op == 3 and b:  # delete a range
                i = r.randrange(len(b))
                del b[i:i + r.choice([1, 1, 2, 4, 16, 64])]
            elif op == 4 and b:  # truncate
                del b[r.randrange(len(b)):]
            elif op == 5 and b:  # duplicate a range, up to 64 times
                i = r.randrange(len(b))
                j = min(len(b), i + r.randint(1, 64))
                k = r.randint(0, len(b))
                b[k:k] = b[i:j] * r.choice([1, 2, 8, 64])
            elif op == 6 and len(b) >= 4:  # interesting 32-bit value (binary counts, offsets)
                i = r.randrange(len(b) - 3)
                b[i:i + 4] = struct.pack(r.choice(["<I", ">I"]), r.choice(INTERESTING32))
            elif op == 7 and len(b) >= 8:  # interesting double
                i = r.randrange(len(b) - 7)
                b[i:i + 8] = struct.pack("<d", r.choice(DBL))
            elif op in (8, 9) and text:  # replace a number in text
                ms = list(NUM_RE.finditer(bytes(b)))
                if ms:
                    m = r.choice(ms)
                    b[m.start():m.end()] = r.choice(NUM_REPL)
            elif op == 10 and text:  # delete, repeat or swap lines
                lines = bytes(b).split(b"\n")
                if len(lines) > 1:
                    i = r.randrange(len(lines))
                    x = r.random()
                    if x < 0.4:
                        del lines[i]
                    elif x < 0.7:
                        lines[i:i] = [lines[i]] * r.choice([1, 2, 50, 500])
                    else:
                        j = r.randrange(len(lines))
                        lines[i], lines[j] = lines[j], lines[i]
                    b = bytearray(b"\n".join(lines))
            elif op == 11:  # insert an interesting varint
                i = r.randint(0, len(b))
                b[i:i] = varint(r.choice(U64 + [0x7F, 0x80, 0x3FFF, 0x4000]))
        return bytes(b[:maxlen])

    # ---- protobuf messages ----
    def fields(self, msg, out, depth=0):
        """(message, field, present) for every field of msg and of its set
        sub-messages (the first 12 elements of repeated ones)."""
        for fd in msg.DESCRIPTOR.fields:
            if fd.label == FD.LABEL_REPEATED:
                present = len(getattr(msg, fd.name)) > 0
            elif fd.type == FD.TYPE_MESSAGE or fd.containing_oneof:
                present = msg.HasField(fd.name)
            else:
                present = getattr(msg, fd.name) != fd.default_value
            out.append((msg, fd, present))
            if fd.type == FD.TYPE_MESSAGE and depth < 10:
                if fd.label == FD.LABEL_REPEATED:
                    for sub in list(getattr(msg, fd.name))[:12]:
                        self.fields(sub, out, depth + 1)
                elif present:
                    self.fields(getattr(msg, fd.name), out, depth + 1)

    def mutate_env(self, env, pool):
        e = pb.Envelope()
        e.CopyFrom(env)
        for _ in range(self.rng.choice([1, 1, 1, 2, 2, 3, 4, 6])):
            before = pb.Envelope()
            before.CopyFrom(e)
            try:
                self.mutate_field(e, pool)
            except (ValueError, TypeError, OverflowError):  # a value the field cannot hold
                pass
            if e.ByteSize() > self.max_bytes:
                e = before
        return e

    def mutate_field(self, e, pool):
        r = self.rng
        if self.chance(0.04):  # request id extremes
            e.request_id = r.choice(U64)
            return
        if self.chance(0.03):  # another request kind's payload under this request id
            rid = e.request_id
            e.CopyFrom(r.choice(pool))
            e.request_id = rid
            return
        slots = []
        self.fields(e, slots)
        present = [s for s in slots if s[2]]
        msg, fd, is_set = r.choice(present if present and self.chance(0.8) else slots)
        if fd.label == FD.LABEL_REPEATED:
            self.mutate_repeated(msg, fd)
        elif fd.type == FD.TYPE_MESSAGE:
            if is_set and self.chance(0.35):
                msg.ClearField(fd.name)
            elif not is_set:  # set it (a oneof member: switches the oneof), maybe with a field or two
                sub = getattr(msg, fd.name)
                sub.SetInParent()
                if self.chance(0.5):
                    for _ in range(r.randint(1, 3)):
                        inner = []
                        self.fields(sub, inner)
                        m2, f2, _ = r.choice(inner) if inner else (None, None, None)
                        if f2 is not None and f2.label != FD.LABEL_REPEATED and f2.type != FD.TYPE_MESSAGE:
                            setattr(m2, f2.name, self.value(f2))
            else:  # clear one of its fields
                sub = getattr(msg, fd.name)
                if sub.ListFields():
                    sub.ClearField(r.choice(sub.ListFields())[0].name)
        elif fd.type == FD.TYPE_BYTES:  # mesh file data mostly
            cur = getattr(msg, fd.name)
            if cur and self.chance(0.85):
                setattr(msg, fd.name, self.mutate_bytes(cur, 1 << 16 if self.big else 30000))
            else:
                setattr(msg, fd.name, r.choice(FILE_STARTS + [r.randbytes(40)]))
        else:
            setattr(msg, fd.name, self.value(fd))

    def mutate_repeated(self, msg, fd):
        r = self.rng
        rep = getattr(msg, fd.name)
        n = len(rep)
        x = r.random()
        if fd.type == FD.TYPE_MESSAGE:
            if x < 0.15:
                msg.ClearField(fd.name)
            elif x < 0.3 or n == 0:
                rep.add()
            elif x < 0.45:
                del rep[r.randrange(n)]
            else:  # grow by copies of its elements
                items = list(rep)
                more = min(r.choice([1, 2, 5, 20, 100, self.max_messages]) * n, self.max_messages,
                           self.most_elements(n, msg.ByteSize()) - n)
                for _ in range(more):
                    rep.add().CopyFrom(r.choice(items))
            return
        if x < 0.1:
            msg.ClearField(fd.name)
        elif x < 0.3 and n:  # one element to an extreme
            rep[r.randrange(n)] = self.value(fd)
        elif x < 0.4:  # append one or two
            rep.extend(self.value(fd) for _ in range(r.randint(1, 2)))
        elif x < 0.5 and n:  # drop one (breaks vertex triples, tet quads)
            del rep[r.randrange(n)]
        elif x < 0.7 and n:  # many copies of its elements
            items = list(rep)
            target = min(n * r.choice([2, 10, 100, 1000, 100000]), self.max_scalars,
                         self.most_elements(n, msg.ByteSize()))
            while len(rep) < target:
                rep.extend(items[:target - len(rep)])
        elif x < 0.8 and n:  # an index just out of range, or an extreme one
            i = r.randrange(n)
            if fd.type == FD.TYPE_INT32:
                rep[i] = r.choice([-1, n, n + 1, n // 3, n // 4, 2 ** 31 - 1, -2 ** 31, rep[i] + 1])
            else:
                rep[i] = self.value(fd)
        elif x < 0.9 and n:
            items = list(rep)
            r.shuffle(items)
            msg.ClearField(fd.name)
            getattr(msg, fd.name).extend(items)
        else:  # junk of a random length
            msg.ClearField(fd.name)
            getattr(msg, fd.name).extend(self.value(fd) for _ in range(r.randint(0, 40)))

    def raw_wire(self, depth=0, nfields=None):
        """Random protobuf wire data, valid or not, nested."""
        r = self.rng
        out = bytearray()
        for _ in range(r.randint(0, 6) if nfields is None else nfields):
            fno = r.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 17, 19, 21, 0, 100, 2 ** 29 - 1,
                            r.randint(1, 30)])
            wt = r.choice([0, 0, 1, 2, 2, 2, 5, 3, 4, 6, 7])  # 6 and 7 are not wire types
            out += varint((fno << 3) | wt)
            if wt == 0:
                out += varint(r.choice(U64 + I32))
            elif wt == 1:
                out += struct.pack("<d", r.choice(DBL))
            elif wt == 5:
                out += struct.pack("<f", 1.0)
            elif wt == 2:
                sub = self.raw_wire(depth + 1) if depth < 12 and self.chance(0.6) else r.randbytes(r.randint(0, 24))
                n = len(sub)
                if self.chance(0.1):  # a length that does not match
                    n = r.choice([n + 1, n + 100, 2 ** 31, 2 ** 63, 2 ** 64 - 1, max(0, n - 1)])
                out += varint(n) + sub
            elif wt == 3 and depth < 12:  # a group, usually closed
                out += self.raw_wire(depth + 1)
                if self.chance(0.7):
                    out += varint((fno << 3) | 4)
        return bytes(out)

    def frame(self, body):
        """A length-prefixed frame for body, 20% of the time a wrong one."""
        r = self.rng
        x = r.random()
        if x < 0.80:
            return frame(body)
        if x < 0.84:  # length off by a little or a lot
            return varint(len(body) + r.choice([-2, -1, 1, 2, 10, 1000])) + body
        if x < 0.87:  # non-minimal prefix (padded with 0x80 continuation bytes)
            pre = bytearray(varint(len(body)))
            pre[-1] |= 0x80
            pre += b"\x80" * r.randint(0, max(0, 8 - len(pre))) + b"\x00"
            return bytes(pre) + body
        if x < 0.90:  # huge announced length
            return varint(r.choice([2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64 - 1, 1 << 28, (1 << 28) + 1, 65537,
                                    300000])) + body
        if x < 0.92:  # over-long varint
            return b"\xff" * r.choice([10, 11, 12, 30]) + b"\x01" + body
        if x < 0.94:  # 10-byte varint with bits above 64
            return b"\x80" * 9 + bytes([r.choice([0x02, 0x7f, 0x01])]) + body
        if x < 0.96:  # cut short
            return frame(body)[:r.randint(1, max(1, len(body)))]
        if x < 0.98:  # empty frames first
            return b"\x00" * r.randint(1, 5) + frame(body)
        return frame(body) * 2

    # ---- JSON ----
    def mutate_json(self, d):
        """1-3 edits of a JSON object (as Python values)."""
        r = self.rng
        for _ in range(r.choice([1, 1, 2, 3])):
            before = copy.deepcopy(d)
            self.mutate_json_once(d)
            if len(jdump(d)) > self.max_bytes:
                d = before
        return d

    def mutate_json_once(self, d):
        """One edit of d in place. Values are copied, never shared: a list of
        3000 references to one list that then grows 3000-fold is 9 million
        elements to write out."""
        r = self.rng
        paths = []
        json_paths(d, [], paths)
        path = r.choice(paths[1:] if len(paths) > 1 else paths)
        if not path:
            return
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        x = r.random()
        if x < 0.55:
            # a copy: JVALS' lists and objects must not collect later edits
            parent[key] = r.choice(self.known_ids) if self.known_ids and self.chance(0.1) else copy.deepcopy(
                r.choice(JVALS))
        elif x < 0.65 and isinstance(parent, dict):
            del parent[key]
        elif x < 0.72 and isinstance(parent, dict):  # unknown, snake_case, odd or request-kind keys
            parent[r.choice(["bogus", "request_id", "geometry_ids", "contact_query", "", "\u00e9", "__proto__",
                             "hello", "registerGeometry", "stats", key + "x"])] = copy.deepcopy(parent[key])
        elif x < 0.82 and isinstance(parent[key], list) and parent[key]:
            lst = parent[key]
            items = list(lst)
            target = min(len(lst) * r.choice([2, 10, 100, 1000, 10000]), self.max_json_list,
                         self.most_elements(len(lst), len(jdump(lst))))
            while len(lst) < target:
                lst.extend(copy.deepcopy(items[:target - len(lst)]))
        elif x < 0.88:  # deep nesting
            n = r.choice([10, 100, 999, 1000, 1001, 5000, 20000])
            parent[key] = Raw("[" * n + "]" * n) if self.chance(0.5) else Raw('{"a":' * n + "1" + "}" * n)
        elif x < 0.94:  # string <-> number, anything else into a list
            v = parent[key]
            if isinstance(v, str):
                try:
                    parent[key] = float(v) if "." in v or "e" in v.lower() else int(v)
                except ValueError:
                    parent[key] = 0
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                parent[key] = str(v)
            else:
                parent[key] = [v]
        else:  # a copy of the whole object or of the parent
            parent[key] = json_copy(r.choice([d, parent]))

    def mutate_json_text(self, line):
        r = self.rng
        b = bytearray(line)
        op = r.randrange(10)
        if op == 0:
            return self.mutate_bytes(line)
        if op == 1 and len(b) > 2:  # no newline: merges with the next line
            return bytes(b.rstrip(b"\n"))
        if op == 2:  # a newline inside
            i = r.randrange(len(b))
            b[i:i] = b"\n"
        elif op == 3:  # a duplicate or second request key
            i = b.find(b"{")
            if i >= 0:
                b[i + 1:i + 1] = r.choice([b'"requestId":"5",', b'"hello":{},', b'"stats":{},', b'"requestId":1,'])
        elif op == 4:  # BOM or whitespace first, maybe CR LF
            b = bytearray(r.choice([b"\xef\xbb\xbf", b" " * 1000, b"\t", b"", b"\r\n"])) + b
            if self.chance(0.5):
                b = b.rstrip(b"\n") + b"\r\n"
        elif op == 5:  # trailing garbage
            b = b.rstrip(b"\n") + r.choice([b" x", b"}", b"{}", b",", b"\x00", b" {\"stats\":{}}"]) + b"\n"
        elif op == 6:  # invalid UTF-8 in a string
            i = b.find(b'"', 2)
            if i >= 0:
                b[i + 1:i + 1] = r.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"])
        elif op == 7:  # a long line (longer than max_frame_bytes with the small limits)
            b = b.rstrip(b"\n") + b" " * r.choice([1000, 70000, 300000]) + b"\n"
        elif op == 8 and len(b) > 3:  # cut short
            del b[r.randrange(1, len(b)):]
        elif op == 9:  # a NUL byte in place of one
            b[r.randrange(len(b))] = 0
        return bytes(b)

    # ---- one connection's messages ----
    def messages(self, corpus, mode):
        """8-80 byte strings to send on one connection (mode "json" or "pb")."""
        r = self.rng
        out = []
        if corpus.login and self.chance(0.7):  # most connections log in first
            out.append(json_line(corpus.login) if mode == "json" else frame(corpus.login.SerializeToString()))
        n = r.randint(8, 80)
        while len(out) < n:
            x = r.random()
            if x < 0.30:
                seq = r.choice(corpus.seqs)  # a request sequence (e.g. a stream), in order
            elif x < 0.45:
                seq = [r.choice(corpus.regs)]
            else:
                seq = [r.choice(corpus.pool)]
            for env in seq:
                out.append(self.json_message(env, corpus) if mode == "json" else self.pb_message(env, corpus))
        return out

    def json_message(self, env, corpus):
        x = self.rng.random()
        if x < 0.2:
            return json_line(env)
        if x < 0.55:
            try:
                return json_line(self.mutate_env(env, corpus.pool))
            except (ValueError, TypeError, json_format.Error):  # no JSON form (e.g. an unknown enum value)
                return json_line(env)
        if x < 0.85:
            return (jdump(self.mutate_json(json_format.MessageToDict(env))) + "\n").encode()
        if x < 0.97:
            return self.mutate_json_text(json_line(env))
        return frame(env.SerializeToString())  # protobuf on a JSON connection

    def pb_message(self, env, corpus):
        r = self.rng
        body = env.SerializeToString()
        x = r.random()
        if x < 0.15:
            return frame(body)
        if x < 0.60:
            return self.frame(self.mutate_env(env, corpus.pool).SerializeToString())
        if x < 0.80:
            return self.frame(self.mutate_bytes(body, text=False))
        if x < 0.87:  # splice with another message
            other = r.choice(corpus.pool).SerializeToString()
            i, j = r.randint(0, len(body)), r.randint(0, len(other))
            return self.frame(body[:i] + other[j:] if self.chance(0.5) else body + other)
        if x < 0.94:  # a request id, then random wire data in a length-delimited Envelope field
            inner = self.raw_wire()
            fno = r.choice([2, 4, 7, 9, 11, 13, 15, 17, 19, 1, 3, 21])
            return frame(b"\x08" + varint(r.randint(0, 100)) + varint((fno << 3) | 2) + varint(len(inner)) + inner)
        if x < 0.97:
            return frame(self.raw_wire(0, r.randint(1, 8)))
        return json_line(env)  # JSON on a protobuf connection


# ---------------------------------------------------------------------------
# sending one connection's messages and reading its replies
# ---------------------------------------------------------------------------

BEHAVIOURS = ["normal"] * 6 + ["tiny_chunks", "slow", "halfclose", "rst", "rst_early"]


class Conn:
    """One fuzz connection: the plan (made on the main thread, from the batch's
    generator) and what happened (filled in by its thread)."""

    def __init__(self, gen, corpus):
        r = gen.rng
        mode = "json" if gen.chance(0.35) else "pb"
        self.messages = gen.messages(corpus, mode)
        # the daemon picks the wire format from the first byte it receives
        first = next((m[:1] for m in self.messages if m), b"")
        self.json = first == b"{"
        self.behaviour = r.choice(BEHAVIOURS)
        self.unix = gen.chance(0.25)
        self.read_wait = r.choice([0.1, 0.2, 0.4])  # seconds to read replies after sending
        self.rng = random.Random(r.getrandbits(64))  # for the choices its thread makes
        self.sent = []  # the messages actually sent, in order
        self.replies = collections.Counter()
        self.errors = collections.Counter()
        self.anomalies = []
        self.closed_by_server = False
        self.note = ""

    def describe(self):
        return "%s over %s, %s" % ("JSON" if self.json else "protobuf", "Unix" if self.unix else "TCP",
                                   self.behaviour)


def run_conn(c, port, unix_path):
    """Send c.messages, reading replies meanwhile, then read for c.read_wait s."""
    r = c.rng
    try:
        if c.unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(unix_path)
        else:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
    except OSError as e:
        c.note = "connect failed: %s" % e
        return
    buf = bytearray()
    deadline = time.monotonic() + CONN_DEADLINE_S
    messages = c.messages
    if c.behaviour == "rst_early":
        messages = messages[:r.randint(1, len(messages))]
    try:
        for i, msg in enumerate(messages):
            c.sent.append(msg)
            if c.behaviour == "tiny_chunks" and len(msg) < 4096 and i < 4:
                pieces = [msg[k:k + r.randint(1, 7)] for k in range(0, len(msg), 7)]
            else:
                pieces = [msg]
            for piece in pieces:
                view = memoryview(piece)
                while view and time.monotonic() < deadline:
                    readable, writable, _ = select.select([s], [s], [], 0.05)
                    if readable and not recv_some(s, buf, c):
                        raise ConnectionError("closed by server")
                    if writable:
                        try:
                            view = view[s.send(view):]
                        except BlockingIOError:
                            pass
                if view:
                    raise TimeoutError("could not send within %d s" % CONN_DEADLINE_S)
            parse_replies(c, buf)
            if c.behaviour == "slow":
                time.sleep(r.uniform(0, 0.01))
        if c.behaviour in ("rst", "rst_early"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if c.behaviour == "halfclose":
            s.shutdown(socket.SHUT_WR)
        end = time.monotonic() + c.read_wait
        while time.monotonic() < end:
            readable, _, _ = select.select([s], [], [], 0.05)
            if readable and not recv_some(s, buf, c):
                break
        parse_replies(c, buf)
    except OSError as e:  # includes ConnectionError and TimeoutError
        c.note += " %s" % e
        parse_replies(c, buf)
    finally:
        if r.random() < 0.3:  # an RST instead of a FIN
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()


def recv_some(s, buf, c):
    """Read what is there into buf; False once the server closed."""
    try:
        d = s.recv(1 << 16)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        d = b""
    if not d:
        c.closed_by_server = True
        return False
    buf += d
    return True


def parse_replies(c, buf):
    """Take the complete replies out of buf. A reply cut short because the
    server closed the connection (e.g. a slow reader) stays in buf unseen."""
    while buf:
        if c.json:
            i = buf.find(b"\n")
            if i < 0:
                return
            line = bytes(buf[:i])
            del buf[:i + 1]
            try:
                env = json_format.Parse(line.decode("utf-8"), pb.Envelope())
            except (ValueError, json_format.ParseError) as e:
                c.anomalies.append("unparsable JSON reply %r: %s" % (line[:300], e))
                continue
        else:
            try:
                prefix = cc.decode_varint(buf)
            except ValueError:
                c.anomalies.append("reply length prefix over 10 bytes: %r" % bytes(buf[:12]))
                buf.clear()
                return
            if prefix is None:
                return
            n, i = prefix
            if len(buf) - i < n:
                return
            body = bytes(buf[i:i + n])
            del buf[:i + n]
            try:
                env = pb.Envelope.FromString(body)
            except DecodeError as e:
                c.anomalies.append("unparsable reply frame %r: %s" % (body[:300], e))
                continue
        kind = env.WhichOneof("msg")
        c.replies[kind] += 1
        if kind is None:
            c.anomalies.append("reply without payload (request id %d)" % env.request_id)
        elif kind == "error":
            code = env.error.code
            name = pb.ErrorCode.Name(code) if code in pb.ErrorCode.values() else str(code)
            c.errors[name] += 1
            if code in (pb.INTERNAL, pb.UNKNOWN, pb.DATA_LOSS, pb.ERROR_CODE_UNSPECIFIED):
                c.anomalies.append("%s error to request %d: %r (field %r)" % (
                    name, env.request_id, env.error.message, env.error.field))


# ---------------------------------------------------------------------------
# the health check
# ---------------------------------------------------------------------------

class Health:
    def __init__(self, auth=False):
        self.baseline = None  # the first check's force
        self.auth = auth  # log in first (the JSON check, over the Unix socket, is known by its uid)

    def check(self, port, unix_path, with_json):
        """Raises Finding if the daemon does not answer right."""
        Body = cc.Body
        try:
            with cc.Client("127.0.0.1:%d" % port, timeout=HEALTH_TIMEOUT_S) as c:
                if self.auth:
                    c.call(login_request(), "hello_reply")
                if c.hello("fuzz-health").protocol_version != 1:
                    raise Finding("health check: hello answered a protocol version other than 1")
                ball = c.register_sphere(R, modulus=E, hint=R / 4)
                floor = c.register_half_space(rigid=True)
                p = c.query([Body(1, ball, position=(0, 0, H)), Body(2, floor)], pairs=[(1, 2)],
                            detail="patches").pairs[0]
                self.check_force(p.status, p.force_a[2], "protobuf")
                if abs(p.force_b[2] + p.force_a[2]) > 1e-9 * abs(p.force_a[2]):
                    raise Finding("health check: force on the floor %r is not minus the force on the ball %r"
                                  % (p.force_b[2], p.force_a[2]))
                p = c.query([Body(1, ball, position=(0, 0, 0.3)), Body(2, floor)], pairs=[(1, 2)]).pairs[0]
                if p.status != "none":
                    raise Finding("health check: the ball 0.3 m above the floor has status %r, not none" % p.status)
                if c.has([ball, floor]):
                    raise Finding("health check: has() says the ball or the floor just registered is missing")
            if with_json:
                self.check_json(ball, floor, unix_path)
        except cc.ContactdError as e:
            if e.code_name == "DEADLINE_EXCEEDED":
                raise Finding("health check: no answer within %d s (%s)" % (HEALTH_TIMEOUT_S, e.message),
                              hung=True) from None
            raise Finding("health check: %s error: %s (field %r)" % (e.code_name, e.message, e.field)) from None

    def check_force(self, status, fz, how):
        expect = sphere_force(R, E, H)
        if status != "surface" or not abs(fz - expect) <= 0.15 * expect:
            raise Finding("health check (%s): sphere on floor answered status %r, force %r; expected status "
                          "surface and a force within 15%% of %.6g" % (how, status, fz, expect))
        if self.baseline is None:
            self.baseline = fz
        elif not abs(fz - self.baseline) <= 1e-9 * abs(self.baseline):
            raise Finding("health check (%s): sphere on floor force %r differs from the first check's %r"
                          % (how, fz, self.baseline))

    def check_json(self, ball, floor, unix_path):
        """Hello and the sphere-on-floor query as JSON lines over the Unix socket."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(HEALTH_TIMEOUT_S)
        try:
            s.connect(unix_path)
            q = {"requestId": "2", "contactQuery": {
                "bodies": [{"bodyId": 1, "geometryId": ball, "pose": {"position": {"z": H}}},
                           {"bodyId": 2, "geometryId": floor}],
                "pairs": [{"a": 1, "b": 2}], "options": {"detail": "DETAIL_PATCHES"}}}
            s.sendall(b'{"requestId":"1","hello":{"protocolVersion":1,"clientName":"fuzz-health-json"}}\n'
                      + json.dumps(q).encode() + b"\n")
            f = s.makefile("rb")
            replies = [json_format.Parse(f.readline().decode(), pb.Envelope()) for _ in range(2)]
        except socket.timeout:
            raise Finding("health check (JSON): no answer within %d s" % HEALTH_TIMEOUT_S, hung=True) from None
        except (OSError, ValueError, json_format.ParseError) as e:
            raise Finding("health check (JSON): %r" % e) from None
        finally:
            s.close()
        kinds = [(e.request_id, e.WhichOneof("msg")) for e in replies]
        if kinds != [(1, "hello_reply"), (2, "contact_reply")]:
            raise Finding("health check (JSON): replies %s" % replies)
        res = replies[1].contact_reply.results[0]
        self.check_force(pb.ContactStatus.Name(res.status).replace("CONTACT_STATUS_", "").lower(),
                         res.wrench_a.force.z, "JSON")


# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------

class Fuzzer:
    def __init__(self, args, seed, work, unix_path):
        self.args, self.seed, self.work = args, seed, work
        config = os.path.join(work, "contactd.json")
        limits = dict(SMALL_LIMITS, max_connections=args.conns + 16)  # never refuse a fuzz or check connection
        if args.big:
            limits.update(BIG_LIMITS)
        doc = {"limits": limits}
        if args.auth:
            limits.update(AUTH_LIMITS)
            doc["principals_file"] = os.path.join(work, "principals.json")
            auth_principals(doc["principals_file"])
        with open(config, "w") as f:
            json.dump(doc, f, indent=1)
        env = dict(os.environ, CONTACTD_FAULTS="serve:%d:%d" % (args.faults, seed)) if args.faults else None
        self.d = Daemon(args.daemon, config, os.path.join(work, "contactd.log"), unix_path, env)
        self.health = Health(args.auth)
        self.keeper = None
        self.where = "start"  # or "batch N", "shutdown": for the failure message
        self.batch = 0
        self.conns = []  # the current batch's
        self.totals = collections.Counter()
        self.replies = collections.Counter()
        self.errors = collections.Counter()
        self.messages = collections.Counter()  # daemon log lines by level and msg

    def say(self, *words):
        print("contactd_fuzz:", *words, flush=True)

    def hold_corpus(self):
        """(Re)connect the keeper and register the corpus geometry on it; its
        references keep the geometry cached. Returns kind -> id."""
        if self.keeper:
            self.keeper.close()
        ids = {}
        try:
            self.keeper = cc.Client("127.0.0.1:%d" % self.d.port, timeout=HEALTH_TIMEOUT_S)
            if self.args.auth:
                self.keeper.call(login_request(), "hello_reply")
            for kind, env in self.regs:
                e = pb.Envelope()
                e.CopyFrom(env)
                try:
                    ids[kind] = self.keeper.call(e, "register_reply").geometry_id
                except cc.ContactdError as ex:
                    if not ex.remote:  # the connection failed
                        raise
                    self.say("warning: corpus registration %s failed: %s %s" % (kind, ex.code_name, ex.message))
        except cc.ContactdError as ex:
            raise Finding("registering the corpus: %s" % ex, hung=ex.code_name == "DEADLINE_EXCEEDED") from None
        return ids

    def scan_log(self):
        """Raise Finding on a line the daemon should not have written."""
        lines = self.d.new_log_lines()
        for ln in lines:
            m = re.search(r' level=(\w+) msg="([^"]*)"', ln)
            if m:
                self.messages["%s %s" % m.groups()] += 1
        bad = bad_log_lines(lines)
        if bad:
            time.sleep(2)  # let a sanitizer finish its report
            bad += bad_log_lines(self.d.new_log_lines())
            raise Finding("the daemon log has unexpected lines (a sanitizer report?):\n  "
                          + "\n  ".join(bad[:100]))

    def run_batch(self):
        gen = Gen(random.Random("%d/%d" % (self.seed, self.batch)), self.corpus.ids, self.args.big)
        self.conns = conns = [Conn(gen, self.corpus) for _ in range(gen.rng.randint(1, self.args.conns))]
        threads = [threading.Thread(target=run_conn, args=(c, self.d.port, self.d.unix_path), daemon=True)
                   for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CONN_DEADLINE_S + 30)  # each stops sending after CONN_DEADLINE_S
        for c in conns:
            self.totals["messages"] += len(c.sent)
            self.totals["bytes"] += sum(len(m) for m in c.sent)
            self.totals["connections"] += 1
            self.totals["json connections" if c.json else "protobuf connections"] += 1
            self.totals["unix connections"] += c.unix
            self.totals["closed by the server"] += c.closed_by_server
            self.replies.update(c.replies)
            self.errors.update(c.errors)

    def check_alive(self):
        if not self.d.alive():
            time.sleep(0.5)  # the end of what it wrote as it died
            bad = bad_log_lines(self.d.new_log_lines())
            raise Finding("the daemon exited (%s)%s" % (
                exit_status_text(self.d.proc.returncode), (":\n  " + "\n  ".join(bad[:100])) if bad else ""))

    def check_batch(self):
        time.sleep(0.05)  # a moment for the daemon to log (or crash on) the batch's last inputs
        self.check_alive()
        self.scan_log()
        for k, c in enumerate(self.conns):
            if c.anomalies:
                raise Finding("connection %d (%s) got an unexpected reply:\n  %s" % (k, c.describe(),
                                                                                  "\n  ".join(c.anomalies[:20])))
        try:
            self.health.check(self.d.port, self.d.unix_path, with_json=self.batch % 10 == 0)
        except Finding:
            self.check_alive()  # a crash explains a failed check better
            raise
        try:  # keep the keeper's connection (and its references) alive
            self.keeper.hello("fuzz-keeper")
        except cc.ContactdError as ex:
            if ex.code_name == "DEADLINE_EXCEEDED":
                raise Finding("the keeper connection got no answer to hello within %d s" % HEALTH_TIMEOUT_S,
                              hung=True) from None
            self.totals["keeper reconnections"] += 1  # closed: it idled out during a long batch
            self.hold_corpus()

    def save_finding(self):
        d = os.path.join(self.work, "finding-seed%d-%s" % (self.seed, self.where.replace(" ", "")))
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        meta = {"seed": self.seed, "batch": self.batch, "connections": []}
        for k, c in enumerate(self.conns if self.where.startswith("batch") else []):
            with open(os.path.join(d, "conn%d.bin" % k), "wb") as f:
                f.write(b"".join(c.sent))
            meta["connections"].append({"wire": "json" if c.json else "protobuf", "unix": c.unix,
                                        "behaviour": c.behaviour, "message_sizes": [len(m) for m in c.sent],
                                        "anomalies": c.anomalies, "note": c.note.strip()})
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        shutil.copy(self.d.log_path, os.path.join(d, "contactd.log"))
        return d

    def backtraces(self):
        """All threads' stacks of a daemon that stopped answering (if gdb is there)."""
        if not self.d.alive() or not shutil.which("gdb"):
            return ""
        try:
            return subprocess.run(["gdb", "-p", str(self.d.proc.pid), "-batch", "-ex", "thread apply all bt"],
                                  capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.SubprocessError) as e:
            return repr(e)

    def run(self):
        a = self.args
        self.regs = registrations(a.data_dir)
        self.d.start()
        self.say("seed %d, daemon pid %d port %d, work dir %s" % (self.seed, self.d.proc.pid, self.d.port, self.work))
        self.corpus = Corpus(self.regs, self.hold_corpus(), self.args.auth)
        self.health.check(self.d.port, self.d.unix_path, with_json=True)
        self.scan_log()
        self.say("corpus: %d registrations, %d request sequences; health check force %.6g N" % (
            len(self.corpus.regs), len(self.corpus.seqs), self.health.baseline))
        t0 = time.monotonic()
        last_report = t0
        self.batch = a.from_batch
        while (not a.batches or self.batch <= a.batches) and (not a.minutes or time.monotonic() - t0 < a.minutes * 60):
            self.where = "batch %d" % self.batch
            if a.faults:  # failing allocations during the batch, none during the checks
                self.d.signal_and_wait(signal.SIGUSR1, r"faults: armed$")
            self.run_batch()
            if a.faults:
                self.d.signal_and_wait(signal.SIGUSR2, r"faults: \d+ of \d+ allocations failed$")
            self.check_batch()
            if time.monotonic() - last_report > 30:
                last_report = time.monotonic()
                self.say("batch %d: %d messages, %.1f MB sent" % (
                    self.batch, self.totals["messages"], self.totals["bytes"] / 1e6))
            self.batch += 1
        last = self.batch - 1
        self.where = "shutdown"
        self.keeper.close()
        rss = self.d.peak_rss_mb()
        rc = self.d.stop()
        if rc is None:
            raise Finding("the daemon did not exit within 60 s of SIGTERM")
        bad = bad_log_lines(self.d.new_log_lines())
        if rc != 0 or bad:
            raise Finding("after SIGTERM the daemon exited with %s%s" % (
                exit_status_text(rc), (":\n  " + "\n  ".join(bad[:100])) if bad else ""))
        t = self.totals
        self.say("passed: seed %d, batches %d-%d in %.0f s: %d messages (%.1f MB) on %d connections "
                 "(%d JSON, %d over the Unix socket, %d closed by the server)" % (
                     self.seed, a.from_batch, last, time.monotonic() - t0, t["messages"], t["bytes"] / 1e6,
                     t["connections"], t["json connections"], t["unix connections"], t["closed by the server"]))
        self.say("replies: %s" % dict(self.replies.most_common()))
        self.say("errors: %s" % dict(self.errors.most_common()))
        self.say("daemon log: %s" % dict(self.messages.most_common()))
        self.say("daemon peak RSS %s MB, exit status 0; keeper reconnections %d" % (
            "%.0f" % rss if rss else "?", t["keeper reconnections"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", required=True, help="the contactd binary")
    ap.add_argument("--pb2-dir", help="directory of a generated contactd_pb2.py (build/proto/python); "
                    "default: the one installed with contactd_client")
    ap.add_argument("--client-dir", help="directory of the contactd_client package (client/python); "
                    "default: the installed package")
    ap.add_argument("--data-dir", required=True, help="mesh files of the corpus (tests/engine/data)")
    ap.add_argument("--work-dir", required=True, help="config, daemon log, socket and saved findings go here")
    ap.add_argument("--seed", type=int, help="default: random (printed)")
    ap.add_argument("--batches", type=int, default=0, help="stop after batch N (0: no limit)")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long (0: no limit)")
    ap.add_argument("--from-batch", type=int, default=1, help="start at batch N (to rerun one batch)")
    ap.add_argument("--conns", type=int, default=3, help="most connections at once per batch")
    ap.add_argument("--big", action="store_true", help="larger mesh, body and pair limits and mutation sizes")
    ap.add_argument("--auth", action="store_true",
                    help="the daemon has principals: connections log in with a token (or not), and Hello's token "
                         "is fuzzed")
    ap.add_argument("--faults", type=int, default=0, metavar="N",
                    help="--daemon is contactd_faults (tests/daemon): about one allocation in N fails during "
                         "each batch (never during the checks)")
    args = ap.parse_args()
    if not args.batches and not args.minutes:
        ap.error("give --batches or --minutes")
    if args.conns < 1 or args.from_batch < 1:
        ap.error("--conns and --from-batch must be at least 1")

    global pb, cc
    if args.client_dir:
        sys.path.insert(0, os.path.abspath(args.client_dir))
    if args.pb2_dir:
        sys.path.insert(1 if args.client_dir else 0, os.path.abspath(args.pb2_dir))
        os.environ["CONTACTD_PB2_DIR"] = os.path.abspath(args.pb2_dir)
    import contactd_client as cc
    pb = cc.pb

    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    # a Unix socket path must fit in sun_path (108 bytes)
    sock_dir = work if len(work) < 90 else tempfile.mkdtemp(prefix="contactd-fuzz-")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    fz = Fuzzer(args, seed, work, os.path.join(sock_dir, "contactd.sock"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("contactd_fuzz: terminated"))
    try:
        fz.run()
        return 0
    except Finding as f:
        saved = fz.save_finding()
        if f.hung:
            with open(os.path.join(saved, "gdb.txt"), "w") as out:
                out.write(fz.backtraces())
        print("contactd_fuzz: FAILED at %s of seed %d: %s" % (fz.where, seed, f), flush=True)
        print("contactd_fuzz: inputs and daemon log saved in %s" % saved)
        if fz.where.startswith("batch"):
            print("contactd_fuzz: to rerun: the same command with --seed %d --batches %d (with --from-batch %d: "
                  "that batch alone)" % (seed, fz.batch, fz.batch))
        return 1
    finally:
        fz.d.kill()
        if sock_dir != work:
            shutil.rmtree(sock_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
