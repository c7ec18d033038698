#!/usr/bin/python3
"""Write the seed corpora of the libFuzzer targets (tests/fuzz/targets).

    make_corpora.py OUT_DIR

OUT_DIR/<target>/ receives small inputs in each target's layout (see the
comment at the top of each target): the mesh files of tests/engine/data
for every format byte and welding choice; requests built by the Python
client's request builders (contactd_client.*_request), as delimited
protobuf frames (several per input, as a connection sends them) and as
proto3 JSON lines; the example scenes of client/examples/scenes plus a few
written here; small terrain grids and convex point sets. Nothing here is
committed: the script is run before each fuzz run. Needs contactd_client
importable (the installed package) with its generated contactd_pb2.
"""
import hashlib
import json
import math
import os
import random
import struct
import sys

from google.protobuf import json_format

import contactd_client as cc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "engine", "data")
SCENES = os.path.join(ROOT, "client", "examples", "scenes")


def write(out, target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def mesh_seeds(out):
    fmt = {"obj": 3, "stl": 4, "vtk": 1, "msh": 2}
    for fn in sorted(os.listdir(DATA)):
        with open(os.path.join(DATA, fn), "rb") as f:
            data = f.read()
        ext = fn.rsplit(".", 1)[-1]
        for weld in range(4):
            write(out, "fuzz_mesh_parse", "%s.w%d" % (fn, weld), bytes([fmt[ext], weld]) + data)
        write(out, "fuzz_mesh_parse", fn + ".auto", bytes([0, 1]) + data)


def requests():
    ball = "a" * 64
    floor = "b" * 64
    with open(os.path.join(DATA, "cube.obj"), "rb") as f:
        cube = f.read()
    bodies = [cc.Body(1, ball, position=(0, 0, 0.045), linear_velocity=(0.1, 0, 0)),
              cc.Body(2, floor)]
    yield "hello", cc.hello_request("fuzz")
    yield "sphere", cc.register_request("sphere", radius=0.05, modulus=1e5, hint=0.01, friction=0.3)
    yield "box", cc.register_request("box", size=(0.1, 0.2, 0.3), rigid=True)
    yield "cylinder", cc.register_request("cylinder", radius=0.05, length=0.1, modulus=1e6, hint=0.02)
    yield "capsule", cc.register_request("capsule", radius=0.05, length=0.1, rigid=True)
    yield "ellipsoid", cc.register_request("ellipsoid", semi_axes=(0.1, 0.05, 0.03), modulus=1e6, hint=0.02)
    yield "half_space", cc.register_request("half_space", modulus=1e6, slab=0.1, dissipation=0.5)
    yield "convex", cc.register_request("convex", points=[(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)],
                                        rigid=True)
    yield "mesh", cc.register_request("mesh", data=cube, format="obj", rigid=True)
    yield "mesh_compliant", cc.register_request("mesh", data=cube, format="obj", modulus=1e6, hint=0.3,
                                                edge_length=0.3, field="distance")
    yield "heightfield", cc.register_request("heightfield", heights=[[0, 1, 0, 1]] * 4, dx=0.5,
                                             origin=(0, 0, 0.1), continuity=2)
    yield "has", cc.has_request([ball, floor])
    yield "release", cc.release_request([ball])
    yield "stats", cc.stats_request()
    yield "query", cc.query_request(bodies, pairs=[(1, 2)], detail="surface")
    yield "query_all", cc.query_request(bodies, margin=0.01, detail="patches", point_contacts=True)
    yield "open_stream", cc.open_stream_request(bodies, pairs=[(1, 2)], latest_only=True)
    yield "update", cc.stream_update_request(7, 3, {1: {"position": (0, 0, 0.046)}})
    yield "close_stream", cc.close_stream_request(7)


def wire_seeds(out):
    frames = []
    for i, (name, env) in enumerate(requests()):
        env.request_id = i + 1
        body = env.SerializeToString()
        frame = cc.encode_varint(len(body)) + body
        frames.append(frame)
        write(out, "fuzz_frame", name, bytes([i]) + frame)
        text = json_format.MessageToJson(env, indent=None).encode()
        write(out, "fuzz_json", name, text)
    write(out, "fuzz_frame", "all", bytes([0]) + b"".join(frames))


def scene_seeds(out):
    if os.path.isdir(SCENES):
        for fn in sorted(os.listdir(SCENES)):
            with open(os.path.join(SCENES, fn), "rb") as f:
                write(out, "fuzz_scene", fn, f.read())
    write(out, "fuzz_scene", "mesh.json", b'{"geometries": {"m": {"shape": "mesh", "file": "cube.obj", '
          b'"rigid": true, "format": "obj"}, "c": {"shape": "cylinder", "radius": 0.1, "length": 0.2, '
          b'"modulus": 1e6}}, "bodies": [{"geometry": "m", "rpy_deg": [0, 10, 20]}, '
          b'{"geometry": "c", "filter": {"group": 1, "mask": 3}, "material": {"friction": 0.2}}], '
          b'"pairs": {"all": {"margin": 0.01, "exclude": [[1, 2]]}}, '
          b'"options": {"representation": "triangle", "contact_model": "point"}}')


def terrain_seeds(out):
    rnd = random.Random(3)
    for k, (nx, ny, cont) in enumerate([(4, 4, 1), (5, 7, 2), (9, 9, 1), (4, 6, 0)]):
        head = bytes([nx, ny, cont]) + struct.pack("<5d", 0.5, 0.25, -1.0, 2.0, 0.1)
        h = [0.2 * (i % nx) ** 2 + 0.1 * (i // nx) + rnd.uniform(-0.01, 0.01) for i in range(nx * ny)]
        pts = [rnd.uniform(0, 1) for _ in range(8)]
        write(out, "fuzz_heightfield", "grid%d" % k, head + struct.pack("<%dd" % len(h), *h) +
              struct.pack("<8d", *pts))


def convex_seeds(out):
    rnd = random.Random(4)
    tet = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    cube = [(x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1)]
    sph = []
    for _ in range(60):
        t, p = rnd.uniform(0, math.pi), rnd.uniform(0, 2 * math.pi)
        sph.append((math.sin(t) * math.cos(p), math.sin(t) * math.sin(p), math.cos(t)))
    for name, pts in (("tet", tet), ("cube", cube), ("sphere", sph), ("flat", tet[:3] + [(1, 1, 0)])):
        raw = struct.pack("<%dd" % (3 * len(pts)), *(c for p in pts for c in p))
        write(out, "fuzz_convex", name + ".rigid", bytes([4]) + raw)
        write(out, "fuzz_convex", name + ".compliant", bytes([5]) + raw)


def principals_seeds(out):
    h = hashlib.sha256(b"robot-7-secret").hexdigest()
    docs = {
        "example": {"principals": [
            {"name": "robot-7", "token_sha256": h, "roles": ["query"], "tenant": "lab-a"},
            {"name": "sim-farm", "cert_subject": "CN=sim-farm", "roles": ["query", "register"], "tenant": "lab-b"},
            {"name": "ops", "uid": 0, "roles": ["admin"], "tenant": "*"}]},
        "gid": {"_comment": "x", "principals": [{"name": "g", "gid": 4, "roles": ["query"], "tenant": "t"}]},
        "empty": {"principals": []},
        "duplicate": {"principals": [{"name": "a", "uid": 1, "roles": ["query"], "tenant": "t"},
                                     {"name": "b", "uid": 1, "roles": ["query"], "tenant": "t"}]},
    }
    for name, doc in docs.items():
        write(out, "fuzz_principals", name, json.dumps(doc).encode())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    mesh_seeds(out)
    wire_seeds(out)
    scene_seeds(out)
    terrain_seeds(out)
    convex_seeds(out)
    principals_seeds(out)


if __name__ == "__main__":
    main()
