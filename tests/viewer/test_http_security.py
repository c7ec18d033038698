"""The HTTP port against the real daemon (no browser):

  SlowHeads     600 connections each sending one header line and then
                nothing, while /healthz is asked every 20 ms and a client
                queries the protocol port: every probe answered (its
                latency printed; asserted < 1 s so that a sanitizer build
                cannot flake, measured far lower), the protocol client
                unaffected, the slow ones closed by http_head_timeout_ms,
                the refusals counted in /metrics and logged once per window;
                past max_metrics_connections a request gets 503 and probes
                are still answered;
  Backlog       the daemon stopped (SIGSTOP, as a loop that is busy or not
                scheduled) while 1,000 connections arrive on each port:
                every connect completes at once (the kernel queues them;
                a full backlog would drop SYNs and cost TCP's 1 s
                retransmission), and once resumed /healthz and the
                protocol port answer;
  ViewerAuth    principals set: no token -> 401 on every viewer path,
                /healthz and /readyz open; a bearer token or a ?token=
                exchanged for an HttpOnly SameSite=Strict session cookie
                (holding no token) shows only that tenant's scenes and
                geometry; the admin sees every tenant; wrong tokens count
                towards the address's lock-out;
  AuthDelay     a wrong token's 401 held auth_fail_delay_ms from half of
                auth_fail_max failures on, a probe and a right token
                answered meanwhile (the held one takes no slot), then the
                lock-out;
  MetricsToken  /metrics with metrics_token_file: 401 without or with a
                wrong token, 200 with it; open without the file;
  Https         a certificate set: the HTTP port speaks TLS 1.3 with it
                (probes, /metrics, the viewer with a token), a plaintext
                request is answered 400 naming HTTPS, the daemon stays up."""
import json
import os
import re
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import http_security_fixture as hf
import viewer_fixture as vf


# N connections to the HTTP port, each sending one header line and then
# nothing; prints how long opening them took, then on a line from stdin
# waits 2.5 s (past http_head_timeout_ms) and prints how many are still open.
SLOW_HEADS = r"""
import socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
t0 = time.monotonic()
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /v1/scenes HTTP/1.0\r\n")
    socks.append(s)
print("%.2f" % (time.monotonic() - t0), flush=True)
sys.stdin.readline()
time.sleep(2.5)
left = 0
for s in socks:
    s.settimeout(0.5)
    try:
        if s.recv(1) != b"":
            left += 1
    except socket.timeout:
        left += 1
    except OSError:
        pass
print(left, flush=True)
"""


class SlowHeads(unittest.TestCase):
    N = 600

    def test_600_slow_heads(self):
        d = vf.Daemon(config={"limits": {"http_head_timeout_ms": 2000, "refusal_log_window_ms": 10000}})
        slow = None
        try:
            probe_ms, proto_ms, stop = [], [], threading.Event()

            def probe():
                while not stop.is_set():
                    t0 = time.monotonic()
                    st, _, body = vf.get(d.http, "/healthz")
                    probe_ms.append(((time.monotonic() - t0) * 1000, st, body))
                    time.sleep(0.02)

            def proto():
                p = hf.Proto(d.port)
                while not stop.is_set():
                    t0 = time.monotonic()
                    r = p.call({"hasGeometry": {"geometryIds": ["0" * 64]}})
                    proto_ms.append(((time.monotonic() - t0) * 1000, "hasGeometryReply" in r))
                    time.sleep(0.01)
                p.close()

            threads = [threading.Thread(target=probe), threading.Thread(target=proto)]
            for t in threads:
                t.start()
            time.sleep(0.2)
            # the attacker in its own process, so that its work does not hold
            # this one's interpreter while the probes are timed
            slow = subprocess.Popen([sys.executable, "-c", SLOW_HEADS, str(d.http), str(self.N)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            opened = slow.stdout.readline().strip()
            time.sleep(1.0)  # probes while all of them are open
            stop.set()
            for t in threads:
                t.join(30)
            lat = sorted(m for m, _, _ in probe_ms)
            plat = sorted(m for m, _ in proto_ms)
            print("%d slow connections opened in %s s; /healthz during them: %d probes, p50 %.2f ms, "
                  "max %.2f ms; protocol hasGeometry: %d, p50 %.2f ms, max %.2f ms" %
                  (self.N, opened, len(lat), statistics.median(lat), lat[-1], len(plat),
                   statistics.median(plat), plat[-1]))
            self.assertGreater(len(lat), 20)
            self.assertTrue(all(st == 200 and body == b"ok\n" for _, st, body in probe_ms), probe_ms[:5])
            self.assertLess(lat[-1], 1000, "a probe waited %.1f ms" % lat[-1])
            self.assertTrue(all(ok for _, ok in proto_ms))
            self.assertLess(plat[-1], 1000)
            slow.stdin.write("check\n")
            slow.stdin.flush()
            # the slow ones are closed by http_head_timeout_ms (2 s) at the latest
            open_left = int(slow.stdout.readline())
            slow.stdin.close()
            slow.stdout.close()
            slow.wait(30)
            print("after the head deadline: %d of %d slow connections still open" % (open_left, self.N))
            self.assertEqual(open_left, 0)
            st, _, body = vf.get(d.http, "/metrics")
            text = body.decode()
            refused = hf.metric(text, 'contactd_refused_total{reason="http_connections"}')
            timeouts = hf.metric(text, "contactd_http_head_timeouts_total")
            print("refused_total{http_connections} %d, http_head_timeouts_total %d" % (refused, timeouts))
            # 600 heads, 256 at a time: the oldest 344 closed as more came
            self.assertGreaterEqual(refused, self.N - 256)
            self.assertGreaterEqual(refused + timeouts, self.N)
        finally:
            if slow and slow.poll() is None:
                slow.kill()
                slow.wait()
            code, log = d.stop()
        lines = log.count('msg="HTTP connections refused"')
        print("'HTTP connections refused' log lines: %d" % lines)
        self.assertEqual(code, 0, log[-3000:])
        self.assertGreaterEqual(lines, 1)
        self.assertLessEqual(lines, 2)  # once per 10 s window; the test runs within two


    def test_probes_past_the_cap(self):
        """max_metrics_connections requests held open (event streams): a
        further request gets 503 with Retry-After, probes are answered."""
        d = vf.Daemon(config={"limits": {"max_metrics_connections": 2}})
        streams = []
        try:
            for _ in range(2):
                s = socket.create_connection(("127.0.0.1", d.http), timeout=10)
                s.sendall(b"GET /v1/scenes/nothing/events HTTP/1.0\r\n\r\n")
                self.assertIn(b"200 OK", s.recv(4096))
                streams.append(s)
            st, head, body = vf.get(d.http, "/v1/scenes")
            self.assertEqual(st, 503, body)
            self.assertIn("Retry-After: 1", head)
            self.assertIn(b"max_metrics_connections", body)
            for path, want in (("/healthz", b"ok\n"), ("/readyz", b"ready\n")):
                st, _, body = vf.get(d.http, path)
                self.assertEqual((st, body), (200, want))
            for s in streams:
                s.close()
            time.sleep(0.2)
            self.assertEqual(vf.get(d.http, "/v1/scenes")[0], 200)
        finally:
            for s in streams:
                s.close()
            code, log = d.stop()
        self.assertEqual(code, 0, log[-3000:])
        self.assertEqual(log.count('msg="HTTP connections refused"'), 1)


class Backlog(unittest.TestCase):
    N = 1000

    def test_a_burst_waits_in_the_backlog(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 2 * self.N + 64:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * self.N), hard))
        d = vf.Daemon()
        socks = []
        try:
            os.kill(d.proc.pid, signal.SIGSTOP)
            try:
                worst = 0.0
                for port in (d.http, d.port):
                    for _ in range(self.N):
                        t0 = time.monotonic()
                        socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                        worst = max(worst, time.monotonic() - t0)
            finally:
                os.kill(d.proc.pid, signal.SIGCONT)
            print("%d connections to each port of a stopped daemon: slowest connect %.1f ms" %
                  (self.N, worst * 1000))
            self.assertLess(worst, 0.5)
            for s in socks:
                s.close()
            socks = []
            st, _, body = vf.get(d.http, "/healthz")
            self.assertEqual((st, body), (200, b"ok\n"))
            p = hf.Proto(d.port)
            self.assertIn("hasGeometryReply", p.call({"hasGeometry": {"geometryIds": ["0" * 64]}}))
            p.close()
        finally:
            for s in socks:
                s.close()
            code, log = d.stop()
        self.assertEqual(code, 0, log[-3000:])


class ViewerAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cd-http-auth-")
        cls.d = vf.Daemon(extra=["--principals", hf.principals_file(cls.tmp)])
        a, b = hf.Proto(cls.d.port, hf.TOKENS["a"]), hf.Proto(cls.d.port, hf.TOKENS["b"])
        cls.ball_a = a.publish_ball("a-scene", 0.05)
        cls.ball_b = b.publish_ball("b-scene", 0.06)
        b.publish_ball("shared", 0.06)
        a.publish_ball("shared", 0.05)
        a.close()
        b.close()

    @classmethod
    def tearDownClass(cls):
        code, log = cls.d.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        for t in hf.TOKENS.values():
            assert t not in log, "a token was logged"
        assert code == 0, log[-3000:]

    def scenes(self, headers):
        st, _, body = hf.get(self.d.http, "/v1/scenes", headers)
        self.assertEqual(st, 200, body)
        return sorted((s["name"], s["tenant"]) for s in json.loads(body)["scenes"])

    def test_no_token_is_401_probes_open(self):
        for path in ("/", "/index.html", "/viewer.js", "/v1/scenes", "/v1/scenes/a-scene",
                     "/v1/scenes/a-scene/events", "/v1/geometry/%s/surface" % self.ball_a, "/nowhere"):
            st, head, body = hf.get(self.d.http, path)
            self.assertEqual(st, 401, path)
            self.assertIn('WWW-Authenticate: Bearer realm="contactd"', head)
            self.assertIn(b"no token", body)
        self.assertEqual(hf.get(self.d.http, "/healthz")[0], 200)
        self.assertEqual(hf.get(self.d.http, "/readyz")[0], 200)

    def test_bearer_sees_its_tenant_only(self):
        a = [hf.bearer(hf.TOKENS["a"])]
        self.assertEqual(self.scenes(a), [("a-scene", "lab-a"), ("shared", "lab-a")])
        self.assertEqual(self.scenes([hf.bearer(hf.TOKENS["b"])]), [("b-scene", "lab-b"), ("shared", "lab-b")])
        self.assertEqual(hf.get(self.d.http, "/v1/scenes/b-scene", a)[0], 404)
        st, _, body = hf.get(self.d.http, "/v1/scenes/shared", a)
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(body)["bodies"][0]["geometry"], self.ball_a)
        # geometry: its own ball, not the other tenant's
        self.assertEqual(hf.get(self.d.http, "/v1/geometry/%s/surface" % self.ball_a, a)[0], 200)
        self.assertEqual(hf.get(self.d.http, "/v1/geometry/%s/surface" % self.ball_b, a)[0], 404)

    def test_admin_sees_every_tenant(self):
        ops = [hf.bearer(hf.TOKENS["ops"])]
        self.assertEqual(self.scenes(ops), [("a-scene", "lab-a"), ("b-scene", "lab-b"), ("shared", "lab-a"),
                                            ("shared", "lab-b")])
        self.assertEqual(hf.get(self.d.http, "/v1/geometry/%s/surface" % self.ball_b, ops)[0], 200)

    def test_query_token_becomes_a_session_cookie(self):
        st, head, _ = hf.get(self.d.http, "/?token=" + hf.TOKENS["a"])
        self.assertEqual(st, 303, head)
        self.assertIn("\r\nLocation: /\r\n", head)
        m = re.search(r"^Set-Cookie: cd_session=([0-9a-f]{64}); (.*)$", head, re.M)
        self.assertIsNotNone(m, head)
        attrs = m.group(2)
        for a in ("HttpOnly", "SameSite=Strict", "Path=/"):
            self.assertIn(a, attrs)
        self.assertNotIn("Secure", attrs)  # plaintext port
        self.assertNotIn(hf.TOKENS["a"], head)
        cookie = ["Cookie: theme=dark; cd_session=" + m.group(1)]
        self.assertEqual(self.scenes(cookie), [("a-scene", "lab-a"), ("shared", "lab-a")])
        self.assertEqual(hf.get(self.d.http, "/v1/scenes/b-scene", cookie)[0], 404)
        # another session id, or a changed one, is nobody
        bad = "0" * 64 if m.group(1) != "0" * 64 else "1" * 64
        self.assertEqual(hf.get(self.d.http, "/v1/scenes", ["Cookie: cd_session=" + bad])[0], 401)

    def test_wrong_tokens(self):
        for h in ([hf.bearer("not-a-token")], ["Authorization: Basic Zm9vOmJhcg=="]):
            st, _, body = hf.get(self.d.http, "/v1/scenes", h)
            self.assertEqual(st, 401, body)
        self.assertEqual(hf.get(self.d.http, "/v1/scenes?token=nope")[0], 401)
        self.assertEqual(hf.get(self.d.http, "/v1/scenes?token=%zz")[0], 401)
        st, _, body = hf.get(self.d.http, "/metrics")
        self.assertGreaterEqual(hf.metric(body.decode(), "contactd_http_unauthorized_total"), 3)
        self.assertGreaterEqual(hf.metric(body.decode(), "contactd_auth_failures_total"), 2)


class AuthDelay(unittest.TestCase):
    """From half of auth_fail_max failures on, a wrong token's 401 is held
    for auth_fail_delay_ms (as on the protocol port) without holding up the
    loop or a max_metrics_connections slot: a probe and a right token sent
    meanwhile are answered first; a right token is answered at once; at
    auth_fail_max the address is locked out (429)."""

    def test_failures_are_answered_late(self):
        tmp = tempfile.mkdtemp(prefix="cd-http-delay-")
        d = vf.Daemon(extra=["--principals", hf.principals_file(tmp)],
                      config={"limits": {"auth_fail_max": 8, "auth_fail_delay_ms": 400,
                                         "max_metrics_connections": 1}})
        try:
            took = []
            for _ in range(6):
                t0 = time.monotonic()
                st, _, body = hf.get(d.http, "/v1/scenes", [hf.bearer("not-a-token")])
                took.append((time.monotonic() - t0) * 1000)
                self.assertEqual(st, 401, body)
                self.assertIn(b"unknown token", body)
            print("wrong tokens 1-6 answered after %s ms" % ", ".join("%.1f" % t for t in took))
            for i in (4, 5):  # the 5th and 6th: 4 failures before them = half of auth_fail_max
                self.assertGreaterEqual(took[i], 400, "failure %d held auth_fail_delay_ms" % (i + 1))
            t0 = time.monotonic()
            st, _, _ = hf.get(d.http, "/v1/scenes", [hf.bearer(hf.TOKENS["a"])])
            print("the right token after them: %.1f ms" % ((time.monotonic() - t0) * 1000))
            self.assertEqual(st, 200)
            held = {}

            def wrong():
                held["answer"] = hf.get(d.http, "/v1/scenes", [hf.bearer("still-not-a-token")])

            t = threading.Thread(target=wrong)
            t.start()
            time.sleep(0.1)
            self.assertEqual(vf.get(d.http, "/healthz")[:1], (200,))
            # the held answer does not take the one max_metrics_connections slot
            self.assertEqual(hf.get(d.http, "/v1/scenes", [hf.bearer(hf.TOKENS["a"])])[0], 200)
            self.assertTrue(t.is_alive(), "the probe and the right token are answered while the wrong one is held")
            t.join(10)
            self.assertEqual(held["answer"][0], 401)
            # the eighth failure locks the address out
            self.assertEqual(hf.get(d.http, "/v1/scenes", [hf.bearer("not-a-token")])[0], 401)
            self.assertEqual(hf.get(d.http, "/v1/scenes", [hf.bearer(hf.TOKENS["a"])])[0], 429)
        finally:
            code, log = d.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(code, 0, log[-3000:])
        self.assertEqual(log.count('msg="address locked out after failed authentications"'), 1)


class MetricsToken(unittest.TestCase):
    def test_metrics_token(self):
        tmp = tempfile.mkdtemp(prefix="cd-http-metrics-")
        tok = "metrics-" + os.urandom(16).hex()
        d = vf.Daemon(extra=["--metrics-token-file", hf.token_file(tmp, "metrics.token", tok)])
        try:
            st, head, _ = hf.get(d.http, "/metrics")
            self.assertEqual(st, 401)
            self.assertIn("WWW-Authenticate: Bearer", head)
            self.assertEqual(hf.get(d.http, "/metrics", [hf.bearer(tok + "x")])[0], 401)
            st, _, body = hf.get(d.http, "/metrics", [hf.bearer(tok)])
            self.assertEqual(st, 200)
            self.assertIn(b"contactd_up 1", body)
            self.assertEqual(hf.get(d.http, "/healthz")[0], 200)
            # no principals: the viewer's API stays open
            self.assertEqual(hf.get(d.http, "/v1/scenes")[0], 200)
        finally:
            code, log = d.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertNotIn(tok, log)
        self.assertEqual(code, 0)
        # and without the file, /metrics is open
        d = vf.Daemon()
        try:
            self.assertEqual(hf.get(d.http, "/metrics")[0], 200)
        finally:
            self.assertEqual(d.stop()[0], 0)


class Https(unittest.TestCase):
    def test_https_port(self):
        certs = hf.make_certs()
        tmp = tempfile.mkdtemp(prefix="cd-http-tls-")
        d = vf.Daemon(extra=["--tls-cert", os.path.join(certs, "server.pem"),
                             "--tls-key", os.path.join(certs, "server.key"),
                             "--principals", hf.principals_file(tmp)])
        try:
            ctx = ssl.create_default_context(cafile=os.path.join(certs, "ca.pem"))
            ctx.minimum_version = ssl.TLSVersion.TLSv1_3
            t0 = time.monotonic()
            st, _, body = hf.get(d.http, "/healthz", tls_ctx=ctx)
            print("GET /healthz over TLS 1.3 (handshake included): %.1f ms" % ((time.monotonic() - t0) * 1000))
            self.assertEqual((st, body), (200, b"ok\n"))
            self.assertEqual(hf.get(d.http, "/v1/scenes", tls_ctx=ctx)[0], 401)
            st, _, body = hf.get(d.http, "/v1/scenes", [hf.bearer(hf.TOKENS["a"])], tls_ctx=ctx)
            self.assertEqual((st, body), (200, b'{"scenes":[]}\n'))
            st, head, _ = hf.get(d.http, "/?token=" + hf.TOKENS["a"], tls_ctx=ctx)
            self.assertEqual(st, 303)
            self.assertRegex(head, r"Set-Cookie: cd_session=[0-9a-f]{64};.*; HttpOnly; SameSite=Strict; Secure")
            st, _, body = hf.get(d.http, "/metrics", tls_ctx=ctx)
            self.assertEqual(st, 200)
            self.assertGreaterEqual(hf.metric(body.decode(), "contactd_http_tls_handshakes_total"), 4)
            # a plaintext request on the TLS port: told, in plaintext
            st, _, body = hf.get(d.http, "/healthz")
            self.assertEqual(st, 400)
            self.assertIn(b"HTTPS", body)
            # a client that does not trust the certificate gets no answer
            bad = ssl.create_default_context()
            with self.assertRaises(ssl.SSLError):
                hf.get(d.http, "/healthz", tls_ctx=bad)
            self.assertEqual(hf.get(d.http, "/healthz", tls_ctx=ctx)[0], 200)
        finally:
            code, log = d.stop()
            shutil.rmtree(certs, ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(code, 0, log[-3000:])


if __name__ == "__main__":
    unittest.main()
