"""contactctl against a real contactd: every command, its output, --json,
--help, --version, errors and exit codes (0 ok, 1 server error, 2 usage,
3 unreachable, 4 bad input, 5 negative answer)."""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contactd_fixture import Daemon  # noqa: E402

CTL = os.environ["CONTACTCTL"]
SRC = os.environ.get("CONTACTD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCENE = os.path.join(SRC, "client", "examples", "scenes", "ball_on_floor.json")

SIMPLE = {
    "geometries": {"ball": {"shape": "sphere", "radius": 0.05, "modulus": 1e5, "hint": 0.0125},
                   "floor": {"shape": "half-space", "rigid": True}},
    "bodies": [{"name": "ball", "geometry": "ball", "position": [0, 0, 0.045]},
               {"name": "floor", "geometry": "floor"}],
    "pairs": [["ball", "floor"]],
}


class ContactctlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.tmp = tempfile.mkdtemp(prefix="cc-ctl-")

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0
        for f in os.listdir(cls.tmp):
            os.unlink(os.path.join(cls.tmp, f))
        os.rmdir(cls.tmp)

    def run_ctl(self, *args, stdin=None, addr=True, env=None):
        argv = [CTL] + (["--addr", self.d.tcp_addr] if addr else []) + list(args)
        e = dict(os.environ)
        e.pop("CONTACTD_ADDR", None)
        if env:
            e.update(env)
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=e, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, **kw):
        rc, out, err = self.run_ctl(*args, **kw)
        self.assertEqual(rc, 0, "contactctl %s failed (%d): %s" % (" ".join(args), rc, err))
        return out

    # -- help / version / usage --
    def test_version_and_help(self):
        out = self.ok("--version", addr=False)
        self.assertRegex(out, r"^contactctl \d+\.\d+\.\d+ \(protocol 1\)")
        self.assertIn("exit codes", self.ok("--help", addr=False))
        for cmd in ("ping", "stats", "register", "has", "query", "stream", "export"):
            out = self.ok(cmd, "--help", addr=False)
            self.assertIn("usage: contactctl " + cmd, out)
            self.assertEqual(self.ok("help", cmd, addr=False), out)

    def test_usage_errors_exit_2(self):
        for args in (["bogus"], [], ["register"], ["register", "sphere", "--modulus", "1e5"],
                     ["register", "sphere", "--radius", "x", "--modulus", "1"],
                     ["register", "sphere", "--radius", "0.1"],  # compliant without modulus
                     ["register", "box", "--size", "1,2", "--rigid"],
                     ["query"], ["export", SCENE, "-o", os.path.join(self.tmp, "x.vtk")],
                     ["export", SCENE, "--pair", "ball,floor", "-o", os.path.join(self.tmp, "x.obj")],
                     ["stream", SCENE, "--rate", "-1"], ["--timeout", "0", "ping"]):
            rc, out, err = self.run_ctl(*args)
            self.assertEqual(rc, 2, "%s: rc %d, %s" % (args, rc, err))
            self.assertTrue(err, args)

    # -- connection --
    def test_unreachable_exit_3(self):
        rc, _, err = self.run_ctl("--addr", "unix:/nonexistent/contactd.sock", "ping", addr=False)
        self.assertEqual(rc, 3)
        self.assertIn("cannot connect", err)

    def test_addr_from_environment_and_unix(self):
        out = self.ok("ping", addr=False, env={"CONTACTD_ADDR": self.d.unix_addr})
        self.assertRegex(out, r"^pong: contactd \S+, protocol 1, round trip [0-9.]+ ms")

    def test_ping(self):
        out = self.ok("ping", "--count", "3")
        self.assertIn("min of 3", out)
        j = json.loads(self.ok("ping", "--json"))
        self.assertEqual(j["protocol_version"], 1)
        self.assertIn("streams", j["capabilities"])

    # -- register --
    def test_register_every_shape(self):
        ids = set()
        for args in (["sphere", "--radius", "0.05", "--modulus", "1e5", "--hint", "0.01"],
                     ["box", "--size", "0.1,0.2,0.05", "--modulus", "1e6", "--hint", "0.05"],
                     ["cylinder", "--radius", "0.05", "--length", "0.02", "--modulus", "1e6", "--hint", "0.02"],
                     ["capsule", "--radius", "0.02", "--length", "0.1", "--modulus", "1e6", "--hint", "0.01"],
                     ["ellipsoid", "--semi-axes", "0.03,0.02,0.01", "--modulus", "1e6", "--hint", "0.01"],
                     ["half-space", "--rigid", "--friction", "0.3"],
                     ["half-space", "--modulus", "1e6", "--slab", "0.1", "--dissipation", "1"],
                     ["box", "--size", "0.1,0.1,0.1", "--rigid", "--hint", "0.05"]):
            out = self.ok("register", *args).strip()
            self.assertRegex(out, r"^[0-9a-f]{16,}$", args)
            ids.add(out)
        self.assertEqual(len(ids), 8)
        # the same content gives the same id, and --json says it was cached
        j = json.loads(self.ok("register", "sphere", "--radius", "0.05", "--modulus", "1e5", "--hint", "0.01",
                               "--json"))
        self.assertIn(j["geometry_id"], ids)
        self.assertTrue(j["already_cached"])
        self.assertGreater(j["stats"]["tetrahedra"], 0)

    def test_register_mesh_file(self):
        path = os.path.join(self.tmp, "tet.obj")
        with open(path, "w") as f:
            f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
        j = json.loads(self.ok("register", "mesh", path, "--rigid", "--json"))
        self.assertEqual(j["stats"]["triangles"], 4)
        self.assertAlmostEqual(j["stats"]["volume"], 1 / 6, delta=1e-12)
        rc, _, err = self.run_ctl("register", "mesh", os.path.join(self.tmp, "missing.obj"), "--rigid")
        self.assertEqual(rc, 4)
        bad = os.path.join(self.tmp, "bad.obj")
        with open(bad, "w") as f:
            f.write("v 0 0\nf 1 2 9\n")
        rc, _, err = self.run_ctl("register", "mesh", bad, "--rigid")
        self.assertEqual(rc, 1)
        self.assertIn("INVALID_ARGUMENT", err)

    def test_register_heightfield_and_compliant_surface(self):
        path = os.path.join(self.tmp, "bowl.txt")
        with open(path, "w") as f:
            f.write("5 4 1 0.5 -2 -1 0.1\n")
            f.write(" ".join("%g" % (0.2 * (i - 2) ** 2) for j in range(4) for i in range(5)) + "\n")
        j = json.loads(self.ok("register", "heightfield", path, "--json"))
        self.assertEqual(j["stats"]["vertices"], 20)
        c2 = self.ok("register", "heightfield", path, "--c2").strip()
        self.assertNotEqual(c2, j["geometry_id"])
        short = os.path.join(self.tmp, "short.txt")
        with open(short, "w") as f:
            f.write("5 4 1 1\n1 2 3\n")
        rc, _, err = self.run_ctl("register", "heightfield", short)
        self.assertEqual(rc, 4)
        self.assertIn("height 3 of 20", err)
        # a closed OBJ cube, tetrahedralised by the server (progress forced on)
        cube = os.path.join(self.tmp, "cube.obj")
        with open(cube, "w") as f:
            f.write("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
                    "f 1 4 3\nf 1 3 2\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\nf 2 3 7\nf 2 7 6\n"
                    "f 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8\n")
        rc, out, err = self.run_ctl("register", "mesh", cube, "--modulus", "1e6", "--edge-length", "0.1",
                                    "--field", "distance", "--progress", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertGreater(j["stats"]["tetrahedra"], 100)
        self.assertAlmostEqual(j["stats"]["volume"], 1.0, delta=0.02)
        self.assertIn("100%", err)

    def test_register_server_error_exit_1(self):
        rc, out, err = self.run_ctl("register", "sphere", "--radius", "-1", "--modulus", "1e5", "--hint", "0.01")
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("INVALID_ARGUMENT", err)
        self.assertIn("radius", err)

    # -- has --
    def test_has(self):
        gid = self.ok("register", "half-space", "--rigid").strip()
        # the geometry stays cached after the registering connection closed
        out = self.ok("has", gid)
        self.assertEqual(out.strip(), gid + " present")
        rc, out, _ = self.run_ctl("has", gid, "0" * 64, "--json")
        self.assertEqual(rc, 5)
        j = json.loads(out)
        self.assertEqual(j, {"present": [gid], "missing": ["0" * 64]})

    # -- query --
    def test_query_table(self):
        out = self.ok("query", SCENE)
        self.assertRegex(out, r"pair ball \(1\) / floor \(2\): surface, \d+ faces, area [0-9.e+-]+ m\^2")
        self.assertIn("equivalent point", out)
        self.assertRegex(out, r"patch 0 ")
        self.assertRegex(out, r"1 pairs, server \d+ us, round trip")

    def test_query_jacobian(self):
        out = self.ok("query", SCENE, "--jacobian")
        for name in ("d_pose_a", "d_pose_b", "d_velocity_a", "d_velocity_b"):
            self.assertIn("  %s  (rows tx, ty, tz" % name, out)
        j = json.loads(self.ok("query", "-", "--json", "--jacobian", stdin=json.dumps(SIMPLE)))
        jac = j["pairs"][0]["jacobian"]
        for name in ("d_pose_a", "d_pose_b", "d_velocity_a", "d_velocity_b"):
            self.assertEqual([len(r) for r in jac[name]], [6] * 6)
        kz = jac["d_pose_a"][5][5]
        self.assertLess(kz, 0)
        self.assertAlmostEqual(jac["d_pose_b"][5][5], -kz, delta=1e-9 * abs(kz))
        self.assertNotIn("jacobian", json.loads(self.ok("query", "-", "--json", stdin=json.dumps(SIMPLE)))["pairs"][0])

    def test_query_reduce(self):
        out = self.ok("query", SCENE, "--reduce", "4")
        self.assertRegex(out, r"reduced 0   patch 0   point \(")
        self.assertRegex(out, r"k [0-9.e+-]+ N/m  phi -[0-9.e+-]+ m")
        j = json.loads(self.ok("query", "-", "--json", "--reduce", "4", stdin=json.dumps(SIMPLE)))
        p = j["pairs"][0]
        pts = p["reduced_contacts"]
        self.assertTrue(1 <= len(pts) <= 4)
        # the points' forces add up to the pair's; k (-phi) to its elastic force (at rest)
        for k in range(3):
            f = p["wrench_a"]["force"][k]
            self.assertAlmostEqual(sum(q["force"][k] for q in pts), f, delta=1e-9 * abs(p["wrench_a"]["force"][2]))
        fz = p["wrench_a"]["force"][2]
        self.assertAlmostEqual(sum(q["stiffness"] * -q["separation"] for q in pts), fz, delta=1e-9 * fz)
        self.assertNotIn("reduced_contacts", json.loads(self.ok("query", "-", "--json", stdin=json.dumps(SIMPLE)))["pairs"][0])
        for bad in ("0", "65", "x"):
            rc, _, err = self.run_ctl("query", SCENE, "--reduce", bad)
            self.assertEqual(rc, 2, bad)
            self.assertIn("--reduce", err)

    def test_query_json_from_stdin(self):
        j = json.loads(self.ok("query", "-", "--json", stdin=json.dumps(SIMPLE)))
        p = j["pairs"][0]
        self.assertEqual((p["a_name"], p["b_name"], p["status"]), ("ball", "floor", "surface"))
        fz = p["wrench_a"]["force"][2]
        self.assertGreater(fz, 5)
        self.assertAlmostEqual(p["wrench_b"]["force"][2], -fz, delta=1e-9 * fz)
        self.assertEqual(p["patches"], [])  # detail defaults to wrench
        j = json.loads(self.ok("query", "-", "--json", "--detail", "patches", stdin=json.dumps(SIMPLE)))
        self.assertEqual(len(j["pairs"][0]["patches"]), 1)
        # all pairs by the broad phase: same force
        s2 = dict(SIMPLE)
        s2.pop("pairs")
        j2 = json.loads(self.ok("query", "-", "--json", stdin=json.dumps(s2)))
        self.assertEqual(j2["pairs"][0]["wrench_a"]["force"][2], fz)

    def test_query_energy(self):
        out = self.ok("query", "-", "--energy", "--detail", "patches", stdin=json.dumps(SIMPLE))
        self.assertRegex(out, r"strain energy     \[J\]    [0-9.e+-]+ \(exact\)")
        self.assertRegex(out, r"patch 0 .* U [0-9.e+-]+ J")
        j = json.loads(self.ok("query", "-", "--json", "--energy", "--detail", "patches", stdin=json.dumps(SIMPLE)))
        p = j["pairs"][0]
        # ball (R 0.05, E 1e5) 5 mm into the floor: pi E (d^3/3 - d^4/(6R)),
        # to 15 % on its coarse mesh (d = 0.4 hint)
        d, R, E = 0.005, 0.05, 1e5
        self.assertEqual(p["energy"], "exact")
        self.assertAlmostEqual(p["strain_energy"], math.pi * E * (d ** 3 / 3 - d ** 4 / (6 * R)),
                               delta=0.15 * p["strain_energy"])
        self.assertAlmostEqual(p["patches"][0]["strain_energy"], p["strain_energy"], delta=1e-12 * p["strain_energy"])
        self.assertNotIn("strain_energy", json.loads(self.ok("query", "-", "--json", stdin=json.dumps(SIMPLE)))["pairs"][0])
        # the scene's options.energy, also for streams
        s2 = dict(SIMPLE, options={"energy": True})
        q = json.loads(self.ok("query", "-", "--json", stdin=json.dumps(s2)))["pairs"][0]
        self.assertEqual(q["strain_energy"], p["strain_energy"])
        lines = self.ok("stream", "-", "--json", "--count", "2", stdin=json.dumps(s2)).splitlines()
        first = json.loads(lines[0])
        self.assertEqual(first["pairs"][0]["strain_energy"], p["strain_energy"])

    def test_query_scene_of_every_shape(self):
        """A scene file with every shape kind (and a mesh file next to it,
        with its format named) pressed into a compliant floor: each rigid
        body's normal force is E/slab times the volume it displaces (the
        floor's pressure grows linearly with depth), a closed form."""
        import math
        import shutil
        shutil.copy(os.path.join(SRC, "tests", "engine", "data", "cube.obj"), os.path.join(self.tmp, "cube.obj"))
        E, slab = 1e6, 0.1
        k = E / slab
        d_flat, d_round = 0.002, 0.01
        a, b, c = 0.06, 0.04, 0.03
        scene = {
            "geometries": {
                "floor": {"shape": "half-space", "modulus": E, "slab": slab},
                "box": {"shape": "box", "size": [0.2, 0.2, 0.1], "rigid": True, "hint": 0.1},
                "can": {"shape": "cylinder", "radius": 0.05, "length": 0.1, "rigid": True, "hint": 0.0025},
                "pill": {"shape": "capsule", "radius": 0.05, "length": 0.1, "rigid": True, "hint": 0.002},
                "egg": {"shape": "ellipsoid", "semi_axes": [a, b, c], "rigid": True, "hint": 0.002},
                "cube": {"shape": "mesh", "file": "cube.obj", "format": "obj", "rigid": True},
            },
            "bodies": [
                {"name": "floor", "geometry": "floor"},
                {"name": "box", "geometry": "box", "position": [0, 0, 0.05 - d_flat]},
                {"name": "can", "geometry": "can", "position": [1, 0, 0.05 - d_flat]},
                {"name": "pill", "geometry": "pill", "position": [2, 0, 0.1 - d_round]},
                {"name": "egg", "geometry": "egg", "position": [3, 0, c - d_round]},
                {"name": "cube", "geometry": "cube", "position": [4, 0, -d_flat]},
            ],
            "pairs": [[n, "floor"] for n in ("box", "can", "pill", "egg", "cube")],
        }
        path = os.path.join(self.tmp, "shapes.json")
        with open(path, "w") as f:
            json.dump(scene, f)
        j = json.loads(self.ok("query", path, "--json"))
        fz = {p["a_name"]: p["wrench_a"]["force"][2] for p in j["pairs"]}
        cap = lambda r, d: math.pi * d * d * (3 * r - d) / 3  # noqa: E731
        want = {
            "box": (k * d_flat * 0.2 * 0.2, 1e-9),
            "cube": (k * d_flat * 1.0, 1e-9),
            # a 126-gon inscribed in the circle: 0.04 % less area (measured)
            "can": (k * d_flat * math.pi * 0.05 ** 2, 1e-3),
            # polyhedra inscribed in the round caps: 0.26 % and 0.12 % less
            # volume (measured)
            "pill": (k * cap(0.05, d_round), 1e-2),
            "egg": (k * math.pi * a * b * d_round ** 2 * (3 * c - d_round) / (3 * c * c), 1e-2),
        }
        for name, (f, rel) in want.items():
            self.assertAlmostEqual(fz[name], f, delta=rel * f, msg="%s: %g N, want %g N" % (name, fz[name], f))
            # inscribed meshes displace less, never more
            self.assertLessEqual(fz[name], f * (1 + 1e-9), name)
        # an unknown format and a missing mesh file are named by their path
        scene["geometries"]["cube"]["format"] = "dae"
        with open(path, "w") as f:
            json.dump(scene, f)
        rc, _, err = self.run_ctl("query", path)
        self.assertEqual(rc, 4)
        self.assertIn("geometries.cube.format", err)
        scene["geometries"]["cube"] = {"shape": "mesh", "file": "nope.obj", "rigid": True}
        with open(path, "w") as f:
            json.dump(scene, f)
        rc, _, err = self.run_ctl("query", path)
        self.assertEqual(rc, 4)
        self.assertIn("geometries.cube.file: cannot open", err)

    def test_query_input_errors_exit_4(self):
        rc, _, err = self.run_ctl("query", os.path.join(self.tmp, "none.json"))
        self.assertEqual(rc, 4)
        rc, _, err = self.run_ctl("query", "-", stdin="{not json")
        self.assertEqual(rc, 4)
        self.assertIn("invalid JSON", err)
        bad = json.loads(json.dumps(SIMPLE))
        bad["bodies"][0]["position"] = [0, 0]
        rc, _, err = self.run_ctl("query", "-", stdin=json.dumps(bad))
        self.assertEqual(rc, 4)
        self.assertIn("bodies[0].position", err)

    def test_query_server_errors_exit_1(self):
        bad = json.loads(json.dumps(SIMPLE))
        bad["geometries"]["floor"] = {"id": "f" * 64}
        rc, _, err = self.run_ctl("query", "-", stdin=json.dumps(bad))
        self.assertEqual(rc, 1)
        self.assertIn("NOT_FOUND", err)
        bad = json.loads(json.dumps(SIMPLE))
        bad["geometries"]["ball"]["radius"] = 0
        rc, _, err = self.run_ctl("query", "-", stdin=json.dumps(bad))
        self.assertEqual(rc, 1)
        self.assertIn('geometry "ball"', err)
        bad = json.loads(json.dumps(SIMPLE))
        bad["bodies"][0]["orientation"] = [2, 0, 0, 0]
        rc, _, err = self.run_ctl("query", "-", stdin=json.dumps(bad))
        self.assertEqual(rc, 1)
        self.assertIn("INVALID_ARGUMENT", err)

    # -- stream --
    def test_stream_count(self):
        out = self.ok("stream", SCENE, "--rate", "200", "--count", "12")
        lines = out.strip().splitlines()
        self.assertEqual(len(lines), 13)
        self.assertRegex(lines[0], r"^seq +1 +ball/floor \|Fn\| [0-9.e+-]+ N area [0-9.e+-]+ +\| rtt [0-9.]+ ms +p50")
        self.assertRegex(lines[-1], r"^12 updates, 12 results, 0 dropped in [0-9.]+ s .*p50 [0-9.]+ ms, p99")
        # the frames cycle: results 1 and 5 are the same frame, 1 and 2 differ
        fn = [float(re.search(r"\|Fn\| (\S+)", l).group(1)) for l in lines[:-1]]
        self.assertEqual(fn[0], fn[4])
        self.assertNotEqual(fn[0], fn[1])

    def test_stream_json_latest(self):
        out = self.ok("stream", SCENE, "--rate", "0", "--count", "100", "--latest", "--json")
        objs = [json.loads(l) for l in out.strip().splitlines()]
        summary = objs[-1]["summary"]
        results = objs[:-1]
        self.assertEqual(summary["updates"], 100)
        self.assertEqual(summary["results"], len(results))
        self.assertEqual(results[-1]["sequence"], 100)
        self.assertEqual(summary["results"] + summary["dropped_updates"], 100)
        seqs = [r["sequence"] for r in results]
        self.assertEqual(seqs, sorted(seqs))

    def test_stream_resumes_after_kill9(self):
        """contactd killed with SIGKILL mid-stream and restarted on the same
        port: contactctl's stream reopens through the library, says so on
        stderr, sends the lost frames again, and every frame's result equals
        the same frame's before the break."""
        tmp = tempfile.mkdtemp(prefix="cc-ctl-restart-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log_path = os.path.join(tmp, "contactd.log")

        def start():
            log = open(log_path, "wb")
            p = subprocess.Popen([os.environ["CONTACTD_BIN"], "--listen", "127.0.0.1:%d" % port,
                                  "--workers", "2"], stdout=subprocess.DEVNULL, stderr=log)
            log.close()
            t0 = time.monotonic()
            while time.monotonic() - t0 < 20:
                with open(log_path, encoding="utf-8", errors="replace") as f:
                    if 'msg="ready"' in f.read():
                        return p
                self.assertIsNone(p.poll(), "contactd exited during startup")
                time.sleep(0.01)
            p.kill()
            self.fail("contactd did not become ready on port %d" % port)

        d = start()
        ctl = subprocess.Popen([CTL, "--addr", "127.0.0.1:%d" % port, "stream", SCENE, "--rate", "200",
                                "--count", "120", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        lines = []
        while len(lines) < 40:
            line = ctl.stdout.readline()
            if not line:
                self.fail("contactctl ended early: %s" % ctl.stderr.read())
            lines.append(line)
        d.kill()
        d.wait()
        time.sleep(0.2)
        d = start()
        out = ctl.stdout.read()  # through the same buffer as readline (communicate would skip it)
        err = ctl.stderr.read()
        ctl.wait(120)
        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait(30), 0)
        shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(ctl.returncode, 0, err)
        self.assertIn("connection lost; reopened on 127.0.0.1:%d" % port, err)
        objs = [json.loads(l) for l in "".join(lines + [out]).strip().splitlines()]
        summary = objs[-1]["summary"]
        results = objs[:-1]
        self.assertEqual(summary["reopened"], 1)
        self.assertEqual(summary["updates"], 120)
        self.assertEqual(results[-1]["sequence"], 120)
        self.assertEqual(sorted({r["sequence"] for r in results}), list(range(1, 121)))
        frames = {}
        for r in results:  # 4 frames, cycled: the same frame gives the same pairs
            pairs = [{k: v for k, v in p.items() if k != "compute_time_us"} for p in r["pairs"]]
            frames.setdefault((r["sequence"] - 1) % 4, []).append(pairs)
        self.assertEqual(len(frames), 4)
        for k, v in frames.items():
            self.assertTrue(all(p == v[0] for p in v), "frame %d differs across the break" % k)

    # -- export --
    def test_export_vtk_and_ply(self):
        vtk = os.path.join(self.tmp, "s.vtk")
        ply = os.path.join(self.tmp, "s.ply")
        out = self.ok("export", SCENE, "--pair", "ball,floor", "-o", vtk)
        m = re.match(r"wrote \S+: (\d+) vertices, (\d+) faces", out)
        nv, nf = int(m.group(1)), int(m.group(2))
        with open(vtk) as f:
            text = f.read().split("\n")
        self.assertEqual(text[0], "# vtk DataFile Version 3.0")
        self.assertEqual(text[3], "DATASET POLYDATA")
        self.assertEqual(text[4], "POINTS %d double" % nv)
        self.assertTrue(text[5 + nv].startswith("POLYGONS %d " % nf))
        i = text.index("POINT_DATA %d" % nv)
        self.assertEqual(text[i + 1], "SCALARS pressure double 1")
        pressures = [float(x) for x in text[i + 3:i + 3 + nv]]
        self.assertTrue(all(0 <= p <= 1e5 * (1 + 1e-9) for p in pressures))
        self.assertGreater(max(pressures), 0)
        j = json.loads(self.ok("export", SCENE, "--pair", "1,2", "--format", "ply", "-o", ply, "--json"))
        self.assertEqual((j["vertices"], j["faces"]), (nv, nf))
        with open(ply) as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[0], "ply")
        self.assertIn("element vertex %d" % nv, lines)
        self.assertIn("property double pressure", lines)
        self.assertIn("element face %d" % nf, lines)
        end = lines.index("end_header")
        v0 = [float(x) for x in lines[end + 1].split()]
        self.assertEqual(len(v0), 4)
        face = [int(x) for x in lines[end + 1 + nv].split()]
        self.assertEqual(face[0], len(face) - 1)

    def test_export_no_contact_exit_5(self):
        apart = json.loads(json.dumps(SIMPLE))
        apart["bodies"][0]["position"] = [0, 0, 1]
        out_path = os.path.join(self.tmp, "none.vtk")
        rc, _, err = self.run_ctl("export", "-", "--pair", "ball,floor", "-o", out_path, stdin=json.dumps(apart))
        self.assertEqual(rc, 5)
        self.assertFalse(os.path.exists(out_path))
        rc, _, err = self.run_ctl("export", SCENE, "--pair", "ball,nobody", "-o", out_path)
        self.assertEqual(rc, 4)

    # -- stats --
    def test_stats(self):
        out = self.ok("stats")
        self.assertRegex(out, r"connections +\d+ open, \d+ total")
        self.assertRegex(out, r"cache +\d+ entries")
        j = json.loads(self.ok("stats", "--json"))
        self.assertGreaterEqual(j["requests"], 1)
        self.assertEqual(len(j["worker_utilisation"]), 2)


if __name__ == "__main__":
    unittest.main()
