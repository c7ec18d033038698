#!/usr/bin/python3
"""Interop test: a stock-protobuf Python client against a running contactd.

Uses Debian's python3-protobuf and contactd_pb2, generated from
proto/contactd.proto by stock `protoc --python_out` at build time (the build
dir's proto/python; never committed). Speaks the delimited format (varint
length + Envelope) and, on a second connection, the newline-delimited JSON
mirror (google.protobuf.json_format), and checks that both paths give the
same numbers, bit for bit, and that the physics is sane.

usage: interop_test.py ADDRESS [--pymod DIR]
  ADDRESS  HOST:PORT for TCP, or unix:PATH (or an absolute path) for a Unix
           socket.
  --pymod  directory holding contactd_pb2.py (default: $CONTACTD_PY_DIR, else
           the module installed with contactd_client).
Exit status 0 when every check passes, 1 otherwise (2 on usage errors).
"""

import argparse
import math
import os
import socket
import sys


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("address", help="HOST:PORT, unix:PATH or /abs/path")
    ap.add_argument("--pymod", default=os.environ.get("CONTACTD_PY_DIR"),
                    help="directory with contactd_pb2.py (default: the one installed with contactd_client)")
    ap.add_argument("--timeout", type=float, default=20.0, help="socket timeout, s")
    return ap.parse_args()


ARGS = parse_args()
try:
    if ARGS.pymod:
        sys.path.insert(0, ARGS.pymod)
        import contactd_pb2 as pb  # noqa: E402
    else:
        from contactd_client import contactd_pb2 as pb  # noqa: E402
except ImportError as e:
    sys.stderr.write("interop_test: cannot import contactd_pb2 (%s); install client/python or pass --pymod\n" % e)
    sys.exit(2)
from google.protobuf import json_format  # noqa: E402

# Delimited framing: prefer the public helpers of newer protobuf releases,
# else the varint codecs every release ships in google.protobuf.internal.
try:
    from google.protobuf.internal.encoder import _VarintBytes as varint_bytes
    from google.protobuf.internal.decoder import _DecodeVarint as decode_varint
except ImportError:  # pragma: no cover - very old or very new protobuf
    def varint_bytes(v):
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        return bytes(out)

    def decode_varint(buf, pos):
        r, shift = 0, 0
        while True:
            b = buf[pos]
            r |= (b & 0x7F) << shift
            pos += 1
            if not b & 0x80:
                return r, pos
            shift += 7


def connect(address, timeout):
    if address.startswith("unix:") or address.startswith("/"):
        path = address[5:] if address.startswith("unix:") else address
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(path)
        return s
    host, _, port = address.rpartition(":")
    s = socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class ProtoConn:
    """Delimited protobuf connection."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.next_id = 1

    def send(self, env):
        body = env.SerializeToString()
        self.sock.sendall(varint_bytes(len(body)) + body)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise EOFError("daemon closed the connection")
        self.buf += chunk

    def recv(self):
        while True:
            try:
                n, pos = decode_varint(self.buf, 0)
                if len(self.buf) >= pos + n:
                    env = pb.Envelope()
                    env.ParseFromString(self.buf[pos:pos + n])
                    self.buf = self.buf[pos + n:]
                    return env
            except IndexError:  # partial varint
                pass
            self._fill()


class JsonConn:
    """Newline-delimited proto3 JSON connection."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.next_id = 1

    def send(self, env):
        line = json_format.MessageToJson(env, indent=None).replace("\n", " ")
        self.sock.sendall(line.encode() + b"\n")

    def recv(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("daemon closed the connection")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json_format.Parse(line.decode(), pb.Envelope())


def call(conn, field, msg, want):
    """Send one request; return the reply of type `want` (skipping progress
    messages), or the Error reply."""
    rid = conn.next_id
    conn.next_id += 1
    env = pb.Envelope(request_id=rid)
    getattr(env, field).CopyFrom(msg)
    conn.send(env)
    while True:
        r = conn.recv()
        kind = r.WhichOneof("msg")
        if kind == "register_progress":
            continue
        if r.request_id != rid:
            raise AssertionError("reply for request %d while waiting for %d (%s)"
                                 % (r.request_id, rid, kind))
        if kind == "error" or kind == want:
            return kind, getattr(r, kind)
        raise AssertionError("unexpected reply %s to %s" % (kind, field))


FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)
    return cond


def expect(conn, field, msg, want):
    kind, rep = call(conn, field, msg, want)
    if kind == "error":
        raise AssertionError("%s failed: %s %s (%s)" % (
            field, pb.ErrorCode.Name(rep.code), rep.message, rep.field))
    return rep


R, E, HINT, DEPTH = 0.05, 1e5, 0.01, 0.01


def sphere_on_plane_force(r, e, d):
    """Analytic normal force of a compliant sphere (p = E (1 - |x|/R))
    pressed depth d into a rigid half space."""
    h = r - d
    return math.pi * e * ((r * r - h * h) - 2.0 / (3.0 * r) * (r ** 3 - h ** 3))


def register(conn):
    sph = pb.RegisterGeometry(sphere=pb.Sphere(radius=R),
                              compliance=pb.COMPLIANCE_COMPLIANT, modulus=E,
                              resolution_hint=HINT,
                              material=pb.Material(dissipation=0.0, friction=0.3))
    hs = pb.RegisterGeometry(half_space=pb.HalfSpace(), compliance=pb.COMPLIANCE_RIGID,
                             material=pb.Material(friction=0.3))
    a = expect(conn, "register_geometry", sph, "register_reply")
    b = expect(conn, "register_geometry", hs, "register_reply")
    return sph, hs, a, b


def scene(sid, hid, z):
    q = pb.ContactQuery()
    q.bodies.add(body_id=1, geometry_id=sid,
                 pose=pb.Pose(position=pb.Vec3(z=z), orientation=pb.Quat(w=1)),
                 velocity=pb.SpatialVelocity(linear=pb.Vec3(x=0.01)))
    q.bodies.add(body_id=2, geometry_id=hid)
    q.pairs.add(a=1, b=2)
    q.options.detail = pb.DETAIL_PATCHES
    q.options.point_contacts = True
    return q


def strip_times(results):
    """PairResults without their timing fields (which legitimately differ)."""
    out = []
    for r in results:
        c = pb.PairResult()
        c.CopyFrom(r)
        c.compute_time_us = 0
        out.append(c.SerializeToString(deterministic=True))
    return out


def main():
    pc = ProtoConn(connect(ARGS.address, ARGS.timeout))
    jc = JsonConn(connect(ARGS.address, ARGS.timeout))

    # Hello on both transports.
    for name, conn in (("proto", pc), ("json", jc)):
        h = expect(conn, "hello", pb.Hello(protocol_version=1, client_name="interop-" + name),
                   "hello_reply")
        check(h.protocol_version == 1, "%s: hello_reply.protocol_version == 1" % name)
        check(h.limits.max_frame_bytes > 0, "%s: limits.max_frame_bytes > 0 (%d)"
              % (name, h.limits.max_frame_bytes))

    # Register over protobuf; the JSON client registering the same content
    # gets the same ids from the cache.
    sph, hs, a, b = register(pc)
    check(len(a.geometry_id) >= 16 and all(ch in "0123456789abcdef" for ch in a.geometry_id),
          "sphere geometry id is lowercase hex (%s)" % a.geometry_id)
    check(a.stats.tetrahedra > 0, "sphere built as a tet mesh (%d tets)" % a.stats.tetrahedra)
    a2 = expect(jc, "register_geometry", sph, "register_reply")
    b2 = expect(jc, "register_geometry", hs, "register_reply")
    check(a2.geometry_id == a.geometry_id and b2.geometry_id == b.geometry_id,
          "same content, same ids over JSON")
    check(a2.already_cached, "second registration is a cache hit")

    missing_id = "0" * len(a.geometry_id)
    hg = expect(pc, "has_geometry", pb.HasGeometry(geometry_ids=[a.geometry_id, missing_id]),
                "has_geometry_reply")
    check(list(hg.missing) == [missing_id], "has_geometry reports only the unknown id")

    # The same query over both transports: identical numbers.
    q = scene(a.geometry_id, b.geometry_id, R - DEPTH)
    rp = expect(pc, "contact_query", q, "contact_reply")
    rj = expect(jc, "contact_query", q, "contact_reply")
    check(len(rp.results) == 1, "one result per pair")
    if rp.results:
        r = rp.results[0]
        check(r.status == pb.CONTACT_STATUS_SURFACE, "status SURFACE (%s)"
              % pb.ContactStatus.Name(r.status))
        fz = r.wrench_a.force.z
        f0 = sphere_on_plane_force(R, E, DEPTH)
        check(abs(fz - f0) < 0.15 * f0, "normal force %.4f N within 15%% of analytic %.4f N"
              % (fz, f0))
        check(abs(r.wrench_a.force.z + r.wrench_b.force.z) <= 1e-9 * abs(fz),
              "wrench_b force = -wrench_a force")
        check(r.wrench_a.force.x < 0, "friction opposes sliding (+x): fx = %.4g"
              % r.wrench_a.force.x)
        check(r.area > 0 and abs(r.centroid.z) < 1e-9, "area %.4g m^2, centroid on the plane"
              % r.area)
        check(len(r.patches) == 1, "one patch")
        check(len(r.point_contacts) > 0, "point contacts present (%d)" % len(r.point_contacts))
    check(strip_times(rp.results) == strip_times(rj.results),
          "protobuf and JSON transports give bit-identical results")

    # Unknown geometry: NOT_FOUND, request id echoed (checked by call()).
    bad = scene(missing_id, b.geometry_id, R - DEPTH)
    kind, err = call(pc, "contact_query", bad, "contact_reply")
    check(kind == "error" and err.code == pb.NOT_FOUND,
          "unknown geometry id -> NOT_FOUND (%s)" % (
              pb.ErrorCode.Name(err.code) + ": " + err.message if kind == "error" else kind))

    # A stream: three updates pressing deeper, results in sequence order with
    # growing force.
    os_ = pb.OpenStream(bodies=scene(a.geometry_id, b.geometry_id, R).bodies,
                        pairs=[pb.Pair(a=1, b=2)], mode=pb.STREAM_MODE_QUEUE_ALL)
    orep = expect(pc, "open_stream", os_, "open_stream_reply")
    sid = orep.stream_id
    for seq, d in ((1, 0.002), (2, 0.004), (3, 0.006)):
        upd = pb.StreamUpdate(stream_id=sid, sequence=seq)
        upd.bodies.add(body_id=1, pose=pb.Pose(position=pb.Vec3(z=R - d),
                                                orientation=pb.Quat(w=1)))
        env = pb.Envelope(request_id=1000 + seq)
        env.stream_update.CopyFrom(upd)
        pc.send(env)
    seqs, forces = [], []
    while len(seqs) < 3:
        r = pc.recv()
        kind = r.WhichOneof("msg")
        if kind == "error":
            check(False, "stream update failed: %s" % r.error.message)
            break
        if kind != "stream_result":
            continue
        seqs.append(r.stream_result.sequence)
        forces.append(r.stream_result.results[0].wrench_a.force.z
                      if r.stream_result.results else float("nan"))
    check(seqs == [1, 2, 3], "stream results in sequence order (%s)" % seqs)
    check(len(forces) == 3 and forces[0] < forces[1] < forces[2],
          "stream force grows with depth (%s)" % ", ".join("%.3f" % f for f in forces))
    crep = expect(pc, "close_stream", pb.CloseStream(stream_id=sid), "close_stream_reply")
    check(crep.stream_id == sid, "close_stream_reply names the stream")

    st = expect(jc, "stats", pb.Stats(), "stats_reply")
    check(st.requests > 0 and st.cache_entries >= 2,
          "stats: %d requests, %d cache entries" % (st.requests, st.cache_entries))
    check(st.cache_hits >= 2, "stats: the JSON client's registrations were cache hits (%d)"
          % st.cache_hits)

    rel = expect(pc, "release_geometry",
                 pb.ReleaseGeometry(geometry_ids=[a.geometry_id, b.geometry_id]),
                 "release_reply")
    check(sorted(rel.released) == sorted([a.geometry_id, b.geometry_id]),
          "release_geometry releases both ids")

    pc.sock.close()
    jc.sock.close()


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, EOFError, OSError) as e:
        FAILURES.append(str(e))
        print("FAIL " + str(e))
    print("interop: %d failure(s)" % len(FAILURES))
    sys.exit(1 if FAILURES else 0)
