"""The Python client survives the server: real contactd processes killed
with SIGKILL mid-stream and started again (on the same port, with a dir:
store or none), three replicas on one redis-server with the client's replica
killed, and 200 clients through a restart. Every result after the break must
equal the one before it for the same input."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contactd_fixture import Daemon  # noqa: E402

from contactd_client import (Backoff, Body, Client, ConnectionLost, ContactdError,  # noqa: E402
                             GeometryReregisteredEvent, ReconnectedEvent, Registrations, StreamReopened,
                             StreamReopenedEvent, parse_addresses, register_request)

R, E = 0.05, 1e5
HEIGHTS = [0.046, 0.045, 0.044, 0.043, 0.042]
FAST = Backoff(initial=0.01, cap=0.25, give_up_after=20.0)
REDIS_BIN = "/usr/bin/redis-server"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """redis-server on a free port, its files in a temporary directory."""

    def __init__(self):
        if not os.access(REDIS_BIN, os.X_OK):
            raise RuntimeError("%s is missing (deploy/deps.sh installs redis-server)" % REDIS_BIN)
        self.dir = tempfile.mkdtemp(prefix="cc-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen([REDIS_BIN, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                                      "--save", "", "--appendonly", "no", "--logfile",
                                      os.path.join(self.dir, "redis.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 10:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not start on port %d" % self.port)

    def holds(self, *ids):
        """Whether Redis holds the store's records of these geometry ids."""
        cmd = "EXISTS %s\r\n" % " ".join("contactd:v1:spec:" + g for g in ids)
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
            s.sendall(cmd.encode())
            return s.recv(64).strip() == b":%d" % len(ids)

    @property
    def uri(self):
        return "redis://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def force(res):
    return tuple(res.pairs[0].force_a) + tuple(res.pairs[0].torque_a) + (res.pairs[0].area,)


class ReconnectTest(unittest.TestCase):
    def setUp(self):
        self.cleanup = []
        self.events = []

    def tearDown(self):
        for f in reversed(self.cleanup):
            f()

    def daemon(self, **kw):
        d = Daemon(**kw)
        self.cleanup.append(d.stop)
        return d

    def client(self, addr, **kw):
        kw.setdefault("reconnect", FAST)
        c = Client(addr, timeout=20, **kw)
        self.cleanup.append(c.close)
        return c

    def geometry(self, c):
        return c.register_sphere(R, modulus=E, hint=R / 4), c.register_half_space(rigid=True)

    def run_stream(self, s, heights):
        """Each height's result; a ConnectionLost or StreamReopened on the
        way sends the update again (what a caller does)."""
        out, breaks, i = [], [], 0
        while i < len(heights):
            try:
                s.update({1: {"position": (0, 0, heights[i])}})
                r = s.result()
            except (ConnectionLost, StreamReopened) as e:
                self.assertTrue(e.retryable, e)
                breaks.append(type(e).__name__)
                continue
            self.assertEqual(r.stream_id, s.id)
            out.append(force(r))
            i += 1
        return out, breaks

    def kill_mid_stream(self, store, store_dir=None):
        d = self.daemon(store=store)
        c = self.client(d.tcp_addr, on_event=self.events.append)
        ball, floor = self.geometry(c)
        t0 = time.monotonic()  # the store is written after the reply: wait for both records
        while store_dir and not store_dir(ball, floor) and time.monotonic() - t0 < 10:
            time.sleep(0.01)
        reopened = []
        s = c.stream([Body(1, ball), Body(2, floor)], pairs=[(1, 2)], on_reopen=reopened.append)
        before, breaks = self.run_stream(s, HEIGHTS)
        self.assertEqual(breaks, [])
        s.update({1: {"position": (0, 0, 0.041)}})  # in flight at the break
        d.kill()
        d.start()
        self.assertEqual(d.tcp_addr, "127.0.0.1:%d" % d.port, "restarted on the same port")
        got = []  # its result may have come before the kill
        with self.assertRaises(ConnectionLost) as e:
            while True:
                got.append(s.result().sequence)
        self.assertIn(got, ([], [len(HEIGHTS) + 1]))
        self.assertTrue(e.exception.retryable)
        self.assertEqual(e.exception.code_name, "UNAVAILABLE")
        after, breaks = self.run_stream(s, HEIGHTS)
        self.assertEqual(after, before, "results after the restart equal those before it")
        self.assertEqual(breaks, [])
        self.assertEqual(len(reopened), 1)
        ev = reopened[0]
        self.assertEqual((ev.stream, ev.new_id, ev.last_update_sequence, ev.last_result_sequence, ev.error),
                         (s, s.id, len(HEIGHTS) + 1, len(HEIGHTS) + len(got), None))
        self.assertEqual(s.reopens, 1)
        kinds = [type(x) for x in self.events]
        self.assertEqual(kinds.count(ReconnectedEvent), 1)
        self.assertEqual(self.events[0].generation, 2)
        self.assertIn(ev, self.events)
        s.close()
        return ball, floor, [x for x in self.events if isinstance(x, GeometryReregisteredEvent)]

    def test_kill9_mid_stream_dir_store(self):
        """The store held the geometry: nothing is registered again."""
        store = tempfile.mkdtemp(prefix="cc-store-")
        self.cleanup.append(lambda: shutil.rmtree(store, ignore_errors=True))
        def holds(*ids):
            return all(os.path.exists(os.path.join(store, "contactd:v1:spec:" + g)) for g in ids)
        ball, floor, rereg = self.kill_mid_stream("dir:" + store, holds)
        self.assertEqual(sorted(os.listdir(store)), sorted("contactd:v1:spec:" + g for g in (ball, floor)))
        self.assertEqual(rereg, [])

    def test_kill9_mid_stream_without_store(self):
        """The new server has no geometry: the client registers it again."""
        ball, floor, rereg = self.kill_mid_stream(None)
        self.assertEqual(len(rereg), 1)
        self.assertEqual(sorted(rereg[0].geometry_ids), sorted([ball, floor]))

    def test_reopen_untold_raises_once_and_restores_last_states(self):
        """No callback: StreamReopened, once, before anything is sent on the
        reopened stream; bodies not updated since keep their last state."""
        d = self.daemon()
        c = self.client(d.unix_addr)
        ball, floor = self.geometry(c)
        s = c.stream([Body(1, ball, position=(0, 0, 0.3)), Body(2, floor)], pairs=[(1, 2)])
        s.update({1: {"position": (0, 0, 0.044)}})
        ref = force(s.result())
        d.kill()
        d.start()
        with self.assertRaises(ConnectionLost):
            c.stats()  # the break seen by a blocking call: the stream is reopened on the next one
        with self.assertRaises(StreamReopened) as e:
            s.update({2: {"position": (0, 0, 0)}})
        self.assertEqual(e.exception.event.last_result_sequence, 1)
        self.assertEqual(e.exception.event.new_id, s.id)
        s.update({2: {"position": (0, 0, 0)}})  # body 1 stays at 0.044, not at its opening 0.3
        self.assertEqual(force(s.result()), ref)

    def test_retry_idempotent_and_unknown_geometry(self):
        d = self.daemon()
        c = self.client(d.tcp_addr, retry_idempotent=True)
        ball, floor = self.geometry(c)
        q = [Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)]
        ref = force(c.query(q, pairs=[(1, 2)]))
        d.kill()
        d.start()
        self.assertEqual(force(c.query(q, pairs=[(1, 2)])), ref, "retried once, registered again")
        with self.assertRaises(ContactdError) as e:  # never registered by this client: not recovered
            c.query([Body(1, "0" * 64), Body(2, floor)], pairs=[(1, 2)])
        self.assertEqual((e.exception.code_name, e.exception.field), ("NOT_FOUND", "contactQuery.bodies[0].geometryId"))
        c.release([ball])
        d.kill()
        d.start()
        with self.assertRaises(ContactdError) as e:  # released: no longer kept
            c.query(q, pairs=[(1, 2)])
        self.assertEqual(e.exception.code_name, "NOT_FOUND")

    def test_mesh_registered_again_from_its_file(self):
        """A mesh given by path is kept as the path and read again; a file
        changed meanwhile gives another id: the NOT_FOUND says so."""
        d = self.daemon()
        c = self.client(d.tcp_addr, on_event=self.events.append)
        ball = c.register_sphere(R, modulus=E, hint=R / 4)
        obj = os.path.join(d.dir, "tet.obj")
        with open(obj, "w") as f:
            f.write("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
        tet = c.register_mesh(path=obj, rigid=True, format="obj")
        self.assertLess(c.registrations.bytes, 1000, "the path is kept, not the mesh")
        q = [Body(1, ball, position=(0.2, 0.2, -0.045)), Body(2, tet)]
        ref = force(c.query(q, pairs=[(1, 2)]))
        self.assertGreater(abs(ref[2]), 0)
        d.kill()
        d.start()
        with self.assertRaises(ConnectionLost):
            c.query(q, pairs=[(1, 2)])
        self.assertEqual(force(c.query(q, pairs=[(1, 2)])), ref)
        self.assertEqual(sorted(self.events[-1].geometry_ids), sorted([ball, tet]))
        with open(obj, "w") as f:
            f.write("v 0 0 0\nv 2 0 0\nv 0 2 0\nv 0 0 2\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
        d.kill()
        d.start()
        with self.assertRaises(ConnectionLost):
            c.query(q, pairs=[(1, 2)])
        with self.assertRaises(ContactdError) as e:
            c.query(q, pairs=[(1, 2)])
        self.assertEqual((e.exception.code_name, e.exception.field), ("NOT_FOUND", "contactQuery.bodies[1].geometryId"))
        self.assertIn("the source changed", e.exception.message)

    def test_no_reconnect_and_closed(self):
        d = self.daemon()
        c = self.client(d.tcp_addr, reconnect=False)
        c.hello()
        d.kill()
        d.start()
        for _ in range(2):
            with self.assertRaises(ConnectionLost) as e:
                c.hello()
            self.assertFalse(e.exception.retryable)
        c2 = self.client(d.tcp_addr)
        c2.close()
        with self.assertRaises(ConnectionLost) as e:
            c2.hello()
        self.assertFalse(e.exception.retryable)

    def test_silent_listener_is_passed_over(self):
        """A listener that accepts and never answers (a hung server) fails
        the Hello handshake within connect_timeout: the next address is
        tried."""
        a, b = self.daemon(), self.daemon()
        hung = socket.socket()
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # the kernel completes connections; nothing reads them
        self.cleanup.append(hung.close)
        silent = "127.0.0.1:%d" % hung.getsockname()[1]
        c = self.client([a.tcp_addr, silent, b.tcp_addr], connect_timeout=0.3, on_event=self.events.append)
        self.assertEqual(c.addr, a.tcp_addr)
        c.hello()
        a.kill()
        a.start()  # back, but the client moves on from the address that broke
        with self.assertRaises(ConnectionLost):
            c.hello()
        t0 = time.monotonic()
        c.hello()
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(c.addr, b.tcp_addr)
        ev = self.events[-1]
        self.assertEqual((type(ev), ev.previous_address, ev.address, ev.rounds),
                         (ReconnectedEvent, a.tcp_addr, b.tcp_addr, 2))

    def test_reply_over_the_cap_drops_the_connection(self):
        """A reply the client refuses leaves it out of step: the next call
        is on a new connection."""
        d = self.daemon()
        c = self.client(d.tcp_addr, max_frame=4096, on_event=self.events.append)
        ball, floor = self.geometry(c)
        with self.assertRaises(ContactdError) as e:
            c.query([Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)], pairs=[(1, 2)], detail="surface")
        self.assertEqual(e.exception.code_name, "RESOURCE_EXHAUSTED")
        self.assertEqual(c.generation, 1)
        c.hello()
        self.assertEqual(c.generation, 2)
        self.assertEqual([type(x) for x in self.events], [ReconnectedEvent])

    def test_registrations_are_bounded(self):
        """Least recently used dropped first; one over the bound not kept."""
        envs = {k: register_request("sphere", radius=r, modulus=E, hint=r / 4)
                for k, r in (("a", 0.01), ("b", 0.02), ("c", 0.03))}
        size = len(envs["a"].SerializeToString())
        kept = Registrations(max_bytes=2 * size + 1)
        kept.add("a", envs["a"])
        kept.add("b", envs["b"])
        kept.touch(["a"])
        kept.add("c", envs["c"])
        self.assertEqual([k in kept for k in "abc"], [True, False, True])
        self.assertEqual(kept.envelope("c"), envs["c"])
        self.assertIsNone(kept.envelope("b"))
        self.assertEqual(kept.bytes, 2 * size)
        Registrations(max_bytes=size - 1).add("a", envs["a"])
        none = Registrations(max_bytes=0)
        none.add("a", envs["a"])
        self.assertEqual((len(none), none.bytes), (0, 0))

    def test_addresses(self):
        self.assertEqual(parse_addresses(" a:1, unix:/x ,b:2"), ["a:1", "unix:/x", "b:2"])
        self.assertEqual(parse_addresses(["a:1", "[::1]:7"]), ["a:1", "[::1]:7"])
        for bad in ("", ",", "a:1,nope", "a:99999", "unix:"):
            with self.assertRaises(ContactdError) as e:
                parse_addresses(bad)
            self.assertEqual(e.exception.code_name, "INVALID_ARGUMENT")
        d = self.daemon()
        dead = "127.0.0.1:%d" % free_port()
        c = self.client([dead, d.tcp_addr])
        self.assertEqual(c.addr, d.tcp_addr, "the dead first address is passed over")
        with self.assertRaises(ContactdError) as e:
            Client([dead, "unix:" + os.path.join(d.dir, "none.sock")])
        self.assertIn(dead, e.exception.message)
        self.assertIn("none.sock", e.exception.message)
        delays = [FAST.delay(n) for n in range(12) for _ in range(50)]
        self.assertTrue(all(0 <= x <= FAST.cap for x in delays))
        self.assertGreater(max(delays), FAST.cap / 2, "the cap is reached")

    def test_replica_killed_continues_on_another(self):
        """Three replicas on one redis-server, listed in CONTACTD_ADDR."""
        r = Redis()
        self.cleanup.append(r.stop)
        ds = [self.daemon(store=r.uri) for _ in range(3)]
        os.environ["CONTACTD_ADDR"] = ",".join(d.tcp_addr for d in ds)
        self.cleanup.append(lambda: os.environ.pop("CONTACTD_ADDR"))
        c = self.client(None, on_event=self.events.append, retry_idempotent=True)
        self.assertEqual(c.addresses, [d.tcp_addr for d in ds])
        ball, floor = self.geometry(c)
        q = [Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)]
        ref = force(c.query(q, pairs=[(1, 2)]))
        t0 = time.monotonic()  # the store is written after the reply
        while not r.holds(ball, floor) and time.monotonic() - t0 < 10:
            time.sleep(0.01)
        s = c.stream([Body(1, ball), Body(2, floor)], pairs=[(1, 2)], on_reopen=lambda ev: None)
        before, _ = self.run_stream(s, HEIGHTS)
        mine = [d for d in ds if d.tcp_addr == c.addr][0]
        mine.kill()
        self.assertEqual(force(c.query(q, pairs=[(1, 2)])), ref)
        self.assertNotEqual(c.addr, mine.tcp_addr)
        after, _ = self.run_stream(s, HEIGHTS)
        self.assertEqual(after, before)
        self.assertEqual([x for x in self.events if isinstance(x, GeometryReregisteredEvent)], [],
                         "the other replica read the geometry from Redis")
        self.assertEqual([type(x) for x in self.events], [ReconnectedEvent, StreamReopenedEvent])
        mine.start()  # for tearDown's clean stop

    def test_200_clients_through_a_restart(self):
        d = self.daemon(workers=2)
        n, stop = 200, threading.Event()
        ready = threading.Barrier(n + 1)
        failures, lost, done = [], [], []

        def run(k):
            try:
                c = Client(d.tcp_addr, timeout=20, reconnect=FAST, retry_idempotent=k % 2 == 0)
                q = [Body(1, c.register_sphere(R, modulus=E, hint=R / 4), position=(0, 0, 0.049 - k * 1e-5)),
                     Body(2, c.register_half_space(rigid=True))]
                ref = force(c.query(q, pairs=[(1, 2)]))
            except Exception as e:  # noqa: BLE001 - reported by the main thread
                failures.append("client %d before the restart: %r" % (k, e))
                ready.abort()
                return
            ready.wait()
            after = 0
            try:
                while after < 3 or not stop.is_set():
                    try:
                        got = force(c.query(q, pairs=[(1, 2)]))
                    except ConnectionLost as e:
                        if not e.retryable:
                            raise
                        lost.append(k)
                        continue
                    if got != ref:
                        failures.append("client %d: %r, not %r" % (k, got, ref))
                        return
                    if c.generation > 1:
                        after += 1
                done.append(k)
            except Exception as e:  # noqa: BLE001
                failures.append("client %d: %r" % (k, e))
            finally:
                c.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        ready.wait(60)
        time.sleep(0.2)  # queries in flight
        d.kill()
        d.start()
        stop.set()
        for t in threads:
            t.join(60)
        took = time.monotonic() - t0
        self.assertEqual(failures, [])
        self.assertEqual(sorted(done), list(range(n)), "every client resumed")
        self.assertEqual(sorted(lost), list(range(1, n, 2)),
                         "each client not retrying saw one ConnectionLost (its query at the break), "
                         "the others none")
        print("200 clients through a restart: %.2f s" % took, file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
