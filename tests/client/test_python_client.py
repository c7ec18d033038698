"""The Python client (client/python/contactd_client) against a real contactd:
every request, results as plain objects, errors, streams, TCP and Unix."""
import math
import os
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contactd_fixture import Daemon  # noqa: E402

import contactd_client as cc  # noqa: E402
from contactd_client import Body, Client, ContactdError  # noqa: E402

R, E, H = 0.05, 1e5, 0.045


def sphere_force(r, e, h):
    return 2 * math.pi * e / r * (r * (r * r - h * h) / 2 - (r ** 3 - h ** 3) / 3)


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()

    @classmethod
    def tearDownClass(cls):
        assert cls.d.stop() == 0, "contactd exit status"

    def setUp(self):
        self.c = Client(self.d.tcp_addr, timeout=30)
        self.ball = self.c.register_sphere(R, modulus=E, hint=R / 4).geometry_id
        self.floor = self.c.register_half_space(rigid=True).geometry_id

    def tearDown(self):
        self.c.close()

    def bodies(self, h=H):
        return [Body(1, self.ball, position=(0, 0, h)), Body(2, self.floor)]

    def test_hello_tcp_and_unix(self):
        h = self.c.hello("pytest")
        self.assertEqual(h.protocol_version, 1)
        self.assertGreater(h.limits["max_frame_bytes"], 0)
        self.assertEqual(h.limits["max_inflight_per_conn"], 256, "the configuration's names")
        self.assertEqual(h.units["max_inflight_per_conn"], "requests")
        self.assertIn("streams", h.capabilities)
        self.assertIn("mesh_file:msh", h.capabilities)
        with Client(self.d.unix_addr) as u:
            self.assertEqual(u.hello().server_version, h.server_version)

    def test_connect_errors(self):
        with self.assertRaises(ContactdError) as e:
            Client("unix:" + os.path.join(self.d.dir, "nope.sock"))
        self.assertEqual(e.exception.code_name, "UNAVAILABLE")
        self.assertFalse(e.exception.remote)
        with self.assertRaises(ContactdError) as e:
            Client("no-port-here")
        self.assertEqual(e.exception.code_name, "INVALID_ARGUMENT")

    def test_ensure_registers_only_what_is_missing(self):
        specs = [(None, "sphere", dict(radius=R, modulus=E, hint=R / 4)),
                 (None, "half_space", dict(rigid=True))]
        ids = self.c.ensure(specs)
        self.assertEqual(ids, [self.ball, self.floor])
        hits = self.c.stats()["cache_hits"]
        again = self.c.ensure([(i, sh, kw) for i, (_, sh, kw) in zip(ids, specs)])
        self.assertEqual(again, ids)
        self.assertEqual(self.c.stats()["cache_hits"], hits, "held ids are not registered again")
        foreign = self.c.ensure([("0" * 64, "sphere", dict(radius=R, modulus=E, hint=R / 4))])
        self.assertEqual(foreign, [self.ball], "an id the server lacks is registered again")

    def test_register_same_content_same_id(self):
        r = self.c.register("sphere", radius=R, modulus=E, hint=R / 4)
        self.assertEqual(r.geometry_id, self.ball)
        self.assertTrue(r.already_cached)
        r2 = self.c.register("sphere", radius=R, modulus=2 * E, hint=R / 4)
        self.assertNotEqual(r2.geometry_id, self.ball)
        self.assertFalse(r2.already_cached)
        self.assertGreater(r2.stats["tetrahedra"], 0)
        self.assertAlmostEqual(r2.stats["max_pressure"], 2 * E, delta=1e-6 * E)

    def test_register_all_shapes(self):
        results = [
            self.c.register_box((0.1, 0.2, 0.05), modulus=1e6, hint=0.05),
            self.c.register_cylinder(0.05, 0.02, modulus=1e6, hint=0.02),
            self.c.register_capsule(0.02, 0.1, modulus=1e6, hint=0.01),
            self.c.register_ellipsoid((0.03, 0.02, 0.01), modulus=1e6, hint=0.01),
            self.c.register_half_space(modulus=1e6, slab=0.1),
            self.c.register_mesh(data=b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n",
                                 rigid=True, format="obj"),
        ]
        self.assertTrue(all(isinstance(r, cc.RegisterResult) for r in results), "every register_* alike")
        self.assertEqual(len({r.geometry_id for r in results}), 6)

    def test_register_error(self):
        with self.assertRaises(ContactdError) as e:
            self.c.register_sphere(-1, modulus=E, hint=0.01)
        self.assertEqual(e.exception.code_name, "INVALID_ARGUMENT")
        self.assertTrue(e.exception.remote)
        self.assertIn("radius", e.exception.field)
        self.assertEqual(self.c.hello().protocol_version, 1)  # still usable

    def test_has_and_release(self):
        bogus = "0" * 64
        ball = self.ball
        self.assertEqual(self.c.has([self.ball, bogus]), [bogus])
        self.assertEqual(self.c.release([self.ball]), ([ball], []))
        self.assertEqual(self.c.release([ball]), ([], [ball]))

    def test_query_matches_analytic_force(self):
        res = self.c.query(self.bodies(), pairs=[(1, 2)], detail="patches")
        self.assertEqual(len(res.pairs), 1)
        p = res.pairs[0]
        self.assertEqual(p.status, "surface")
        expect = sphere_force(R, E, H)
        self.assertLess(abs(p.force_a[2] - expect), 0.15 * expect)
        self.assertAlmostEqual(p.force_b[2], -p.force_a[2], delta=1e-9 * expect)
        self.assertEqual(len(p.patches), 1)
        self.assertAlmostEqual(p.patches[0].point[0], 0, delta=1e-9)
        self.assertAlmostEqual(p.total.normal_force_magnitude, p.force_a[2], delta=1e-9 * expect)
        # broad phase, dict bodies
        res = self.c.query([dict(id=1, geometry_id=self.ball, position=(0, 0, H)),
                            dict(id=2, geometry_id=self.floor)])
        self.assertEqual(res.pairs[0].status, "surface")
        # apart
        res = self.c.query(self.bodies(0.3), pairs=[(1, 2)])
        self.assertEqual(res.pairs[0].status, "none")

    def test_query_energy(self):
        res = self.c.query(self.bodies(), pairs=[(1, 2)], detail="patches", energy=True)
        p = res.pairs[0]
        self.assertEqual(p.energy, "exact")
        # pi E (d^3/3 - d^4/(6R)) for the ball pressed d into the floor; the
        # mesh is coarse for so shallow a cap (d = 0.4 hint): 15 %, as the force
        d = R - H
        self.assertLess(abs(p.strain_energy / (math.pi * E * (d ** 3 / 3 - d ** 4 / (6 * R))) - 1), 0.15)
        self.assertEqual(p.total.strain_energy, p.strain_energy)
        self.assertAlmostEqual(p.patches[0].strain_energy, p.strain_energy, delta=1e-12 * p.strain_energy)
        off = self.c.query(self.bodies(), pairs=[(1, 2)]).pairs[0]
        self.assertEqual((off.energy, off.strain_energy), ("unspecified", 0.0))
        self.assertEqual(off.force_a, p.force_a)

    def test_margin_speculative(self):
        ball = self.c.register_sphere(R, modulus=E, hint=0.4 * R, margin=0.2 * R)
        p = self.c.query([dict(id=1, geometry_id=ball, position=(0, 0, 1.1 * R)),
                          dict(id=2, geometry_id=self.floor)], pairs=[(1, 2)]).pairs[0]
        self.assertEqual(p.status, "speculative")
        self.assertEqual(p.force_a, (0.0, 0.0, 0.0))
        self.assertGreater(p.speculative.separation, 0)
        self.assertLess(p.speculative.separation, 0.2 * R)
        self.assertGreater(p.speculative.stiffness, 0)

    def test_query_reduce(self):
        p = self.c.query(self.bodies(), pairs=[(1, 2)], reduce=8).pairs[0]
        self.assertTrue(1 <= len(p.reduced_contacts) <= 8)
        for k in range(3):
            self.assertAlmostEqual(sum(q.force[k] for q in p.reduced_contacts), p.force_a[k],
                                   delta=1e-9 * abs(p.force_a[2]))
        q = p.reduced_contacts[0]
        self.assertEqual(q.patch, 0)
        self.assertLess(q.separation, 0)
        self.assertGreater(q.stiffness, 0)
        self.assertEqual(self.c.query(self.bodies(), pairs=[(1, 2)]).pairs[0].reduced_contacts, [])

    def test_query_jacobian(self):
        res = self.c.query(self.bodies(), pairs=[(1, 2)], jacobian=True)
        j = res.pairs[0].jacobian
        self.assertIsNotNone(j)
        self.assertEqual(j.unavailable, "")
        rows = [list(r) for r in j.d_pose_a]
        self.assertEqual((len(rows), len(rows[0])), (6, 6))
        # the normal stiffness against central differences of the served force
        h = 1e-6
        up = self.c.query(self.bodies(H + h), pairs=[(1, 2)]).pairs[0].force_a[2]
        down = self.c.query(self.bodies(H - h), pairs=[(1, 2)]).pairs[0].force_a[2]
        kz = rows[5][5]
        self.assertLess(kz, 0)
        self.assertLess(abs(kz - (up - down) / (2 * h)), 1e-4 * abs(kz))
        self.assertAlmostEqual(list(j.d_pose_b[5])[5], -kz, delta=1e-9 * abs(kz))
        for m in (j.d_pose_b, j.d_velocity_a, j.d_velocity_b):
            self.assertEqual(len(m), 6)
        self.assertIsNone(self.c.query(self.bodies(), pairs=[(1, 2)]).pairs[0].jacobian)

    def test_heightfield_flat_terrain_equals_half_space(self):
        # a flat 8 x 8 terrain under the ball: the same force as the rigid half space
        terrain = self.c.register_heightfield([[0.0] * 8 for _ in range(8)], 1.0, origin=(-3.5, -3.5, 0.0))
        self.assertEqual(self.c.register_heightfield([0.0] * 64, 1.0, nx=8, ny=8, origin=(-3.5, -3.5, 0)).geometry_id,
                         terrain.geometry_id)
        ref = self.c.query(self.bodies(), pairs=[(1, 2)]).pairs[0]
        res = self.c.query([Body(1, self.ball, position=(0, 0, H)), Body(2, terrain)], pairs=[(1, 2)])
        p = res.pairs[0]
        self.assertEqual(p.status, "surface")
        self.assertAlmostEqual(p.force_a[2], ref.force_a[2], delta=1e-6 * ref.force_a[2])
        # broad phase: one large body; nothing far above it
        res = self.c.query([Body(1, self.ball, position=(0, 0, H)), Body(2, terrain)])
        self.assertEqual(len(res.pairs), 1)
        res = self.c.query([Body(1, self.ball, position=(0, 0, 50)), Body(2, terrain)])
        self.assertEqual(len(res.pairs), 0)
        with self.assertRaises(ContactdError) as e:
            self.c.register_heightfield([[0.0] * 3 for _ in range(3)], 1.0)
        self.assertEqual(e.exception.field, "registerGeometry.heightField.nx")

    def test_query_surface(self):
        res = self.c.query(self.bodies(), pairs=[(1, 2)], detail="surface", point_contacts=True)
        s = res.pairs[0].surface
        self.assertIsNotNone(s)
        self.assertEqual(len(s.vertices), len(s.pressure))
        self.assertGreater(len(s.faces), 10)
        self.assertAlmostEqual(sum(s.areas), res.pairs[0].area, delta=1e-9)
        self.assertTrue(all(0 <= p <= E for p in s.pressure))
        pcs = res.pairs[0].point_contacts
        self.assertGreater(len(pcs), 0)
        self.assertLessEqual(len(pcs), len(s.faces))
        self.assertTrue(all(pc.phi0 <= 0 and pc.stiffness > 0 for pc in pcs))
        try:
            import numpy  # noqa: F401
        except ImportError:
            return
        v, p = s.as_numpy()
        self.assertEqual(v.shape, (len(s.vertices), 3))

    def test_query_errors(self):
        with self.assertRaises(ContactdError) as e:
            self.c.query([Body(1, self.ball), Body(2, "f" * 64)], pairs=[(1, 2)])
        self.assertEqual(e.exception.code_name, "NOT_FOUND")
        with self.assertRaises(ContactdError) as e:
            self.c.query([Body(1, self.ball, position=(math.nan, 0, 0)), Body(2, self.floor)], pairs=[(1, 2)])
        self.assertEqual(e.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("bodies[0]", e.exception.field)

    def test_request_builders_pipelined_on_a_raw_socket(self):
        """The public request builders make Envelopes a caller numbers and
        sends itself: four at once, answered in order, the query's force
        the same as through Client.query."""
        from contactd_client import contactd_pb2 as pb  # generated into the package at install

        reqs = [cc.hello_request("raw"), cc.register_request("sphere", radius=R, modulus=E, hint=R / 4),
                cc.query_request(self.bodies(), [(1, 2)], detail="patches"), cc.has_request([self.ball, "0" * 64])]
        out = b""
        for rid, env in enumerate(reqs, start=100):
            env.request_id = rid
            body = env.SerializeToString()
            out += cc.encode_varint(len(body)) + body
        host, port = self.d.tcp_addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(out)
            buf, replies = b"", []
            while len(replies) < len(reqs):
                got = cc.decode_varint(buf)
                if got and len(buf) >= got[1] + got[0]:
                    n, k = got
                    replies.append(pb.Envelope.FromString(buf[k:k + n]))
                    buf = buf[k + n:]
                    continue
                chunk = s.recv(65536)
                self.assertTrue(chunk, "the server closed the connection")
                buf += chunk
        self.assertEqual([r.request_id for r in replies], [100, 101, 102, 103])
        self.assertEqual([r.WhichOneof("msg") for r in replies],
                         ["hello_reply", "register_reply", "contact_reply", "has_geometry_reply"])
        self.assertEqual(replies[1].register_reply.geometry_id, self.ball)
        want = self.c.query(self.bodies(), pairs=[(1, 2)], detail="patches").pairs[0].force_a[2]
        self.assertEqual(replies[2].contact_reply.results[0].wrench_a.force.z, want)
        self.assertEqual(list(replies[3].has_geometry_reply.missing), ["0" * 64])

    def test_stats(self):
        s = self.c.stats()
        self.assertGreaterEqual(s["requests"], 2)
        self.assertGreaterEqual(s["cache_entries"], 2)
        self.assertEqual(len(s["worker_utilisation"]), 2)
        self.assertTrue(s["latency"])

    def test_stream_in_order(self):
        with self.c.stream(self.bodies(), pairs=[(1, 2)]) as st:
            for k in range(1, 11):
                st.update({1: {"position": (0, 0, 0.0495 - 0.0005 * k)}})
            prev = 0.0
            for k in range(1, 11):
                r = st.result()
                self.assertEqual(r.sequence, k)
                fz = r.pairs[0].force_a[2]
                self.assertGreater(fz, prev)
                prev = fz
            summary = st.close()
        self.assertEqual(summary["updates"], 10)
        self.assertEqual(summary["results"], 10)

    def test_stream_results_survive_blocking_calls(self):
        st = self.c.stream(self.bodies(), pairs=[(1, 2)])
        for k in range(5):
            st.update({1: {"position": (0, 0, H)}})
        self.c.stats()  # its reply comes after the five results
        self.assertEqual([st.result(0).sequence for _ in range(5)], [1, 2, 3, 4, 5])
        with self.assertRaises(ContactdError) as e:
            st.result(0.05)
        self.assertEqual(e.exception.code_name, "DEADLINE_EXCEEDED")
        st.close()

    def test_stream_errors(self):
        st = self.c.stream(self.bodies(), pairs=[(1, 2)])
        st.update({1: {"position": (0, 0, H)}}, sequence=3)
        # a repeated sequence, sent past the client's own check: the server's error names the update
        env = cc.stream_update_request(st.id, 3, {1: {"position": (0, 0, H)}})
        self.c._send(env)
        self.assertEqual(st.result().sequence, 3)
        with self.assertRaises(ContactdError) as e:
            st.result()
        self.assertEqual(e.exception.code_name, "INVALID_ARGUMENT")
        self.assertEqual((e.exception.stream_id, e.exception.sequence), (st.id, 3), "the error names its update")
        # bad input raises at once, naming what is wrong, and sends nothing
        with self.assertRaises(ContactdError) as e:
            st.update({9: {"position": (0, 0, H)}})
        self.assertIn("body 9", e.exception.message)
        with self.assertRaises(ContactdError) as e:
            st.update({1: {"positon": (0, 0, H)}})
        self.assertIn("'positon'", e.exception.message)
        with self.assertRaises(ContactdError) as e:
            st.update({1: {"position": (0, H)}})
        self.assertIn("position: expected 3 numbers", e.exception.message)
        with self.assertRaises(ContactdError) as e:
            st.update({1: {"position": (0, 0, H)}}, sequence=2)
        self.assertIn("not greater", e.exception.message)
        st.close()
        with self.assertRaises(ContactdError) as e:
            st.update({1: {"position": (0, 0, H)}})
        self.assertEqual(e.exception.code_name, "FAILED_PRECONDITION")

    def test_stream_latest_only(self):
        st = self.c.stream(self.bodies(), pairs=[(1, 2)], latest_only=True)
        n = 40
        for _ in range(n):
            st.update({1: {"position": (0, 0, H)}})
        got = dropped = last = 0
        while last < n:
            r = st.result()
            self.assertGreater(r.sequence, last)
            last = r.sequence
            got += 1
            dropped += r.dropped_updates
        self.assertEqual(got + dropped, n)
        self.assertEqual(st.close()["dropped_updates"], dropped)

    def test_same_numbers_as_c_path(self):
        # the JSON contactctl output (C library) equals the Python result
        import json
        import subprocess
        scene = {
            "geometries": {"ball": {"shape": "sphere", "radius": R, "modulus": E, "hint": R / 4},
                           "floor": {"shape": "half-space", "rigid": True}},
            "bodies": [{"name": "ball", "geometry": "ball", "position": [0, 0, H]},
                       {"name": "floor", "geometry": "floor"}],
            "pairs": [["ball", "floor"]],
        }
        out = subprocess.run([os.environ["CONTACTCTL"], "--addr", self.d.tcp_addr, "query", "-", "--json"],
                             input=json.dumps(scene), capture_output=True, text=True, check=True).stdout
        c_force = json.loads(out)["pairs"][0]["wrench_a"]["force"]
        py = self.c.query(self.bodies(), pairs=[(1, 2)]).pairs[0].force_a
        for i in range(3):
            self.assertEqual(c_force[i], py[i])


if __name__ == "__main__":
    unittest.main()
