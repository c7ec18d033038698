"""Client and Stream: the requests of the protocol over a Transport, replies
dispatched to whoever waits for them, and recovery from a server that went
away (restart, upgrade, lost replica).

Threads. A Client is safe to share between threads: any number may call
its methods at once (queries, registrations, stream updates and results).
There is no background thread. Whichever caller is waiting reads the
socket for everyone: it takes each reply off the wire and hands it to its
request's slot (by request id) or to its stream's queue (by stream id),
then wakes the others, and the next waiting caller reads when it returns.
So a single-threaded controller pays no thread hand-off per tick, a
controller with a reader thread (one thread calling Stream.latest(), one
sending updates) works, and reconnecting stays in the calling thread.

Timeouts. Every request method takes ``timeout``: seconds for that call;
None (the default) means the client's ``timeout`` (Client(timeout=...),
60 s unless given; None there means no limit), and ``math.inf`` waits for
ever. A timeout raises ContactdError DEADLINE_EXCEEDED and leaves the
connection usable: a reply that comes later is dropped.

Streams. Each Stream has its own queue: its result() returns its own next
result, never another stream's. Results carry their update's ``sequence``
and come in increasing order; ``stale`` says a newer update was sent;
latest() returns the newest result and discards the older ones. An error
about an update (it names the stream and the sequence) is raised by
result() / latest() at its place in the stream's order.

Recovery, in three parts (client/README.md, "Surviving the server"):

- a request in flight when the connection breaks raises ConnectionLost
  (retryable); the next call reconnects (Transport: every address in turn,
  capped exponential backoff with jitter). With ``retry_idempotent=True``
  the idempotent requests (query, register, has, stats, hello, opening a
  stream) are sent once more on the new connection instead;
- a query or stream naming geometry this client registered, answered
  NOT_FOUND (a server without a store, or whose store lost it), registers
  that geometry again from Registrations and is sent again;
- streams open at the break are opened again on the new connection with the
  same bodies at the last states sent, and the caller is told: the stream's
  ``on_reopen``, else the client's ``on_event``, else StreamReopened raised
  once by Stream.result().
"""
import collections
import math
import os
import threading
import time
from typing import Any, Callable, Deque, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from ._pb import pb
from .arrays import pair_arrays_from_messages, stream_update_arrays_request
from .errors import ConnectionLost, ContactdError, StreamReopened
from .messages import (BodyLike, ContactModel, Detail, GeometryRef, HelloResult, PairResult, Pairs, QueryResult,
                       RegisterResult, Representation, State, StreamResult, close_stream_request, geometry_id,
                       has_request, hello_request, open_stream_request, query_request, register_request,
                       release_request, stats_request, stream_update_request)
from .recovery import (GeometryReregisteredEvent, ReconnectedEvent, Registrations, StreamReopenedEvent,
                       body_field, geometry_ids, missing_geometry)
from .transport import Backoff, Transport

DEFAULT_ADDR = "127.0.0.1:7411"
_NOT_FOUND_ROUNDS = 2  # registrations again, then the request again, per call
T = TypeVar("T")
Event = Union[ReconnectedEvent, GeometryReregisteredEvent, StreamReopenedEvent]


def _deadline_exceeded() -> ContactdError:
    return ContactdError(pb.DEADLINE_EXCEEDED, "no reply within the timeout", remote=False)


class _Slot:
    """Where the reply to one request is put."""
    __slots__ = ("reply",)

    def __init__(self) -> None:
        self.reply: Optional[object] = None

    def get(self) -> Optional[object]:
        return self.reply


class Client:
    """A connection to contactd, safe to share between threads (see the
    module's text).

    addr: "host:port", "unix:/path", or several (a list, or one string
    separated by commas) tried in turn; default $CONTACTD_ADDR, else
    127.0.0.1:7411. The first connection tries each address once and raises
    ContactdError (UNAVAILABLE) when none answers.

    timeout: the default of every call's ``timeout`` (None: no limit).
    reconnect: True (Backoff's defaults), a Backoff, or False (a lost
    connection stays lost). retry_idempotent: send an idempotent request
    once more after ConnectionLost. keep_registrations: bytes of
    registrations kept to register them again (0: none). on_event: called
    with each ReconnectedEvent, GeometryReregisteredEvent and
    StreamReopenedEvent (also kept, the last 100, in ``events``); an
    exception it raises propagates out of the call that recovered."""

    def __init__(self, addr: Union[None, str, Sequence[str]] = None, timeout: Optional[float] = 60.0,
                 connect_timeout: float = 5.0, max_frame: int = 256 << 20, *,
                 reconnect: Union[bool, Backoff] = True, retry_idempotent: bool = False,
                 keep_registrations: int = 64 << 20, on_event: Optional[Callable[[Event], None]] = None):
        addr = addr or os.environ.get("CONTACTD_ADDR") or DEFAULT_ADDR
        backoff = Backoff() if reconnect is True else (reconnect or None)
        self._t = Transport(addr, timeout, connect_timeout, max_frame, backoff)
        self.retry_idempotent = retry_idempotent
        self.on_event = on_event
        self.registrations = Registrations(keep_registrations)
        self.events: Deque[Event] = collections.deque(maxlen=100)
        # _lock guards the state below; _cond wakes waiters when a reply
        # was dispatched or the connection was lost. _conn_lock serializes
        # reconnecting (and reopening streams); _send_lock whole frames.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._conn_lock = threading.RLock()
        self._send_lock = threading.Lock()
        self._reading = False      # a caller is reading the socket for everyone
        self._epoch = 0            # connections lost so far
        self._loss: Optional[ConnectionLost] = None
        self._pending: Dict[int, _Slot] = {}
        self._next_rid = 1
        self._streams: Dict[int, "Stream"] = {}  # stream id -> Stream open on this connection
        self._reopen: List["Stream"] = []  # streams of a broken connection, to open again
        self._t.connect()
        self._t.handshake = self._handshake

    @property
    def addr(self) -> str:
        """The address of the server in use (or tried last)."""
        return self._t.address

    @property
    def addresses(self) -> List[str]:
        return list(self._t.addresses)

    @property
    def generation(self) -> int:
        """How many connections this client has made (1 before any break)."""
        return self._t.generation

    @property
    def timeout(self) -> Optional[float]:
        """The default of every call's timeout, s (None: no limit); also
        bounds a send."""
        return self._t.timeout

    @timeout.setter
    def timeout(self, v: Optional[float]) -> None:
        self._t.timeout = v

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        t = self.timeout if timeout is None else timeout
        if t is None or math.isinf(t):
            return None
        if t < 0:
            raise ContactdError(pb.INVALID_ARGUMENT, "timeout: %r is negative (None: the client's timeout, "
                                "math.inf: no limit)" % t, "timeout", remote=False)
        return time.monotonic() + t

    # context manager
    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection for good (no reconnect after this)."""
        self._t.close()
        with self._cond:
            self._lost(ConnectionLost("the client was closed", retryable=False, address=self._t.address))

    # -- recovery --
    def _emit(self, ev: Event) -> None:
        self.events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    def _ready(self) -> None:
        """Connected, with the streams of a broken connection reopened."""
        with self._conn_lock:
            if self._t.closed:
                raise ConnectionLost("the client was closed", retryable=False, address=self._t.address)
            if not self._t.connected:
                prev, broken_at = self._t.address, self._t.broken_at
                with self._cond:
                    self._lost(ConnectionLost("connection to %s lost" % prev, address=prev))
                rounds = self._t.reconnect()
                with self._cond:
                    self._reopen.extend(self._streams.values())
                    self._streams.clear()
                self._emit(ReconnectedEvent(self._t.address, prev, self._t.generation, rounds,
                                            time.monotonic() - broken_at))
            while self._reopen:
                self._reopen_stream(self._reopen[0])

    def _reopen_stream(self, s: "Stream") -> None:
        old, env, err = s.id, s._open_envelope(), None
        r: Any = None
        try:
            r = self._call_restoring(env, "open_stream_reply", None)
        except ConnectionLost:
            raise
        except ContactdError as e:
            err = e
        self._reopen.remove(s)
        with self._cond:
            s._results.clear()
            if err is None:
                s.id = r.stream_id
                self._streams[s.id] = s
            else:
                s.closed, s._failed = True, err
        s.reopens += 1
        ev = StreamReopenedEvent(s, old, s.id if err is None else 0, self._t.address, s.sequence,
                                 s.last_result_sequence, err)
        s.last_reopen = ev
        if s.on_reopen is None and self.on_event is None:
            s._untold = ev
        self._emit(ev)
        if s.on_reopen is not None:
            s.on_reopen(ev)

    def _register_again(self, env: Any, err: ContactdError, deadline: Optional[float]) -> bool:
        """After NOT_FOUND for a geometry id of env: register again the kept
        geometry the server lacks. True when env is to be sent again (the
        id is kept here)."""
        lacking = missing_geometry(env, err)
        if lacking is None or lacking not in self.registrations:
            return False  # not registered through this client (or no longer kept)
        ids = [g for g in geometry_ids(env) if g in self.registrations]
        missing: List[str] = list(self._call_once(has_request(ids), "has_geometry_reply", deadline).missing)
        done: List[str] = []
        for gid in missing:
            try:
                reg = self.registrations.envelope(gid)
            except (OSError, ContactdError):
                continue  # its source is gone: the caller gets the NOT_FOUND
            rep = self._call_once(reg, "register_reply", deadline)
            if rep.geometry_id != gid:
                self.registrations.discard([gid])
                raise ContactdError(pb.NOT_FOUND, "geometry %s is unknown to %s, and registering it again from "
                                    "its source gave %s (the source changed)" % (gid, self._t.address,
                                                                                rep.geometry_id),
                                    body_field(env, gid), remote=False) from err
            done.append(gid)
        if done:
            self._emit(GeometryReregisteredEvent(self._t.address, done))
        return True  # also when none was missing: another client registered it meanwhile

    # -- the socket, shared --
    def _lost(self, e: ConnectionLost) -> None:
        """(under _cond) The connection is gone: every waiter raises e."""
        self._epoch += 1
        self._loss = e
        self._pending.clear()
        self._cond.notify_all()

    def _send(self, env: Any) -> None:
        body = env.SerializeToString()
        try:
            with self._send_lock:
                self._t.send(body)
        except ConnectionLost as e:
            with self._cond:
                self._lost(e)
            raise

    def _dispatch(self, env: Any) -> None:
        """(under _cond) Hand one message from the server to its waiter."""
        case = env.WhichOneof("msg")
        if case == "stream_result":
            s = self._streams.get(env.stream_result.stream_id)
            if s is not None:
                s._results.append(env)
        elif case == "error" and env.error.stream_id:
            s = self._streams.get(env.error.stream_id)
            if s is not None:
                s._results.append(env)
        elif case != "register_progress":
            slot = self._pending.get(env.request_id)
            if slot is not None:
                slot.reply = env
        self._cond.notify_all()

    def _wait(self, ready: Callable[[], Optional[T]], deadline: Optional[float], epoch: int) -> T:
        """ready()'s first value that is not None (called under _cond),
        reading the socket for every waiter while no other caller does."""
        while True:
            with self._cond:
                v = ready()
                if v is not None:
                    return v
                if self._epoch != epoch:
                    assert self._loss is not None
                    raise ConnectionLost(self._loss.message, self._loss.retryable, self._loss.address)
                if self._reading:
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise _deadline_exceeded()
                    self._cond.wait(left)
                    continue
                self._reading = True
            try:
                body = self._t.recv(deadline)
            except ConnectionLost as e:
                with self._cond:
                    self._reading = False
                    if self._epoch == epoch:
                        self._lost(e)
                raise
            except BaseException:
                with self._cond:
                    self._reading = False
                    if not self._t.connected and self._epoch == epoch:  # a malformed frame dropped it
                        self._lost(ConnectionLost("connection to %s dropped" % self._t.address,
                                                  address=self._t.address))
                    self._cond.notify_all()
                raise
            env = pb.Envelope()
            env.ParseFromString(body)
            with self._cond:
                self._reading = False
                self._dispatch(env)

    @staticmethod
    def _error(err: Any) -> ContactdError:
        return ContactdError(err.code or pb.UNKNOWN, err.message, err.field, remote=True, stream_id=err.stream_id,
                             sequence=err.sequence)

    def _handshake(self, deadline: float) -> None:
        self._call_once(hello_request("contactd_client.py (reconnect)"), "hello_reply", deadline)

    def _call_once(self, env: Any, want: str, deadline: Optional[float]) -> Any:
        slot = _Slot()
        with self._cond:
            rid = self._next_rid
            self._next_rid += 1
            self._pending[rid] = slot
            epoch = self._epoch
        env.request_id = rid
        try:
            self._send(env)
            rep: Any = self._wait(slot.get, deadline, epoch)
        finally:
            with self._cond:
                self._pending.pop(rid, None)
        case = rep.WhichOneof("msg")
        if case == "error":
            raise self._error(rep.error)
        if case != want:
            raise ContactdError(pb.INTERNAL, "unexpected reply %s (wanted %s)" % (case, want), remote=False)
        return getattr(rep, want)

    def _call_restoring(self, env: Any, want: str, deadline: Optional[float]) -> Any:
        """_call_once, registering again kept geometry the server lacks."""
        rounds = 0
        while True:
            try:
                rep = self._call_once(env, want, deadline)
                self.registrations.touch(geometry_ids(env))
                return rep
            except ConnectionLost:
                raise
            except ContactdError as e:
                if rounds >= _NOT_FOUND_ROUNDS or not self._register_again(env, e, deadline):
                    raise
                rounds += 1

    def call(self, env: Any, want: str, *, idempotent: bool = False, timeout: Optional[float] = None) -> Any:
        """Send an Envelope (request_id is set here) and return the payload
        of its reply, which must be the oneof member ``want``. Reconnects
        first when the connection was lost; ConnectionLost when it breaks
        meanwhile (sent once more first when idempotent and the client
        retries idempotent requests). timeout: as every method's."""
        deadline = self._deadline(timeout)
        tries = 2 if idempotent and self.retry_idempotent else 1
        for k in range(tries):
            try:
                self._ready()
                return self._call_restoring(env, want, deadline)
            except ConnectionLost as e:
                if k + 1 >= tries or not e.retryable:
                    raise
        raise AssertionError("unreachable")

    # -- requests --
    def hello(self, client_name: str = "contactd_client.py", *, timeout: Optional[float] = None) -> HelloResult:
        """The server's version, limits (by their configuration names) and
        capabilities."""
        r = self.call(hello_request(client_name), "hello_reply", idempotent=True, timeout=timeout)
        limits = {n.name: n.value for n in r.config_limits}
        units = {n.name: n.unit for n in r.config_limits}
        if not limits:  # a server older than config_limits: the protocol-1 names
            limits = {f.name: getattr(r.limits, f.name) for f in r.limits.DESCRIPTOR.fields}
        return HelloResult(r.server_version, r.protocol_version, limits, units, list(r.capabilities),
                           getattr(r, "store", ""))

    def register(self, shape: str, *, timeout: Optional[float] = None, **kw: Any) -> RegisterResult:
        """Register a geometry (arguments: register_request). The
        registration is kept (Registrations) to be sent again to a server
        that lacks it; a mesh given by path is read again from the file."""
        env = register_request(shape, **kw)
        rep = self.call(env, "register_reply", idempotent=True, timeout=timeout)
        gid: str = rep.geometry_id
        if shape == "mesh" and kw.get("path") and kw.get("data") is None:
            self.registrations.add(gid, None, rebuild=lambda: register_request(shape, **kw),
                                   source_size=len(str(kw["path"])) + 64)
        else:
            self.registrations.add(gid, env)
        st = {f.name: getattr(rep.stats, f.name) for f in rep.stats.DESCRIPTOR.fields}
        return RegisterResult(gid, rep.already_cached, st)

    # Each register_* returns the RegisterResult (Body takes it as geometry).
    def register_sphere(self, radius: float, **kw: Any) -> RegisterResult:
        return self.register("sphere", radius=radius, **kw)

    def register_box(self, size: Sequence[float], **kw: Any) -> RegisterResult:
        return self.register("box", size=size, **kw)

    def register_cylinder(self, radius: float, length: float, **kw: Any) -> RegisterResult:
        return self.register("cylinder", radius=radius, length=length, **kw)

    def register_capsule(self, radius: float, length: float, **kw: Any) -> RegisterResult:
        return self.register("capsule", radius=radius, length=length, **kw)

    def register_ellipsoid(self, semi_axes: Sequence[float], **kw: Any) -> RegisterResult:
        return self.register("ellipsoid", semi_axes=semi_axes, **kw)

    def register_half_space(self, **kw: Any) -> RegisterResult:
        return self.register("half_space", **kw)

    def register_mesh(self, path: Optional[str] = None, data: Optional[bytes] = None, **kw: Any) -> RegisterResult:
        return self.register("mesh", path=path, data=data, **kw)

    def register_heightfield(self, heights: Any, dx: float, **kw: Any) -> RegisterResult:
        """A rigid terrain: heights[j][i] at (origin + (i dx, j dy))."""
        return self.register("heightfield", heights=heights, dx=dx, **kw)

    def has(self, ids: Iterable[GeometryRef], *, timeout: Optional[float] = None) -> List[str]:
        """The ids the server does not hold."""
        return list(self.call(has_request(ids), "has_geometry_reply", idempotent=True, timeout=timeout).missing)

    def ensure(self, specs: Sequence[Tuple[Optional[str], str, Dict[str, Any]]], *,
               timeout: Optional[float] = None) -> List[str]:
        """Register these specs unless the server holds them already.

        specs: (known_id or None, shape, register_request keywords) each;
        known_id is the id an earlier registration returned, on this server
        or on another replica sharing its geometry store. One HasGeometry
        asks for every known id; only the specs the server lacks (and those
        with no id yet) are registered. Returns the ids, in order, so a
        client that reconnects to another replica recovers in one round
        trip when the store holds its geometry."""
        known = [k for k, _, _ in specs if k]
        missing = set(self.has(known, timeout=timeout)) if known else set()
        out = []
        for k, shape, kw in specs:
            if k and k not in missing:
                out.append(k)
            else:
                out.append(self.register(shape, timeout=timeout, **kw).geometry_id)
        return out

    def release(self, ids: Iterable[GeometryRef], *, timeout: Optional[float] = None) -> Tuple[List[str], List[str]]:
        """Drop this connection's references: (released, unknown). The
        client no longer registers them again."""
        gids = [geometry_id(g) for g in ids]
        r = self.call(release_request(gids), "release_reply", timeout=timeout)
        self.registrations.discard(gids)
        return list(r.released), list(r.unknown)

    def query(self, bodies: Iterable[BodyLike], pairs: Pairs = None, *, margin: float = 0.0,
              detail: Union[Detail, str, None] = None, representation: Union[Representation, str, None] = None,
              point_contacts: bool = False, stiction_tolerance: Optional[float] = None,
              contact_model: Union[ContactModel, str, None] = None, energy: bool = False, jacobian: bool = False,
              publish: str = "", reduce: int = 0, timeout: Optional[float] = None) -> QueryResult:
        """Contact for bodies (Body or dicts of its fields); pairs = [(a, b),
        ...] or None for all pairs by the server's broad phase. detail:
        Detail (or "wrench" | "patches" | "surface"); representation,
        contact_model likewise; energy: strain energy per pair and patch;
        jacobian: each PairResult.jacobian holds the wrench Jacobians;
        publish: a scene name for the viewer; reduce: K, at most K point
        contacts per patch in PairResult.reduced_contacts."""
        env = query_request(bodies, pairs, margin=margin, detail=detail, representation=representation,
                            point_contacts=point_contacts, stiction_tolerance=stiction_tolerance,
                            contact_model=contact_model, energy=energy, jacobian=jacobian, publish=publish,
                            reduce=reduce)
        r = self.call(env, "contact_reply", idempotent=True, timeout=timeout)
        return QueryResult([PairResult._from(p) for p in r.results], r.compute_time_us, r.candidate_pairs)

    def stats(self, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        r = self.call(stats_request(), "stats_reply", idempotent=True, timeout=timeout)
        d = {f.name: getattr(r, f.name) for f in r.DESCRIPTOR.fields if f.name not in ("latency", "worker_utilisation")}
        d["worker_utilisation"] = list(r.worker_utilisation)
        d["latency"] = [(b.upper_bound_us, b.count) for b in r.latency]
        return d

    def stream(self, bodies: Iterable[BodyLike], pairs: Pairs = None, *, latest_only: bool = False,
               margin: float = 0.0, on_reopen: Optional[Callable[[StreamReopenedEvent], None]] = None,
               detail: Union[Detail, str, None] = None, representation: Union[Representation, str, None] = None,
               point_contacts: bool = False, contact_model: Union[ContactModel, str, None] = None,
               energy: bool = False, jacobian: bool = False, publish: str = "", reduce: int = 0,
               timeout: Optional[float] = None) -> "Stream":
        """Open a stream (bodies and options fixed once; options as query's).
        See Stream. on_reopen(StreamReopenedEvent) is called when the client
        opened it again on a new connection."""
        blist = list(bodies)
        env = open_stream_request(blist, pairs, latest_only=latest_only, margin=margin, detail=detail,
                                  representation=representation, point_contacts=point_contacts,
                                  contact_model=contact_model, energy=energy, jacobian=jacobian, publish=publish,
                                  reduce=reduce)
        r = self.call(env, "open_stream_reply", idempotent=True, timeout=timeout)
        s = Stream(self, r.stream_id, env, on_reopen)
        with self._cond:
            self._streams[s.id] = s
        return s

    # used by Stream
    def _stream_check(self, s: "Stream") -> None:
        self._ready()
        if s._failed is not None:
            raise s._failed
        if s._untold is not None:
            ev, s._untold = s._untold, None
            raise StreamReopened(ev)

    def _stream_next(self, s: "Stream", latest: bool, timeout: Optional[float], arrays: bool) -> StreamResult:
        self._stream_check(s)
        deadline = self._deadline(timeout)
        with self._cond:
            epoch = self._epoch
        skipped = 0

        def take() -> Optional[Any]:
            """(under _cond) The result to hand out, or None to wait."""
            nonlocal skipped
            while s._results:
                env = s._results.popleft()
                if env.WhichOneof("msg") == "error":
                    return env
                if env.stream_result.sequence <= s.last_result_sequence:
                    skipped += 1  # never handed out as new: older than one already given
                    continue
                if latest and s._results and s._results[0].WhichOneof("msg") != "error":
                    skipped += 1
                    continue
                return env
            return None
        env: Any = self._wait(take, deadline, epoch)
        if env.WhichOneof("msg") == "error":
            raise self._error(env.error)
        r = env.stream_result
        with self._cond:
            s.last_result_sequence = r.sequence
            queued = len(s._results)
        if arrays:
            return StreamResult(r.stream_id, r.sequence, r.dropped_updates, [], r.compute_time_us, s.sequence, queued,
                                skipped, pair_arrays_from_messages(r.results))
        return StreamResult(r.stream_id, r.sequence, r.dropped_updates, [PairResult._from(p) for p in r.results],
                            r.compute_time_us, s.sequence, queued, skipped)

    def _stream_close(self, s: "Stream", timeout: Optional[float]) -> Dict[str, int]:
        with self._cond:
            if s in self._reopen:
                self._reopen.remove(s)
            if not self._t.connected or self._streams.get(s.id) is not s:
                return {}
        try:
            r = self.call(close_stream_request(s.id), "close_stream_reply", timeout=timeout)
        except ConnectionLost:
            return {}  # the stream went with the connection
        finally:
            with self._cond:
                self._streams.pop(s.id, None)
        return dict(updates=r.updates, results=r.results, dropped_updates=r.dropped_updates)


class Stream:
    """An open stream: update() / update_arrays() send new states (no
    waiting), result() returns this stream's next result, latest() its
    newest (discarding older ones), close() closes it (also on leaving a
    ``with`` block). Updates are sent with request id 0: their results and
    errors name the stream and the update's sequence. When the connection
    breaks the client opens it again on the new one (``id`` changes,
    ``reopens`` counts, ``last_reopen`` is the StreamReopenedEvent) with the
    bodies at the last states sent."""

    def __init__(self, client: Client, stream_id: int, open_env: Any = None,
                 on_reopen: Optional[Callable[[StreamReopenedEvent], None]] = None):
        self.client = client
        self.id = stream_id
        self.sequence = 0              # of the last update sent
        self.last_result_sequence = 0  # of the last result handed out
        self.closed = False
        self.on_reopen = on_reopen
        self.reopens = 0
        self.last_reopen: Optional[StreamReopenedEvent] = None
        self.body_ids = frozenset(b.body_id for b in open_env.open_stream.bodies) if open_env is not None \
            else frozenset()
        self._open = open_env
        self._results: Deque[Any] = collections.deque()  # StreamResult / Error envelopes, in order
        self._states: Dict[int, List[Optional[bytes]]] = {}  # body id -> [pose, velocity], last sent
        self._untold: Optional[StreamReopenedEvent] = None
        self._failed: Optional[ContactdError] = None
        self._update_lock = threading.Lock()  # sequence numbers and sends in one order

    def _remember(self, update: Any) -> None:
        for b in update.bodies:
            st = self._states.setdefault(b.body_id, [None, None])
            if b.HasField("pose"):
                st[0] = b.pose.SerializeToString()
            if b.HasField("velocity"):
                st[1] = b.velocity.SerializeToString()

    def _open_envelope(self) -> Any:
        """The OpenStream that made this stream, with each body at the last
        state sent."""
        env = pb.Envelope()
        env.CopyFrom(self._open)
        env.ClearField("request_id")
        for b in env.open_stream.bodies:
            pose, vel = self._states.get(b.body_id, (None, None))
            if pose is not None:
                b.pose.ParseFromString(pose)
            if vel is not None:
                b.velocity.ParseFromString(vel)
        return env

    def _send_update(self, build: Callable[[int, int], Any], sequence: Optional[int]) -> int:
        if self.closed:
            raise ContactdError(pb.FAILED_PRECONDITION, "stream %d is closed" % self.id, remote=False)
        with self._update_lock:
            seq = self.sequence + 1 if sequence is None else int(sequence)
            if seq <= self.sequence:
                raise ContactdError(pb.INVALID_ARGUMENT, "sequence %d is not greater than the previous %d (stream %d)"
                                    % (seq, self.sequence, self.id), "sequence", remote=False)
            env = build(self.id, seq)  # raises on bad input: nothing sent
            self.client._stream_check(self)
            env.stream_update.stream_id = self.id  # (reopened meanwhile: the new id)
            self._remember(env.stream_update)
            self.client._send(env)
            self.sequence = seq  # sent (not when it raised: the caller sends it again)
        return seq

    def update(self, states: Mapping[int, State], sequence: Optional[int] = None) -> int:
        """states: {body_id: {"position": (x, y, z), "orientation": (w, x, y,
        z), "linear_velocity": ..., "angular_velocity": ...}}. Returns the
        sequence number used (default: previous + 1). A misspelled key, a
        value of the wrong length, a body not in the stream or a sequence
        not above the last raise ContactdError at once, naming it."""
        return self._send_update(lambda sid, seq: stream_update_request(sid, seq, states, self.body_ids), sequence)

    def update_arrays(self, ids: Any, poses: Any = None, velocities: Any = None,
                      sequence: Optional[int] = None) -> int:
        """N bodies at once (needs numpy): ids (N,), poses (N, 7) rows of x,
        y, z, qw, qx, qy, qz, velocities (N, 6) rows of angular then linear
        velocity; either may be None (unchanged). The same message, bit for
        bit, as update() with the same numbers."""
        return self._send_update(
            lambda sid, seq: stream_update_arrays_request(sid, seq, ids, poses, velocities, self.body_ids), sequence)

    def result(self, timeout: Optional[float] = None, *, arrays: bool = False) -> StreamResult:
        """This stream's next result, in order (timeout: seconds; None = the
        client's timeout; math.inf = no limit). Each result has a higher
        sequence than the one before; ``stale`` says a newer update was
        sent, ``queued`` how many newer results wait. An error about one of
        this stream's updates is raised in its place. Raises StreamReopened
        once after an untold reopening (see Client). arrays=True (needs
        numpy): the pairs only as ``pair_arrays`` (``arrays()``), ``pairs``
        left empty, for many pairs at a high rate (no PairResult objects)."""
        return self.client._stream_next(self, False, timeout, arrays)

    def latest(self, timeout: Optional[float] = None, *, arrays: bool = False) -> StreamResult:
        """The newest result received: waits (as result()) until there is
        one, then discards the older ones (counted in ``skipped``)."""
        return self.client._stream_next(self, True, timeout, arrays)

    def close(self, timeout: Optional[float] = None) -> Dict[str, int]:
        if self.closed:
            return {}
        self.closed = True
        return self.client._stream_close(self, timeout)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.client._t.closed:
            self.close()
