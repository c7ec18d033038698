"""The connection layer under Client: framing (varint length prefixes), one
socket to one of several server addresses, and reconnecting with capped
exponential backoff and jitter when it breaks. It knows nothing of the
messages it carries (frames are bytes), so request handling, streams and
geometry recovery (Client) build on it.

Addresses are "host:port", "[v6]:port" or "unix:/path"; a list of them (a
Python list, or one string separated by commas, as in CONTACTD_ADDR) names
replicas tried in turn: no load balancer is needed in front of them.
"""
import random
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from ._pb import pb
from .errors import ConnectionLost, ContactdError

__all__ = ["Backoff", "Transport", "parse_addresses", "encode_varint", "decode_varint"]

_FOREVER = 1e9  # a socket timeout standing for none


def encode_varint(n: int) -> bytes:
    """The base-128 varint of n (0 <= n < 2**64): a frame's length prefix."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def decode_varint(buf: Union[bytes, bytearray, memoryview]) -> Optional[Tuple[int, int]]:
    """The varint at the start of buf as (value, its length in bytes); None
    when buf ends inside it; ValueError when it runs past 10 bytes."""
    n, shift = 0, 0
    for i, b in enumerate(buf):
        if i >= 10:
            break
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i + 1
    if len(buf) < 10:
        return None
    raise ValueError("varint longer than 10 bytes")


def parse_addresses(addr: Union[str, Sequence[str]]) -> List[str]:
    """A list of addresses from one string ("a:1,b:2") or a sequence of
    strings; each is checked (host:port or unix:/path)."""
    parts = addr.split(",") if isinstance(addr, str) else list(addr)
    out = [p.strip() for p in parts if p and p.strip()]
    if not out:
        raise ContactdError(pb.INVALID_ARGUMENT, "no server address given (want host:port or unix:/path)",
                            remote=False)
    for a in out:
        if a.startswith("unix:"):
            if len(a) == 5:
                raise ContactdError(pb.INVALID_ARGUMENT, "bad address %r (unix: needs a path)" % a, remote=False)
            continue
        _, sep, port = a.rpartition(":")
        if not sep or not port.isdigit() or int(port) > 65535:
            raise ContactdError(pb.INVALID_ARGUMENT, "bad address %r (want host:port or unix:/path)" % a,
                                remote=False)
    return out


@dataclass
class Backoff:
    """How the client reconnects: before round n (n = 0, 1, ...) of trying
    every address it sleeps a uniformly random time in [0, min(cap,
    initial * factor**n)] ("full jitter", so that many clients of a
    restarted server spread out), and gives up with ConnectionLost after
    give_up_after seconds (None: never). With several addresses the first
    round starts at once, with the address after the one that broke."""
    initial: float = 0.05
    factor: float = 2.0
    cap: float = 2.0
    give_up_after: Optional[float] = 30.0

    def delay(self, n: int, rng: Any = random) -> float:
        return float(rng.uniform(0.0, min(self.cap, self.initial * self.factor ** n)))


def _open(addr: str, timeout: float) -> socket.socket:
    s = None
    try:
        if addr.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(addr[5:])
        else:
            host, _, port = addr.rpartition(":")
            host = host.strip("[]") or "127.0.0.1"
            s = socket.create_connection((host, int(port)), timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s
    except BaseException:
        if s is not None:
            s.close()
        raise


class Transport:
    """One connection at a time to one of ``addresses``. send() and recv()
    raise ConnectionLost when the connection breaks; it then stays broken
    (``broken``) until reconnect(). ``generation`` counts the connections
    made (1 after the first). One thread may send while another receives
    (Client serializes the senders, and the receivers); a break seen by
    either drops the connection for both."""

    def __init__(self, addresses: Union[str, Sequence[str]], timeout: Optional[float] = 60.0,
                 connect_timeout: float = 5.0, max_frame: int = 256 << 20,
                 backoff: Optional[Backoff] = None):
        self.addresses = parse_addresses(addresses)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_frame = max_frame
        self.backoff = backoff  # None: reconnect() refuses
        # Called by reconnect() on each new connection with a deadline: one
        # round trip (Client: Hello) that proves the server serves it. A
        # connection to a server going away can be accepted (its listener
        # still open while the process ends) and reset a moment later.
        self.handshake: Optional[Callable[[float], None]] = None
        self.index = 0           # the address in use (or tried last)
        self.generation = 0
        self.closed = False      # closed by the caller: never reconnects
        self.broken_at = 0.0
        self._sock: Optional[socket.socket] = None
        self._buf = bytearray()

    @property
    def address(self) -> str:
        return self.addresses[self.index]

    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def broken(self) -> bool:
        return self._sock is None and not self.closed and self.generation > 0

    def connect(self, start: int = 0) -> None:
        """One round: each address in turn from ``start``; ContactdError
        (UNAVAILABLE, or DEADLINE_EXCEEDED when the last one timed out)
        naming every address's failure when none answers."""
        errs = []
        code = pb.UNAVAILABLE
        n = len(self.addresses)
        for k in range(n):
            i = (start + k) % n
            a = self.addresses[i]
            try:
                s = _open(a, self.connect_timeout)
            except socket.timeout:
                errs.append("connect to %s timed out" % a)
                code = pb.DEADLINE_EXCEEDED
                continue
            except OSError as e:
                errs.append("connect to %s: %s" % (a, e.strerror or e))
                code = pb.UNAVAILABLE
                continue
            self._sock = s
            self._buf = bytearray()
            self.index = i
            self.generation += 1
            self.closed = False
            return
        raise ContactdError(code, "; ".join(errs), remote=False)

    def reconnect(self) -> int:
        """Connect again after a break: rounds over every address, starting
        with the one after the address that broke, with Backoff's sleeps
        between rounds; a connection counts once ``handshake`` passed on it
        (when it fails, the next round starts after that address). Returns
        the number of rounds it took; ConnectionLost (retryable: a later call
        tries again) when Backoff gives up."""
        if self.closed:
            raise ConnectionLost("the client was closed", retryable=False, address=self.address)
        if self.backoff is None:
            raise ConnectionLost("the connection to %s was lost and reconnect is off" % self.address,
                                 retryable=False, address=self.address)
        t0 = time.monotonic()
        start = (self.index + 1) % len(self.addresses)
        rounds, sleeps, last = 0, 0, ""
        while True:
            left = None
            if self.backoff.give_up_after is not None:
                left = self.backoff.give_up_after - (time.monotonic() - t0)
                if left <= 0:
                    raise ConnectionLost("could not reconnect within %.3g s: %s"
                                         % (self.backoff.give_up_after, last), retryable=True,
                                         address=self.address) from None
            if rounds or len(self.addresses) == 1:
                # One address: the server that just went away may still hold
                # its listener for a moment (connections it resets), and all
                # of its clients come back at once: wait a jittered delay.
                d = self.backoff.delay(sleeps)
                time.sleep(d if left is None else min(d, left))
                sleeps += 1
            rounds += 1
            connected = False
            try:
                self.connect(start)
                connected = True
                if self.handshake is not None:
                    self.handshake(time.monotonic() + self.connect_timeout)
                return rounds
            except ContactdError as e:
                if e.remote:
                    raise  # the server answered, with an error: not a matter of connecting
                if connected:  # the handshake failed: that address goes last
                    start = (self.index + 1) % len(self.addresses)
                self._drop()
                last = e.message

    def close(self) -> None:
        """Close for good: no reconnect after this."""
        self.closed = True
        self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            self.broken_at = time.monotonic()
        self._buf = bytearray()

    def _lost(self, why: str) -> ConnectionLost:
        self._drop()
        return ConnectionLost("connection to %s lost: %s" % (self.address, why),
                              retryable=self.backoff is not None and not self.closed, address=self.address)

    def _not_connected(self) -> ConnectionLost:
        if self.closed:
            return ConnectionLost("the client was closed", retryable=False, address=self.address)
        return ConnectionLost("not connected to %s" % self.address, retryable=self.backoff is not None,
                              address=self.address)

    def send(self, body: bytes) -> None:
        """Send one frame (body is a serialized Envelope)."""
        sock = self._sock  # (another thread may drop it meanwhile: the send then fails)
        if sock is None:
            raise self._not_connected()
        try:
            # never None (blocking mode): a recv in another thread shares the socket's mode
            sock.settimeout(_FOREVER if self.timeout is None else self.timeout)
            sock.sendall(encode_varint(len(body)) + body)
        except socket.timeout:
            raise self._lost("sending timed out (part of a frame may have gone: the connection is dropped)") \
                from None
        except OSError as e:
            raise self._lost(e.strerror or str(e)) from None

    def _frame(self) -> Optional[bytes]:
        buf = self._buf
        try:
            prefix = decode_varint(buf)
        except ValueError:
            self._drop()  # out of step with the server: the next call connects again
            raise ContactdError(pb.INTERNAL, "malformed length prefix from the server", remote=False) from None
        if prefix is None:
            return None
        n, i = prefix
        if n > self.max_frame:
            self._drop()
            raise ContactdError(pb.RESOURCE_EXHAUSTED, "reply of %d bytes exceeds the cap (the connection is "
                                "dropped)" % n, remote=False)
        if len(buf) - i < n:
            return None
        body = bytes(buf[i:i + n])
        del buf[:i + n]
        return body

    def recv(self, deadline: Optional[float]) -> bytes:
        """The next frame's body; DEADLINE_EXCEEDED past ``deadline``
        (time.monotonic(); None = wait forever), the connection kept."""
        while True:
            body = self._frame()
            if body is not None:
                return body
            sock = self._sock
            if sock is None:
                raise self._not_connected()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ContactdError(pb.DEADLINE_EXCEEDED, "no reply within the timeout", remote=False)
            try:
                sock.settimeout(_FOREVER if left is None else left)
                data = sock.recv(1 << 16)
            except socket.timeout:
                raise ContactdError(pb.DEADLINE_EXCEEDED, "no reply within the timeout", remote=False) from None
            except OSError as e:
                raise self._lost(e.strerror or str(e)) from None
            if not data:
                raise self._lost("the server closed the connection")
            self._buf += data
