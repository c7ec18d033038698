"""Start the real contactd (CONTACTD_BIN) on an ephemeral TCP port plus a Unix
socket in a temporary directory, for the client tests. kill() ends it with
SIGKILL (as a crash would) and start() runs it again on the same TCP port,
Unix socket and store, as a restarted server."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time


class Daemon:
    def __init__(self, workers=2, store=None, port=0):
        self.dir = tempfile.mkdtemp(prefix="cc-pytest-")
        self.unix_path = os.path.join(self.dir, "contactd.sock")
        self.workers = workers
        self.store = store
        self.port = port
        self.starts = 0
        self.proc = None
        self._log = None
        self.start()
        self.tcp_addr = "127.0.0.1:%d" % self.port
        self.unix_addr = "unix:" + self.unix_path

    def start(self):
        """Run contactd (again): same port after the first start."""
        assert self.proc is None or self.proc.poll() is not None, "contactd is running"
        if self._log:
            self._log.close()
        if self.starts and os.path.exists(self.unix_path):
            os.unlink(self.unix_path)  # left by a killed daemon
        self.log_path = os.path.join(self.dir, "contactd.%d.log" % self.starts if self.starts else "contactd.log")
        self.starts += 1
        self._log = open(self.log_path, "wb")
        cmd = [os.environ["CONTACTD_BIN"], "--listen", "127.0.0.1:%d" % self.port, "--unix", self.unix_path,
               "--workers", str(self.workers)]
        if self.store:
            cmd += ["--store", self.store]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log)
        port = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            m = re.search(r'msg="listening" tcp=\S+ port=(\d+)', text)
            if m:
                port = int(m.group(1))
            if port and 'msg="ready"' in text:
                break
            if self.proc.poll() is not None:
                raise RuntimeError("contactd exited during startup:\n" + text)
            time.sleep(0.01)
        else:
            self.proc.kill()
            raise RuntimeError("contactd did not become ready")
        self.port = port

    def kill(self):
        """SIGKILL, as a crash or a lost machine would end it."""
        self.proc.kill()
        self.proc.wait()

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
