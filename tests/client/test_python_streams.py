"""The Python client's streams, threads and arrays against the real contactd:
two streams on one client never cross, latest() after a burst returns the
newest, a timeout followed by result() never hands out an older sequence
as new, 8 threads sharing one client for 10 000 queries are all answered
correctly, per-call timeouts, and the numpy API's results for 100 bodies
equal the tuple API's to the bit."""
import dataclasses
import math
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contactd_fixture import Daemon  # noqa: E402

import contactd_client as cc  # noqa: E402
from contactd_client import Body, Client, ContactdError  # noqa: E402

R, E = 0.05, 1e5


class StreamsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon(workers=2)

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def setUp(self):
        self.c = Client(self.d.tcp_addr, timeout=30)
        self.ball = self.c.register_sphere(R, modulus=E, hint=R / 4)
        self.floor = self.c.register_half_space(rigid=True)

    def tearDown(self):
        self.c.close()

    def bodies(self, h=0.045):
        return [Body(1, self.ball, position=(0, 0, h)), Body(2, self.floor)]

    def test_two_streams_never_cross(self):
        a = self.c.stream(self.bodies(0.045), pairs=[(1, 2)])
        b = self.c.stream(self.bodies(0.040), pairs=[(1, 2)])
        for k in range(1, 51):
            a.update({1: {"position": (0, 0, 0.045)}})
            b.update({1: {"position": (0, 0, 0.040)}})
        fa = fb = None
        # read b's first: a's results, read from the socket meanwhile, wait in a's queue
        for k in range(1, 51):
            r = b.result()
            self.assertEqual((r.stream_id, r.sequence), (b.id, k))
            fb = fb or r.pairs[0].force_a[2]
            self.assertEqual(r.pairs[0].force_a[2], fb)
        for k in range(1, 51):
            r = a.result()
            self.assertEqual((r.stream_id, r.sequence), (a.id, k))
            fa = fa or r.pairs[0].force_a[2]
            self.assertEqual(r.pairs[0].force_a[2], fa)
        self.assertLess(fa, fb, "deeper ball, larger force: the results are each stream's own")
        with self.assertRaises(ContactdError) as e:
            a.result(timeout=0.05)
        self.assertEqual(e.exception.code_name, "DEADLINE_EXCEEDED")
        a.close()
        b.close()

    def test_latest_after_a_burst_returns_the_newest(self):
        s = self.c.stream(self.bodies(), pairs=[(1, 2)])
        for _ in range(30):
            s.update({1: {"position": (0, 0, 0.045)}})
        self.c.stats()  # its reply comes after the 30 results: all are queued
        r = s.latest(timeout=0)
        self.assertEqual(r.sequence, 30)
        self.assertEqual(r.skipped, 29)
        self.assertFalse(r.stale)
        self.assertEqual(r.queued, 0)
        with self.assertRaises(ContactdError):
            s.result(timeout=0.05)  # nothing older comes back
        s.close()

    def test_timeout_then_result_never_returns_an_older_sequence_as_new(self):
        s = self.c.stream(self.bodies(), pairs=[(1, 2)])
        s.update({1: {"position": (0, 0, 0.045)}})
        try:
            r0 = s.result(timeout=0)  # most likely times out: the result is on its way
            self.assertEqual(r0.sequence, 1)
        except ContactdError as e:
            self.assertEqual(e.code_name, "DEADLINE_EXCEEDED")
        s.update({1: {"position": (0, 0, 0.044)}})
        seen = []
        while not seen or seen[-1].sequence < 2:
            seen.append(s.result())
        seqs = [r.sequence for r in seen]
        self.assertEqual(seqs, sorted(set(seqs)), "strictly increasing")
        for r in seen:
            self.assertEqual(r.stale, r.sequence < 2, "a result older than the last update says so")
        # latest() after both: nothing older than what was handed out
        s.update({1: {"position": (0, 0, 0.043)}})
        s.update({1: {"position": (0, 0, 0.042)}})
        self.c.stats()
        r = s.latest()
        self.assertEqual((r.sequence, r.stale), (4, False))
        s.close()

    def test_errors_name_their_update_and_stay_in_their_stream(self):
        a = self.c.stream(self.bodies(), pairs=[(1, 2)])
        b = self.c.stream(self.bodies(), pairs=[(1, 2)])
        a.update({1: {"position": (0, 0, 0.045)}})
        a.update({1: {"position": (0, 0, math.nan)}})  # the server refuses it
        b.update({1: {"position": (0, 0, 0.045)}})
        self.assertEqual(b.result().sequence, 1)
        self.assertEqual(a.result().sequence, 1)
        with self.assertRaises(ContactdError) as e:
            a.result()
        self.assertEqual((e.exception.stream_id, e.exception.sequence, e.exception.code_name),
                         (a.id, 2, "INVALID_ARGUMENT"))
        a.close()
        b.close()

    def test_per_call_timeouts(self):
        with self.assertRaises(ContactdError) as e:
            self.c.query(self.bodies(), pairs=[(1, 2)], timeout=0)
        self.assertEqual(e.exception.code_name, "DEADLINE_EXCEEDED")
        self.assertEqual(len(self.c.query(self.bodies(), pairs=[(1, 2)], timeout=math.inf).pairs), 1)
        with self.assertRaises(ContactdError) as e:
            self.c.stats(timeout=-1)
        self.assertEqual(e.exception.field, "timeout")
        self.assertEqual(self.c.hello(timeout=None).protocol_version, 1)  # None: the client's timeout

    def test_eight_threads_share_one_client(self):
        heights = [0.040 + 0.0005 * k for k in range(8)]
        want = [self.c.query(self.bodies(h), pairs=[(1, 2)]).pairs[0].force_a for h in heights]
        n, errors = 10000, []
        done = [0] * 8

        def run(t):
            try:
                for i in range(n // 8):
                    h = heights[(t + i) % 8]
                    got = self.c.query(self.bodies(h), pairs=[(1, 2)]).pairs[0].force_a
                    if got != want[(t + i) % 8]:
                        errors.append((t, i, got))
                        return
                    done[t] += 1
            except Exception as e:  # reported below
                errors.append((t, repr(e)))
        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        dt = time.monotonic() - t0
        self.assertEqual(errors, [])
        self.assertEqual(sum(done), n)
        print("8 threads, one client: %d queries in %.2f s (%.0f/s)" % (n, dt, n / dt), file=sys.stderr)

    def test_numpy_arrays_equal_the_tuple_api_to_the_bit(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy not installed")
        n = 100
        rng = np.random.default_rng(7)
        ids = np.arange(1, n + 1)
        xy = np.stack([np.arange(n) % 10 * 0.2, np.arange(n) // 10 * 0.2], axis=1)
        z = 0.045 + rng.uniform(-0.004, 0.004, n)
        q = rng.normal(size=(n, 4)) * 0.05 + np.array([1.0, 0, 0, 0])
        q /= np.linalg.norm(q, axis=1)[:, None]
        poses = np.column_stack([xy, z, q])
        vel = rng.normal(size=(n, 6)) * 0.01
        bodies = [Body(i, self.ball, position=(float(xy[i - 1, 0]), float(xy[i - 1, 1]), 0.3)) for i in range(1, n + 1)]
        bodies.append(Body(n + 1, self.floor))
        pairs = [(i, n + 1) for i in range(1, n + 1)]
        sa = self.c.stream(bodies, pairs=pairs)
        st = self.c.stream(bodies, pairs=pairs)
        sa.update_arrays(ids, poses, vel)
        st.update({int(i): {"position": tuple(poses[k, :3]), "orientation": tuple(poses[k, 3:]),
                            "angular_velocity": tuple(vel[k, :3]), "linear_velocity": tuple(vel[k, 3:])}
                   for k, i in enumerate(ids)})
        ra, rt = sa.result(), st.result()
        self.assertEqual(len(ra.pairs), n)
        def timeless(ps):
            return [dataclasses.replace(p, compute_time_us=0) for p in ps]
        self.assertEqual(timeless(ra.pairs), timeless(rt.pairs), "the same results, field by field")
        aa = ra.arrays()
        self.assertEqual(aa.force_a.shape, (n, 3))
        self.assertEqual(aa.force_a.tobytes(), np.array([p.force_a for p in rt.pairs]).tobytes(), "bit for bit")
        self.assertEqual(aa.torque_a.tobytes(), np.array([p.torque_a for p in rt.pairs]).tobytes())
        self.assertEqual(aa.centroid.tobytes(), np.array([p.centroid for p in rt.pairs]).tobytes())
        self.assertTrue(all(p.status == cc.ContactStatus.SURFACE for p in rt.pairs))
        # arrays straight from the reply (no PairResult objects): the same bits
        sa.update_arrays(ids, poses, vel)
        rd = sa.result(arrays=True)
        self.assertEqual(rd.pairs, [])
        for k in ("a", "b", "force_a", "torque_a", "force_b", "torque_b", "centroid", "area"):
            self.assertEqual(getattr(rd.arrays(), k).tobytes(), getattr(aa, k).tobytes(), k)
        # wrong shapes and unknown bodies raise at once, naming the argument
        with self.assertRaises(ContactdError) as e:
            sa.update_arrays(ids, poses[:, :6])
        self.assertIn("poses: expected shape (100, 7)", e.exception.message)
        with self.assertRaises(ContactdError) as e:
            sa.update_arrays(ids, None, vel[:50])
        self.assertEqual(e.exception.field, "velocities")
        with self.assertRaises(ContactdError) as e:
            sa.update_arrays(np.array([500]), poses[:1])
        self.assertIn("body 500 is not in stream", e.exception.message)
        sa.close()
        st.close()

    def test_without_numpy_array_methods_raise_and_nothing_else_changes(self):
        code = ("import sys; sys.modules['numpy'] = None\n"
                "import contactd_client as cc\n"
                "try:\n"
                "    cc.stream_update_arrays_request(1, 1, [1], [[0, 0, 0, 1, 0, 0, 0]])\n"
                "    sys.exit('no error')\n"
                "except cc.NumpyMissing as e:\n"
                "    assert 'Stream.update_arrays needs numpy' in str(e), e\n"
                "print('ok')\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "ok"), out.stderr)

    def test_results_do_not_depend_on_numpy(self):
        res = self.c.query(self.bodies(), pairs=[(1, 2)], jacobian=True)
        j = res.pairs[0].jacobian
        self.assertIsInstance(j.d_pose_a, tuple)
        self.assertIsInstance(res.pairs[0].force_a, tuple)
        self.assertIsInstance(res.pairs[0].status, cc.ContactStatus)
        self.assertEqual(res.pairs[0].status, "surface")


if __name__ == "__main__":
    unittest.main()
