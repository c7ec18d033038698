"""Start the real contactd (CONTACTD_BIN) on an ephemeral TCP port plus a Unix
socket in a temporary directory, for the client tests."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time


class Daemon:
    def __init__(self, workers=2):
        self.dir = tempfile.mkdtemp(prefix="cc-pytest-")
        self.unix_path = os.path.join(self.dir, "contactd.sock")
        self.log_path = os.path.join(self.dir, "contactd.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [os.environ["CONTACTD_BIN"], "--listen", "127.0.0.1:0", "--unix", self.unix_path,
             "--workers", str(workers)],
            stdout=subprocess.DEVNULL, stderr=self._log)
        self.port = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            m = re.search(r'msg="listening" tcp=\S+ port=(\d+)', text)
            if m:
                self.port = int(m.group(1))
            if self.port and 'msg="ready"' in text:
                break
            if self.proc.poll() is not None:
                raise RuntimeError("contactd exited during startup:\n" + text)
            time.sleep(0.01)
        else:
            self.proc.kill()
            raise RuntimeError("contactd did not become ready")
        self.tcp_addr = "127.0.0.1:%d" % self.port
        self.unix_addr = "unix:" + self.unix_path

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode
