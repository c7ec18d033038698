"""Build step of the contactd client package (metadata: pyproject.toml).

Generates contactd_client/contactd_pb2.py from the protocol definition with
protoc into the build tree, so the module ships inside the package and is
never written into (or committed to) the source tree. The .proto is found at
../../proto/contactd.proto from this directory (a checkout of contactd), or
where $CONTACTD_PROTO points; protoc is found on PATH, or at $PROTOC.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _proto_path():
    p = os.environ.get("CONTACTD_PROTO") or os.path.join(HERE, "..", "..", "proto", "contactd.proto")
    p = os.path.abspath(p)
    if not os.path.isfile(p):
        raise SystemExit("contactd-client: cannot find contactd.proto at %s; set CONTACTD_PROTO" % p)
    return p


class BuildPyWithProto(build_py):
    """build_py, then protoc --python_out into the built package."""

    def run(self):
        super().run()
        protoc = os.environ.get("PROTOC") or shutil.which("protoc")
        if not protoc:
            raise SystemExit("contactd-client: protoc not found (Debian: apt-get install protobuf-compiler)")
        proto = _proto_path()
        out = os.path.join(self.build_lib, "contactd_client")
        os.makedirs(out, exist_ok=True)
        subprocess.check_call([protoc, "--python_out=" + out, "-I" + os.path.dirname(proto), proto])


setup(cmdclass={"build_py": BuildPyWithProto})
