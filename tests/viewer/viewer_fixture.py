"""Shared pieces of the viewer tests: the real contactd with its HTTP port on
ephemeral loopback ports, raw HTTP requests, scene files, contactctl runs,
the Chromium driver (playwright-core, installed with npm ci into the build
tree) and a PNG reader for the screenshots."""
import json
import math
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import zlib

CONTACTD = os.environ.get("CONTACTD_BIN", "")
CONTACTCTL = os.environ.get("CONTACTCTL", "")
HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.environ.get("VIEWER_NODE_DIR", os.path.join(tempfile.gettempdir(), "contactd-viewer-node"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


class Daemon:
    """contactd on 127.0.0.1:0 with --http-port 0 (unless http_flag is
    False), extra flags, optional config JSON; port = TCP, http = the HTTP
    port."""

    def __init__(self, extra=(), config=None, workers=2, http_flag=True):
        self.dir = tempfile.mkdtemp(prefix="cd-viewer-")
        self.log_path = os.path.join(self.dir, "contactd.log")
        args = [CONTACTD, "--listen", "127.0.0.1:0", "--workers", str(workers)]
        if http_flag:
            args += ["--http-port", "0"]
        if config is not None:
            path = os.path.join(self.dir, "config.json")
            with open(path, "w") as f:
                json.dump(config, f)
            args += ["--config", path]
        args += list(extra)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self._log)
        self.port = self.http = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            text = self.log()
            m = re.search(r'msg="listening" tcp=\S+ port=(\d+)', text)
            h = re.search(r"http_port=(\d+)", text)
            if m and h and 'msg="ready"' in text:
                self.port, self.http = int(m.group(1)), int(h.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError("contactd exited during startup:\n" + text)
            time.sleep(0.02)
        else:
            self.proc.kill()
            raise RuntimeError("contactd did not become ready:\n" + self.log())
        self.addr = "127.0.0.1:%d" % self.port
        self.origin = "http://127.0.0.1:%d" % self.http

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        code = self.proc.returncode
        log = self.log()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code, log


def http(port, raw, timeout=10):
    """Send raw request bytes; return (status, headers text, body bytes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return (int(m.group(1)) if m else 0), head.decode("latin-1"), body


def get(port, path, method="GET"):
    return http(port, ("%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" % (method, path)).encode())


def rolling_ball_scene(path, frames=240, x0=-0.04, x1=0.04):
    """A compliant ball rolling along x on a rigid plane (cycled frames)."""
    r = 0.05
    fr = []
    for k in range(frames):
        x = x0 + (x1 - x0) * k / (frames - 1)
        a = x / r  # rolling: the angle about y is the distance over the radius
        fr.append({"ball": {"position": [x, 0, r - 0.004],
                            "orientation": [math.cos(a / 2), 0, math.sin(a / 2), 0]}})
    scene = {
        "geometries": {
            "ball": {"shape": "sphere", "radius": r, "modulus": 1e5, "hint": 0.01, "friction": 0.3},
            "floor": {"shape": "half-space", "rigid": True, "friction": 0.3},
        },
        "bodies": [{"name": "ball", "geometry": "ball", "position": [x0, 0, r - 0.004],
                    "linear_velocity": [0.1, 0, 0]},
                   {"name": "floor", "geometry": "floor"}],
        "pairs": [["ball", "floor"]],
        "options": {"detail": "wrench"},
        "frames": fr,
    }
    with open(path, "w") as f:
        json.dump(scene, f)
    return path


def publish_reduced_and_speculative(d, scene, k=4, gap=0.004, margin=0.01):
    """Over the protocol port (JSON lines): a compliant ball (R 0.05 m)
    pressed 2.5 mm into a rigid plane and a ball with a margin gap m above
    it, queried with options.reducedContacts = k and published as scene.
    Returns the reply (its results: ball-plane in contact, then the
    speculative one)."""
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    f = s.makefile("r")

    def call(msg):
        s.sendall((json.dumps(msg) + "\n").encode())
        return json.loads(f.readline())

    try:
        r = 0.05
        ball = call({"registerGeometry": {"sphere": {"radius": r}, "compliance": "COMPLIANCE_COMPLIANT",
                                          "modulus": 1e5, "resolutionHint": 0.01, "material": {"friction": 0.3}}})
        near = call({"registerGeometry": {"sphere": {"radius": r}, "compliance": "COMPLIANCE_COMPLIANT",
                                          "modulus": 1e5, "resolutionHint": 0.01, "margin": margin}})
        floor = call({"registerGeometry": {"halfSpace": {}, "compliance": "COMPLIANCE_RIGID",
                                           "material": {"friction": 0.3}}})
        ids = [g["registerReply"]["geometryId"] for g in (ball, near, floor)]
        q = call({"contactQuery": {
            "bodies": [{"bodyId": 1, "geometryId": ids[0], "pose": {"position": {"z": r - 0.0025}},
                        "velocity": {"linear": {"x": 0.1}}},
                       {"bodyId": 2, "geometryId": ids[1], "pose": {"position": {"x": 0.2, "z": r + gap}}},
                       {"bodyId": 3, "geometryId": ids[2]}],
            "pairs": [{"a": 1, "b": 3}, {"a": 2, "b": 3}],
            "options": {"publish": scene, "reducedContacts": k}}})
    finally:
        f.close()
        s.close()
    assert "contactReply" in q, q
    return q["contactReply"]


def contactctl(d, *args, stdout=None):
    return subprocess.Popen([CONTACTCTL, "--addr", d.addr] + list(args), stdout=stdout or subprocess.PIPE,
                            stderr=subprocess.PIPE)


# ---- the browser -------------------------------------------------------------


def have_chromium():
    return os.access(CHROMIUM, os.X_OK)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def ensure_driver():
    """playwright-core as pinned by tests/viewer/package-lock.json, installed
    with npm ci into NODE_DIR once."""
    stamp = os.path.join(NODE_DIR, "node_modules", "playwright-core", "package.json")
    lock = os.path.join(HERE, "package-lock.json")
    os.makedirs(NODE_DIR, exist_ok=True)
    have = os.path.join(NODE_DIR, "package-lock.json")
    if not os.path.exists(stamp) or not os.path.exists(have) or read(have) != read(lock):
        for f in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(HERE, f), NODE_DIR)
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"],
                       cwd=NODE_DIR, check=True)
    shutil.copy(os.path.join(HERE, "drive.mjs"), NODE_DIR)
    return os.path.join(NODE_DIR, "drive.mjs")


def drive(origin, steps, width=1000, height=640, timeout=180):
    """Run drive.mjs over steps; returns its JSON result."""
    script = ensure_driver()
    fd, plan = tempfile.mkstemp(suffix=".json", prefix="drive-")
    with os.fdopen(fd, "w") as f:
        json.dump({"origin": origin, "steps": steps, "width": width, "height": height}, f)
    try:
        p = subprocess.run(["node", script, plan], capture_output=True, text=True, timeout=timeout)
    finally:
        os.unlink(plan)
    if p.returncode != 0:
        raise RuntimeError("drive.mjs failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def start_drive(origin, steps, width=1000, height=640):
    """drive.mjs in the background: (process, plan path)."""
    script = ensure_driver()
    fd, plan = tempfile.mkstemp(suffix=".json", prefix="drive-")
    with os.fdopen(fd, "w") as f:
        json.dump({"origin": origin, "steps": steps, "width": width, "height": height}, f)
    return subprocess.Popen(["node", script, plan], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True), plan


# ---- PNG -----------------------------------------------------------------------


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif ft == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[k:k + 3]) for k in range(0, stride, bpp)])
        prev = line
    return w, h, rows


# The page's pressure map (viewer/viewer.js VIRIDIS) and body colour.
VIRIDIS = [(0x44, 0x01, 0x54), (0x47, 0x2c, 0x7a), (0x3b, 0x51, 0x8b), (0x2c, 0x71, 0x8e), (0x21, 0x90, 0x8d),
           (0x27, 0xad, 0x81), (0x5c, 0xc8, 0x63), (0xaa, 0xdc, 0x32), (0xfd, 0xe7, 0x25)]


def colormap_samples(n=256):
    out = []
    for k in range(n):
        t = k / (n - 1) * (len(VIRIDIS) - 1)
        i = min(len(VIRIDIS) - 2, int(t))
        f = t - i
        out.append(tuple(VIRIDIS[i][c] * (1 - f) + VIRIDIS[i + 1][c] * f for c in range(3)))
    return out


def map_bins(rows, bins=8, tol=6.0):
    """Pixels per bin of the pressure map (pixels within tol of the map)."""
    samples = colormap_samples()
    count = [0] * bins
    cache = {}
    for row in rows:
        for px in row:
            k = cache.get(px)
            if k is None:
                best, bi = 1e9, -1
                for i, s in enumerate(samples):
                    d = (px[0] - s[0]) ** 2 + (px[1] - s[1]) ** 2 + (px[2] - s[2]) ** 2
                    if d < best:
                        best, bi = d, i
                k = bi * bins // len(samples) if best <= tol * tol else -1
                cache[px] = k
            if k >= 0:
                count[k] += 1
    return count


def is_body(px):
    """The body colour (orange, see-through and lit): hue 15..40 degrees."""
    r, g, b = (c / 255.0 for c in px)
    mx, mn = max(r, g, b), min(r, g, b)
    if mx < 0.25 or mx - mn < 0.18 or mx != r:
        return False
    hue = 60.0 * ((g - b) / (mx - mn))
    return 12.0 <= hue <= 42.0
