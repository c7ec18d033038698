"""Make the viewer's screenshots in docs/ with the browser test's tooling:
  /usr/bin/python3 tests/viewer/make_screenshots.py BUILD_DIR
starts contactd (ephemeral loopback ports) from BUILD_DIR, publishes a ball
on a plane (client/examples/scenes/ball_on_floor.json), runs the desk and
coin examples with --publish, and has headless Chromium capture the page for
each into docs/viewer-ball.png, docs/viewer-desk.png, docs/viewer-coin.png."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build-rel"))
    os.environ.setdefault("CONTACTD_BIN", os.path.join(build, "server", "daemon", "contactd"))
    os.environ.setdefault("CONTACTCTL", os.path.join(build, "client", "contactctl"))
    os.environ.setdefault("VIEWER_NODE_DIR", os.path.join(build, "viewer-test-npm"))
    import viewer_fixture as vf
    d = vf.Daemon()
    try:
        p = vf.contactctl(d, "view", os.path.join(ROOT, "client", "examples", "scenes", "ball_on_floor.json"),
                          "--name", "ball")
        p.communicate(timeout=60)
        runs = [("desk", [os.path.join(build, "client", "desk"), "--time", "1", "--every", "500"]),
                ("coin", [os.path.join(build, "client", "coin"), "--eps0", "1", "--stop", "1e-3"])]
        for name, cmd in runs:
            subprocess.run(cmd + ["--addr", d.addr, "--publish", name], check=True, stdout=subprocess.DEVNULL)
        for name, extra in (("ball", []), ("desk", [{"click": "#show-patches"}]), ("coin", [])):
            out = os.path.join(ROOT, "docs", "viewer-%s.png" % name)
            vf.drive(d.origin, [{"goto": "/#%s" % name}, {"waitApplied": 1}] + extra +
                     [{"sleep": 300}, {"shot": out}], width=960, height=560)
            print("wrote", out)
    finally:
        d.stop()


if __name__ == "__main__":
    main()
