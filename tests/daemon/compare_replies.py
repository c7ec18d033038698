#!/usr/bin/python3
"""Two contactd builds give the same reply bytes.

    compare_replies.py OLD_CONTACTD NEW_CONTACTD PB2_DIR [--workers N] [-v]

Starts both daemons (each twice: default limits, then a small
max_reply_bytes), sends each the same requests over protobuf and over JSON
(a 500-body all-pairs scene, sphere/half-space queries with patches,
surfaces, point contacts, energy, Jacobians and the point model, explicit
pairs, empty queries, request id 0, pipelined bursts, streams, and failing
requests), and compares every reply. A reply carries the wall time of its
computation (compute_time_us), which differs from run to run, so for
protobuf each raw frame must equal the canonical serialisation of the
message it decodes to (the same bytes with nothing reordered or re-encoded),
and those messages, with their times set to 0, must serialise to the same
bytes for both daemons; JSON lines must be equal once their computeTimeUs
values are blanked. Prints one line per request kind (-v: and the replies that
differ), then how many of all the replies were identical, and exits 1
when any differs. A tool for changes to the reply path, not a ctest: it
needs a build of the code before the change.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

if len(sys.argv) < 4:
    sys.exit(__doc__)
OLD, NEW, PB2 = sys.argv[1:4]
WORKERS = sys.argv[sys.argv.index("--workers") + 1] if "--workers" in sys.argv else "2"
sys.path.insert(0, PB2)
import contactd_pb2 as pb  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from google.protobuf.internal.decoder import _DecodeVarint as decode_varint  # noqa: E402
from google.protobuf.internal.encoder import _VarintBytes as varint_bytes  # noqa: E402


def start(binary, config, workers):
    d = tempfile.mkdtemp(prefix="cmp-")
    log = open(os.path.join(d, "log"), "w+")
    args = [binary, "--listen", "127.0.0.1:0", "--workers", workers, "--io-threads", "1", "--log-level", "info"]
    if config:
        path = os.path.join(d, "c.json")
        open(path, "w").write(config)
        args += ["--config", path]
    p = subprocess.Popen(args, stdout=log, stderr=log)
    for _ in range(400):
        time.sleep(0.05)
        text = open(log.name).read()
        m = re.search(r'msg="listening" tcp=\S*?port=(\d+)', text) or re.search(r"port=(\d+)", text)
        if m and 'msg="ready"' in text:
            return p, int(m.group(1))
    p.kill()
    sys.exit("%s did not start:\n%s" % (binary, open(log.name).read()))


class Conn:
    def __init__(self, port, json=False):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.json = json
        self.buf = b""

    def send(self, envs):
        out = b""
        for e in envs:
            if self.json:
                out += json_format.MessageToJson(e, indent=None).replace("\n", " ").encode() + b"\n"
            else:
                body = e.SerializeToString()
                out += varint_bytes(len(body)) + body
        self.s.sendall(out)

    def recv(self):
        """The next reply's raw bytes (a frame body, or a JSON line)."""
        while True:
            if self.json and b"\n" in self.buf:
                line, _, self.buf = self.buf.partition(b"\n")
                return line
            if not self.json and self.buf:
                try:
                    n, pos = decode_varint(self.buf, 0)
                    if len(self.buf) >= pos + n:
                        frame, self.buf = self.buf[pos:pos + n], self.buf[pos + n:]
                        return frame
                except IndexError:
                    pass
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("daemon closed the connection")
            self.buf += chunk


def env(rid, field, msg):
    e = pb.Envelope(request_id=rid)
    getattr(e, field).CopyFrom(msg)
    return e


def untimed(frame):
    """The frame's message with its times zeroed, serialised; the frame must be canonical."""
    e = pb.Envelope()
    e.ParseFromString(frame)
    if e.SerializeToString() != frame:
        sys.exit("FAIL: a reply frame is not the canonical encoding of its message")
    kind = e.WhichOneof("msg")
    if kind in ("contact_reply", "stream_result"):
        m = getattr(e, kind)
        m.compute_time_us = 0
        for r in m.results:
            r.compute_time_us = 0
    if kind == "stats_reply":
        e.stats_reply.Clear()
    return e.SerializeToString(), kind


def unjson(line):
    """The line without its times (a zero time is left out, so they go)."""
    line = re.sub(rb',"(computeTimeUs|uptimeS)":"?[0-9.e+-]*"?', b"", line)
    return re.sub(rb'"(computeTimeUs|uptimeS)":"?[0-9.e+-]*"?,?', b"", line)


def sphere_pose(i, n):
    per = round(n ** (1 / 3)) + 1
    return pb.Pose(position=pb.Vec3(x=0.19 * (i // (per * per)), y=0.19 * (i // per % per), z=0.19 * (i % per)),
                   orientation=pb.Quat(w=1))


def requests(ids):
    """[(label, [envelopes])]: each group is sent as one burst."""
    sph, fine, half, box = ids
    out = []
    # the scene: 500 compliant spheres on a lattice, all pairs
    q = pb.ContactQuery(all_pairs=pb.AllPairs(margin=0.0))
    for i in range(500):
        q.bodies.add(body_id=i + 1, geometry_id=sph, pose=sphere_pose(i, 500))
    out.append(("scene 500 bodies", [env(100, "contact_query", q)]))
    # one sphere on the half space with every option, one by one
    def pair(z, **opt):
        q = pb.ContactQuery()
        q.bodies.add(body_id=7, geometry_id=fine, pose=pb.Pose(position=pb.Vec3(x=0.01, z=z),
                                                               orientation=pb.Quat(w=0.9998, x=0.02)),
                     velocity=pb.SpatialVelocity(linear=pb.Vec3(x=0.01), angular=pb.Vec3(z=0.3)), name="ball")
        q.bodies.add(body_id=9, geometry_id=half)
        q.bodies.add(body_id=11, geometry_id=box, pose=pb.Pose(position=pb.Vec3(x=0.3, z=0.04)))
        q.pairs.add(a=7, b=9)
        q.pairs.add(a=11, b=9, contact_model=pb.CONTACT_MODEL_POINT)
        q.pairs.add(a=7, b=11)
        for k, v in opt.items():
            setattr(q.options, k, v)
        return q
    opts = [dict(), dict(detail=pb.DETAIL_PATCHES, point_contacts=True),
            dict(detail=pb.DETAIL_SURFACE), dict(detail=pb.DETAIL_SURFACE, representation=pb.REPRESENTATION_TRIANGLE),
            dict(want_energy=True), dict(want_jacobian=True), dict(want_jacobian=True, want_energy=True),
            dict(contact_model=pb.CONTACT_MODEL_POINT), dict(contact_model=pb.CONTACT_MODEL_HYDROELASTIC),
            dict(stiction_tolerance=1e-3, detail=pb.DETAIL_PATCHES)]
    for k, o in enumerate(opts):
        out.append(("options %s" % (o or "default"), [env(200 + k, "contact_query", pair(0.045, **o))]))
    out.append(("apart (no contact)", [env(300, "contact_query", pair(0.5, want_jacobian=True))]))
    out.append(("request id 0", [env(0, "contact_query", pair(0.045))]))
    out.append(("no pairs", [env(301, "contact_query", pb.ContactQuery(bodies=pair(0.04).bodies))]))
    out.append(("all pairs, none close", [env(302, "contact_query", pb.ContactQuery(
        bodies=pair(0.5).bodies[:1], all_pairs=pb.AllPairs()))]))
    # pipelined: small and large between Hellos
    burst = [env(400, "hello", pb.Hello()), env(401, "contact_query", pair(0.045, detail=pb.DETAIL_SURFACE)),
             env(402, "contact_query", q), env(403, "contact_query", pair(0.04)), env(404, "hello", pb.Hello())]
    out.append(("pipelined burst", burst))
    # failures
    bad = pair(0.045)
    bad.bodies[0].geometry_id = "0" * 32
    out.append(("unknown geometry", [env(500, "contact_query", bad)]))
    bad = pair(0.045)
    bad.bodies[2].pose.orientation.w = 1.5
    out.append(("bad quaternion", [env(501, "contact_query", bad)]))
    bad = pair(0.045)
    bad.bodies[1].velocity.linear.x = float("inf")
    out.append(("infinite velocity", [env(502, "contact_query", bad)]))
    bad = pair(0.045)
    bad.bodies[0].material.friction = -1
    out.append(("bad material", [env(505, "contact_query", bad)]))
    bad = pair(0.045)
    bad.bodies[0].pose.position.y = float("nan")
    out.append(("position not finite", [env(506, "contact_query", bad)]))
    bad = pair(0.045)
    bad.bodies[1].body_id = 7
    out.append(("duplicate body", [env(503, "contact_query", bad)]))
    bad = pair(0.045)
    bad.pairs.add(a=7, b=99)
    out.append(("unknown pair body", [env(504, "contact_query", bad)]))
    # a stream over all pairs, three updates pipelined, then closed
    os_ = pb.OpenStream(bodies=q.bodies[:60], all_pairs=pb.AllPairs(margin=0.01), mode=pb.STREAM_MODE_QUEUE_ALL)
    out.append(("open stream", [env(600, "open_stream", os_)]))
    ups = []
    for s in (1, 2, 3):
        u = pb.StreamUpdate(stream_id=1, sequence=s)
        u.bodies.add(body_id=1, pose=pb.Pose(position=pb.Vec3(x=0.01 * s)))
        ups.append(env(600 + s, "stream_update", u))
    u = pb.StreamUpdate(stream_id=1, sequence=4)
    u.bodies.add(body_id=1, pose=pb.Pose(orientation=pb.Quat(w=2)))
    ups.append(env(604, "stream_update", u))
    u = pb.StreamUpdate(stream_id=1, sequence=5)
    u.bodies.add(body_id=2, velocity=pb.SpatialVelocity(angular=pb.Vec3(y=float("inf"))))
    ups.append(env(606, "stream_update", u))
    u = pb.StreamUpdate(stream_id=1, sequence=6)
    u.bodies.add(body_id=2)
    u.bodies.add(body_id=4000)
    ups.append(env(607, "stream_update", u))
    out.append(("stream updates", ups))
    out.append(("close stream", [env(605, "close_stream", pb.CloseStream(stream_id=1))]))
    return out


def register(c):
    shapes = [pb.RegisterGeometry(sphere=pb.Sphere(radius=0.1), compliance=pb.COMPLIANCE_COMPLIANT, modulus=1e6,
                                  resolution_hint=0.05),
              pb.RegisterGeometry(sphere=pb.Sphere(radius=0.05), compliance=pb.COMPLIANCE_COMPLIANT, modulus=1e5,
                                  resolution_hint=0.006, material=pb.Material(friction=0.3)),
              pb.RegisterGeometry(half_space=pb.HalfSpace(), compliance=pb.COMPLIANCE_RIGID,
                                  material=pb.Material(friction=0.3)),
              pb.RegisterGeometry(box=pb.Box(size=pb.Vec3(x=0.1, y=0.1, z=0.1)), compliance=pb.COMPLIANCE_COMPLIANT,
                                  modulus=1e6, resolution_hint=0.02,
                                  point_stiffness=pb.DoubleValue(value=1e5))]
    ids = []
    for k, s in enumerate(shapes):
        c.send([env(k + 1, "register_geometry", s)])
        e = pb.Envelope()
        e.ParseFromString(c.recv())
        if e.WhichOneof("msg") != "register_reply":
            sys.exit("registration failed: %s" % e)
        ids.append(e.register_reply.geometry_id)
    return ids


def run(binary, config, workers):
    p, port = start(binary, config, workers)
    try:
        pc, jc = Conn(port), Conn(port, json=True)
        ids = register(pc)
        replies = []
        for label, group in requests(ids):
            for conn, wire in ((pc, "proto"), (jc, "json")):
                conn.send(group)
                got = []
                for _ in group:
                    raw = conn.recv()
                    got.append(unjson(raw) if wire == "json" else untimed(raw))
                replies.append(("%s (%s)" % (label, wire), got, sum(len(g if wire == "json" else g[0])
                                                                     for g in got)))
        return replies
    finally:
        p.terminate()
        p.wait()


failed = False
total = identical = 0
# Which pair of a query first finds max_reply_bytes full depends on how its
# jobs interleave on the workers: one worker makes that deterministic.
for config, workers in ((None, WORKERS), ('{"limits": {"max_reply_bytes": 60000}}', "1")):
    a, b = run(OLD, config, workers), run(NEW, config, workers)
    print("-- %s, %s workers" % (config or "default limits", workers))
    for (label, ra, na), (_, rb, nb) in zip(a, b):
        same = ra == rb
        kinds = ",".join(sorted({x[1] for x in ra if isinstance(x, tuple)})) or "json"
        print("%s %-60s %8d bytes  %s" % ("same" if same else "DIFF", label, na, kinds))
        failed |= not same
        total += max(len(ra), len(rb))
        identical += sum(x == y for x, y in zip(ra, rb))
        if not same and "-v" in sys.argv:
            for x, y in zip(ra, rb):
                if x != y:
                    print("  old: %.600r\n  new: %.600r" % (x, y))
print("%d of %d replies identical" % (identical, total))
sys.exit(1 if failed else 0)
