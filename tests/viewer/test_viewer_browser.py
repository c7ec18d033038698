"""The viewer in a real browser: Debian's Chromium, headless, driven by
playwright-core, its network blocked but for the daemon's own address.

A client streams a compliant ball rolling on a rigid plane, published; the
page draws it. Asserted: the canvas shows at least three colours of the
pressure map and the body's colour; a screenshot 0.5 s later differs where
the ball moved; once the client is done, the page's readout shows its last
result's face count and force to 4 significant digits; every request the
page made went to the daemon.

A scene published with options.reducedContacts = 4 and a speculative pair
(test_reduced_and_speculative): the page draws a marker per reduced
contact (its count, as the page says in body.dataset, equals the scene's,
and magenta pixels show on the canvas); unticking "reduced contacts" hides
them (count 0, no magenta); the speculative pair is drawn (its marker
counted) and its row says "speculative" with the gap.

With principals set (ViewerBrowserAuth): the page opened once with
?token= of tenant lab-a is redirected to a URL without it, keeps a session
cookie, lists only lab-a's scenes and draws one of them (its event stream
authorised by the cookie); when its principal's token changes (SIGHUP) its
session ends and the page says so; opened without a token it gets 401.
Exits 77
(skipped) only when Chromium is not installed."""
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

import http_security_fixture as hf
import viewer_fixture as vf


class ViewerBrowser(unittest.TestCase):
    def setUp(self):
        self.d = vf.Daemon()
        self.tmp = tempfile.mkdtemp(prefix="viewer-browser-")

    def tearDown(self):
        if os.environ.get("VIEWER_KEEP"):
            print("screenshots kept in", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)
        code, log = self.d.stop()
        self.assertEqual(code, 0, log[-3000:])

    def path(self, name):
        return os.path.join(self.tmp, name)

    def test_rolling_ball_live(self):
        scene = vf.rolling_ball_scene(self.path("rolling.json"), frames=480)
        # publish the first frame so that the page has a scene to open
        first = vf.contactctl(self.d, "view", scene, "--name", "rolling", "--json")
        out, err = first.communicate(timeout=60)
        self.assertEqual(first.returncode, 0, err)
        self.assertIn('"view_url": "%s/#rolling"' % self.d.origin, out.decode())
        shot1, shot2 = self.path("shot1.png"), self.path("shot2.png")
        ready, streaming, shot, done, version = (self.path(n) for n in
                                                 ("ready", "streaming", "shot", "done", "version"))
        steps = [{"goto": "/#rolling"}, {"waitApplied": 1}, {"touch": ready}, {"waitFile": streaming},
                 {"sleep": 300}, {"shot": shot1, "canvas": True}, {"sleep": 500},
                 {"shot": shot2, "canvas": True}, {"touch": shot}, {"waitFile": done},
                 {"waitAppliedFromFile": version}, {"readout": True}]
        drv, plan = vf.start_drive(self.d.origin, steps)
        try:
            t0 = time.monotonic()
            while not os.path.exists(ready):
                if drv.poll() is not None:
                    self.fail("the driver ended early: %s" % drv.communicate()[1][-3000:])
                self.assertLess(time.monotonic() - t0, 120, "the page never drew the scene")
                time.sleep(0.05)
            # 480 frames at 60 Hz: the ball rolls 0.08 m in 8 s (then starts over). The
            # stream runs until both screenshots are taken, then stops (SIGINT: the
            # client closes its stream and prints its results).
            results = self.path("client.jsonl")
            with open(results, "w") as f:
                cl = vf.contactctl(self.d, "view", scene, "--name", "rolling", "--stream", "--rate", "60",
                                   "--json", stdout=f)
                try:
                    while os.path.getsize(results) < 4096 and cl.poll() is None:
                        time.sleep(0.02)
                    open(streaming, "w").close()
                    t0 = time.monotonic()
                    while not os.path.exists(shot) and drv.poll() is None and time.monotonic() - t0 < 180:
                        time.sleep(0.05)
                    self.assertIsNone(cl.poll(), "the client stopped streaming before the screenshots")
                    cl.send_signal(signal.SIGINT)
                    _, err = cl.communicate(timeout=120)
                finally:
                    if cl.poll() is None:
                        cl.kill()
            self.assertEqual(cl.returncode, 0, err)
            status, _, body = vf.get(self.d.http, "/v1/scenes")
            self.assertEqual(status, 200)
            v = [s for s in json.loads(body)["scenes"] if s["name"] == "rolling"][0]["version"]
            with open(version, "w") as f:
                f.write(str(v))
            open(done, "w").close()
            stdout, stderr = drv.communicate(timeout=120)
        finally:
            if drv.poll() is None:
                drv.kill()
            os.unlink(plan)
        self.assertEqual(drv.returncode, 0, stderr[-3000:])
        page = json.loads(stdout.strip().splitlines()[-1])
        self.check_requests(page)
        self.check_pixels(shot1, shot2)
        self.check_readout(page, results)

    def test_reduced_and_speculative(self):
        vf.publish_reduced_and_speculative(self.d, "reduced", k=4, gap=0.004)
        status, _, body = vf.get(self.d.http, "/v1/scenes/reduced")
        self.assertEqual(status, 200)
        nreduced = len(json.loads(body)["pairs"][0]["reduced"])
        on, off = self.path("reduced-on.png"), self.path("reduced-off.png")
        page = vf.drive(self.d.origin, [{"goto": "/#reduced"}, {"waitApplied": 1}, {"dataset": True},
                                        {"shot": on, "canvas": True}, {"click": "#show-reduced"},
                                        {"dataset": True}, {"shot": off, "canvas": True},
                                        {"text": "#pairs tbody"}])
        self.check_requests(page)
        shown, hidden = page["datasets"]
        magenta = [sum(1 for row in vf.read_png(p)[2] for px in row
                       if px[0] > 200 and px[1] < 60 and px[2] > 200) for p in (on, off)]
        rows = page["texts"]["#pairs tbody"]
        print("scene: %d reduced contacts; page: %s shown (%d magenta pixels), %s after the toggle "
              "(%d magenta pixels); speculative markers %s; rows %r" %
              (nreduced, shown["reduced"], magenta[0], hidden["reduced"], magenta[1], shown["speculative"], rows))
        self.assertEqual(int(shown["reduced"]), nreduced)
        self.assertGreater(nreduced, 1)
        self.assertEqual(int(hidden["reduced"]), 0)
        self.assertGreater(magenta[0], 20 * nreduced)
        self.assertEqual(magenta[1], 0)
        self.assertEqual(int(shown["speculative"]), 1)
        self.assertIn("2–3 speculative gap 0.004000 m", rows)

    def check_requests(self, page):
        print("page requests: %d, all to %s" % (len(page["requests"]), self.d.origin))
        self.assertEqual(page["blocked"], [])
        self.assertEqual(page["console"], [])
        self.assertGreater(len(page["requests"]), 3)
        for u in page["requests"]:
            self.assertTrue(u.startswith(self.d.origin + "/"), u)

    def check_pixels(self, shot1, shot2):
        w, h, a = vf.read_png(shot1)
        _, _, b = vf.read_png(shot2)
        bins = vf.map_bins(a)
        body = sum(1 for row in a for px in row if vf.is_body(px))
        print("canvas %dx%d: pressure-map pixels per bin %s, body-colour pixels %d" % (w, h, bins, body))
        self.assertGreaterEqual(sum(1 for n in bins if n >= 20), 3, bins)
        self.assertGreater(body, 500)
        # the ball moved: body-coloured pixels appeared or went
        moved = sum(1 for ra, rb in zip(a, b) for pa, pb in zip(ra, rb) if vf.is_body(pa) != vf.is_body(pb))
        changed = sum(1 for ra, rb in zip(a, b) for pa, pb in zip(ra, rb)
                      if max(abs(pa[i] - pb[i]) for i in range(3)) > 30)
        print("0.5 s later: %d pixels changed, %d of them in or out of the ball" % (changed, moved))
        self.assertGreater(moved, 200)

    def check_readout(self, page, results):
        last = None
        with open(results) as f:
            lines = f.readlines()
        for line in lines:
            o = json.loads(line)
            if "pairs" in o and "sequence" in o:
                if last is None or o["sequence"] > last["sequence"]:
                    last = o
        self.assertIsNotNone(last)
        pr = last["pairs"][0]
        f = pr["wrench_a"]["force"]
        fn = math.sqrt(f[0] ** 2 + f[1] ** 2 + f[2] ** 2)
        row = page["readout"][0]
        print("client's last result: |F| %.17g N, %d faces; page: %s N, %s faces" %
              (fn, pr["faces"], row["force"], row["faces"]))
        self.assertEqual(float(row["force"]), float("%.4g" % fn))
        self.assertEqual(int(row["faces"]), pr["faces"])
        self.assertGreater(pr["faces"], 0)


class ViewerBrowserAuth(unittest.TestCase):
    def test_tenant_sees_only_its_scenes(self):
        tmp = tempfile.mkdtemp(prefix="viewer-browser-auth-")
        d = vf.Daemon(extra=["--principals", hf.principals_file(tmp)])
        try:
            a, b = hf.Proto(d.port, hf.TOKENS["a"]), hf.Proto(d.port, hf.TOKENS["b"])
            ball_a = a.publish_ball("a-one", 0.05)
            a.publish_ball("a-two", 0.05)
            b.publish_ball("b-one", 0.06)
            ball_b = b.publish_ball("a-one", 0.06)  # the same name in the other tenant
            a.close()
            b.close()
            # the page signs in, draws; then robot-a's token changes (SIGHUP) and
            # its session ends: the page says so at its next scene-list refresh
            signed_in, reloaded = os.path.join(tmp, "signed-in"), os.path.join(tmp, "reloaded")
            drv, plan = vf.start_drive(d.origin, [{"goto": "/?token=%s#a-one" % hf.TOKENS["a"]},
                                                  {"waitApplied": 1}, {"text": "#scene"}, {"touch": signed_in},
                                                  {"waitFile": reloaded}, {"sleep": 2500}, {"text": "#status"}])
            try:
                t0 = time.monotonic()
                while not os.path.exists(signed_in) and drv.poll() is None and time.monotonic() - t0 < 120:
                    time.sleep(0.05)
                hf.principals_file(tmp, dict(hf.TOKENS, a=hf.TOKENS["a"] + "-rotated"))
                d.proc.send_signal(signal.SIGHUP)
                t0 = time.monotonic()
                while 'msg="reloaded"' not in d.log() and time.monotonic() - t0 < 30:
                    time.sleep(0.05)
                open(reloaded, "w").close()
                stdout, stderr = drv.communicate(timeout=120)
            finally:
                if drv.poll() is None:
                    drv.kill()
                os.unlink(plan)
            self.assertEqual(drv.returncode, 0, stderr[-3000:])
            page = json.loads(stdout.strip().splitlines()[-1])
            status = page["texts"]["#status"]
            print("after robot-a's token changed: %r" % status)
            self.assertIn("not signed in, or the session expired", status)
            # the only console errors: the refused scene list after the reload
            for e in page["console"]:
                self.assertIn("401", e)
            names = page["texts"]["#scene"]
            print("tenant lab-a's page lists %r; %d requests" % (names, len(page["requests"])))
            self.assertEqual(page["blocked"], [])
            self.assertEqual(names, "a-onea-two")
            self.assertGreaterEqual(page["applied"], 1)
            # only the first request carried the token: the redirect dropped it
            self.assertIn("token=", page["requests"][0])
            for u in page["requests"][1:]:
                self.assertNotIn("token", u)
            # it drew lab-a's a-one: lab-a's ball, never lab-b's
            geoms = [u for u in page["requests"] if "/v1/geometry/" in u]
            self.assertIn("%s/v1/geometry/%s/surface" % (d.origin, ball_a), geoms)
            self.assertFalse(any(ball_b in u for u in geoms), geoms)
            anon = vf.drive(d.origin, [{"goto": "/"}, {"text": "body"}])
            print("without a token: %r" % anon["texts"]["body"][:60])
            self.assertIn("no token", anon["texts"]["body"])
        finally:
            code, log = d.stop()
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(code, 0, log[-3000:])
        self.assertNotIn(hf.TOKENS["a"], log)


if __name__ == "__main__":
    if not vf.have_chromium():
        print("SKIP: %s is not installed (deploy/deps.sh installs Debian's chromium)" % vf.CHROMIUM)
        sys.exit(77)
    unittest.main()
