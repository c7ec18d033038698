"""Pieces of the HTTP port's security tests: a principals file with three
tokens (tenant lab-a, tenant lab-b, and an admin of every tenant), a
JSON-lines client of the protocol port that authenticates and publishes a
scene, and HTTPS requests with the standard ssl module."""
import hashlib
import json
import os
import re
import socket
import ssl
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_CERTS = os.path.join(HERE, "..", "common", "make_certs.sh")

TOKENS = {"a": "tok-a-" + os.urandom(12).hex(), "b": "tok-b-" + os.urandom(12).hex(),
          "ops": "tok-ops-" + os.urandom(12).hex()}


def principals_file(directory, tokens=None):
    """The principals file: robot-a (lab-a), robot-b (lab-b), ops (admin, *),
    with TOKENS or the tokens given."""
    tokens = tokens or TOKENS

    def h(t):
        return hashlib.sha256(t.encode()).hexdigest()
    doc = {"principals": [
        {"name": "robot-a", "token_sha256": h(tokens["a"]), "roles": ["query", "register"], "tenant": "lab-a"},
        {"name": "robot-b", "token_sha256": h(tokens["b"]), "roles": ["query", "register"], "tenant": "lab-b"},
        {"name": "ops", "token_sha256": h(tokens["ops"]), "roles": ["admin"], "tenant": "*"}]}
    path = os.path.join(directory, "principals.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def token_file(directory, name, token):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return path


def make_certs():
    """A fresh directory with make_certs.sh's certificates."""
    d = tempfile.mkdtemp(prefix="cd-http-certs-")
    subprocess.run(["sh", MAKE_CERTS, d], check=True)
    return d


class Proto:
    """A JSON-lines connection to the protocol port (plaintext)."""

    def __init__(self, port, token=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.f = self.s.makefile("r")
        self.n = 0
        if token is not None:
            r = self.call({"hello": {"token": token}})
            assert "helloReply" in r, r

    def call(self, msg):
        self.n += 1
        msg = dict(msg, requestId=str(self.n))
        self.s.sendall((json.dumps(msg) + "\n").encode())
        return json.loads(self.f.readline())

    def close(self):
        self.f.close()
        self.s.close()

    def publish_ball(self, scene, radius):
        """Register a ball of this radius and a half-space; publish one
        query of the ball resting on it as scene. Returns the ball's id."""
        ball = self.call({"registerGeometry": {"sphere": {"radius": radius}, "compliance": "COMPLIANCE_COMPLIANT",
                                               "modulus": 1e5, "resolutionHint": radius / 5}})
        floor = self.call({"registerGeometry": {"halfSpace": {}, "compliance": "COMPLIANCE_RIGID"}})
        bid, fid = ball["registerReply"]["geometryId"], floor["registerReply"]["geometryId"]
        q = self.call({"contactQuery": {
            "bodies": [{"bodyId": 1, "geometryId": bid, "pose": {"position": {"z": radius * 0.95}}},
                       {"bodyId": 2, "geometryId": fid}],
            "pairs": [{"a": 1, "b": 2}], "options": {"publish": scene}}})
        assert "contactReply" in q, q
        return bid


def raw(port, data, tls_ctx=None, timeout=10):
    """Send raw request bytes (over TLS with tls_ctx); (status, head, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s0:
        s = tls_ctx.wrap_socket(s0, server_hostname="localhost") if tls_ctx else s0
        try:
            s.sendall(data)
            out = b""
            while True:
                try:
                    chunk = s.recv(65536)
                except (ConnectionResetError, ssl.SSLEOFError):
                    break
                if not chunk:
                    break
                out += chunk
        finally:
            if s is not s0:
                s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return (int(m.group(1)) if m else 0), head.decode("latin-1"), body


def get(port, path, headers=(), tls_ctx=None):
    lines = ["GET %s HTTP/1.0" % path, "Host: 127.0.0.1"] + list(headers)
    return raw(port, ("\r\n".join(lines) + "\r\n\r\n").encode(), tls_ctx)


def bearer(token):
    return "Authorization: Bearer " + token


def metric(text, name):
    """The value of a metric line (name with its labels) in /metrics text."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None
