"""Client and Stream: the requests of the protocol over a Transport, and
recovery from a server that went away (restart, upgrade, lost replica).

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
import os
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ._pb import pb
from .errors import ConnectionLost, ContactdError, StreamReopened
from .messages import (PairResult, QueryResult, RegisterResult, StreamResult, close_stream_request,
                       has_request, hello_request, open_stream_request, query_request, register_request,
                       release_request, stats_request, stream_update_request)
from .recovery import (GeometryReregisteredEvent, ReconnectedEvent, Registrations, StreamReopenedEvent,
                       body_field, geometry_ids, missing_geometry)
from .transport import Backoff, Transport

DEFAULT_ADDR = "127.0.0.1:7411"
_STREAM_RID_BIT = 1 << 63
_NOT_FOUND_ROUNDS = 2  # registrations again, then the request again, per call


class Client:
    """A blocking connection to contactd. Not thread-safe: one per thread.

    addr: "host:port", "unix:/path", or several (a list, or one string
    separated by commas) tried in turn; default $CONTACTD_ADDR, else
    127.0.0.1:7411. The first connection tries each address once and raises
    ContactdError (UNAVAILABLE) when none answers.

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
                 keep_registrations: int = 64 << 20, on_event: Optional[Callable] = None):
        addr = addr or os.environ.get("CONTACTD_ADDR") or DEFAULT_ADDR
        backoff = Backoff() if reconnect is True else (reconnect or None)
        self._t = Transport(addr, timeout, connect_timeout, max_frame, backoff)
        self.retry_idempotent = retry_idempotent
        self.on_event = on_event
        self.registrations = Registrations(keep_registrations)
        self.events: collections.deque = collections.deque(maxlen=100)
        self._queue: List = []
        self._next_rid = 1
        self._next_stream_rid = 1
        self._stream_rids: Dict[int, int] = {}  # open request id -> stream id, this connection
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
        return self._t.timeout

    @timeout.setter
    def timeout(self, v: Optional[float]) -> None:
        self._t.timeout = v

    # context manager
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Close the connection for good (no reconnect after this)."""
        self._t.close()

    # -- recovery --
    def _emit(self, ev) -> None:
        self.events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    def _ready(self) -> None:
        """Connected, with the streams of a broken connection reopened."""
        if self._t.closed:
            raise ConnectionLost("the client was closed", retryable=False, address=self._t.address)
        if not self._t.connected:
            prev, broken_at = self._t.address, self._t.broken_at
            rounds = self._t.reconnect()
            self._queue.clear()
            self._stream_rids.clear()
            self._reopen.extend(self._streams.values())
            self._streams.clear()
            self._emit(ReconnectedEvent(self._t.address, prev, self._t.generation, rounds,
                                        time.monotonic() - broken_at))
        while self._reopen:
            self._reopen_stream(self._reopen[0])

    def _reopen_stream(self, s: "Stream") -> None:
        old, env, err = s.id, s._open_envelope(), None
        try:
            r = self._call_restoring(env, "open_stream_reply")
        except ConnectionLost:
            raise
        except ContactdError as e:
            err = e
        self._reopen.remove(s)
        if err is None:
            self._stream_rids[env.request_id] = r.stream_id
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

    def _register_again(self, env, err) -> bool:
        """After NOT_FOUND for a geometry id of env: register again the kept
        geometry the server lacks. True when env is to be sent again (the
        id is kept here)."""
        gid = missing_geometry(env, err)
        if gid not in self.registrations:
            return False  # not registered through this client (or no longer kept)
        ids = [g for g in geometry_ids(env) if g in self.registrations]
        missing = list(self._call_once(has_request(ids), "has_geometry_reply").missing)
        done = []
        for gid in missing:
            try:
                reg = self.registrations.envelope(gid)
            except (OSError, ContactdError):
                continue  # its source is gone: the caller gets the NOT_FOUND
            rep = self._call_once(reg, "register_reply")
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

    # -- requests and replies --
    def _recv(self, deadline: Optional[float]):
        env = pb.Envelope()
        env.ParseFromString(self._t.recv(deadline))
        return env

    def _is_stream_rid(self, rid):
        return bool(rid & _STREAM_RID_BIT) or rid in self._stream_rids

    @staticmethod
    def _raise(err):
        raise ContactdError(err.code or pb.UNKNOWN, err.message, err.field, remote=True, stream_id=err.stream_id,
                            sequence=err.sequence)

    def _handshake(self, deadline: float) -> None:
        self._call_once(hello_request("contactd_client.py (reconnect)"), "hello_reply", deadline)

    def _call_once(self, env, want: str, deadline: Optional[float] = None):
        rid = self._next_rid
        self._next_rid += 1
        env.request_id = rid
        self._t.send(env.SerializeToString())
        if deadline is None and self._t.timeout is not None:
            deadline = time.monotonic() + self._t.timeout
        while True:
            rep = self._recv(deadline)
            case = rep.WhichOneof("msg")
            if rep.request_id != rid or case == "stream_result":
                if case == "stream_result" or (case == "error" and self._is_stream_rid(rep.request_id)):
                    self._queue.append(rep)
                continue
            if case == "register_progress":
                continue
            if case == "error":
                self._raise(rep.error)
            if case != want:
                raise ContactdError(pb.INTERNAL, "unexpected reply %s (wanted %s)" % (case, want), remote=False)
            return getattr(rep, want)

    def _call_restoring(self, env, want: str):
        """_call_once, registering again kept geometry the server lacks."""
        rounds = 0
        while True:
            try:
                rep = self._call_once(env, want)
                self.registrations.touch(geometry_ids(env))
                return rep
            except ConnectionLost:
                raise
            except ContactdError as e:
                if rounds >= _NOT_FOUND_ROUNDS or not self._register_again(env, e):
                    raise
                rounds += 1

    def call(self, env, want: str, *, idempotent: bool = False):
        """Send an Envelope (request_id is set here) and return the payload
        of its reply, which must be the oneof member ``want``. Reconnects
        first when the connection was lost; ConnectionLost when it breaks
        meanwhile (sent once more first when idempotent and the client
        retries idempotent requests)."""
        tries = 2 if idempotent and self.retry_idempotent else 1
        for k in range(tries):
            try:
                self._ready()
                return self._call_restoring(env, want)
            except ConnectionLost as e:
                if k + 1 >= tries or not e.retryable:
                    raise

    # -- requests --
    def hello(self, client_name: str = "contactd_client.py") -> dict:
        r = self.call(hello_request(client_name), "hello_reply", idempotent=True)
        lim = {f.name: getattr(r.limits, f.name) for f in r.limits.DESCRIPTOR.fields}
        return dict(server_version=r.server_version, protocol_version=r.protocol_version,
                    limits=lim, capabilities=list(r.capabilities), store=getattr(r, "store", ""))

    def register(self, shape: str, **kw) -> RegisterResult:
        """Register a geometry (arguments: register_request). The
        registration is kept (Registrations) to be sent again to a server
        that lacks it; a mesh given by path is read again from the file."""
        env = register_request(shape, **kw)
        rep = self.call(env, "register_reply", idempotent=True)
        gid = rep.geometry_id
        if shape == "mesh" and kw.get("path") and kw.get("data") is None:
            self.registrations.add(gid, None, rebuild=lambda: register_request(shape, **kw),
                                   source_size=len(str(kw["path"])) + 64)
        else:
            self.registrations.add(gid, env)
        st = {f.name: getattr(rep.stats, f.name) for f in rep.stats.DESCRIPTOR.fields}
        return RegisterResult(gid, rep.already_cached, st)

    def register_sphere(self, radius, **kw) -> str:
        return self.register("sphere", radius=radius, **kw).geometry_id

    def register_box(self, size, **kw) -> str:
        return self.register("box", size=size, **kw).geometry_id

    def register_cylinder(self, radius, length, **kw) -> str:
        return self.register("cylinder", radius=radius, length=length, **kw).geometry_id

    def register_capsule(self, radius, length, **kw) -> str:
        return self.register("capsule", radius=radius, length=length, **kw).geometry_id

    def register_ellipsoid(self, semi_axes, **kw) -> str:
        return self.register("ellipsoid", semi_axes=semi_axes, **kw).geometry_id

    def register_half_space(self, **kw) -> str:
        return self.register("half_space", **kw).geometry_id

    def register_mesh(self, path=None, data=None, **kw) -> str:
        return self.register("mesh", path=path, data=data, **kw).geometry_id

    def register_heightfield(self, heights, dx, **kw) -> str:
        """A rigid terrain: heights[j][i] at (origin + (i dx, j dy))."""
        return self.register("heightfield", heights=heights, dx=dx, **kw).geometry_id

    def has(self, ids: Iterable[str]) -> List[str]:
        """The ids the server does not hold."""
        return list(self.call(has_request(ids), "has_geometry_reply", idempotent=True).missing)

    def ensure(self, specs: Sequence[Tuple[Optional[str], str, dict]]) -> List[str]:
        """Register these specs unless the server holds them already.

        specs: (known_id or None, shape, register_request keywords) each;
        known_id is the id an earlier registration returned, on this server
        or on another replica sharing its geometry store. One HasGeometry
        asks for every known id; only the specs the server lacks (and those
        with no id yet) are registered. Returns the ids, in order, so a
        client that reconnects to another replica recovers in one round
        trip when the store holds its geometry."""
        known = [k for k, _, _ in specs if k]
        missing = set(self.has(known)) if known else set()
        out = []
        for k, shape, kw in specs:
            if k and k not in missing:
                out.append(k)
            else:
                out.append(self.register(shape, **kw).geometry_id)
        return out

    def release(self, ids: Iterable[str]) -> Tuple[List[str], List[str]]:
        """Drop this connection's references: (released, unknown). The
        client no longer registers them again."""
        ids = list(ids)
        r = self.call(release_request(ids), "release_reply")
        self.registrations.discard(ids)
        return list(r.released), list(r.unknown)

    def query(self, bodies, pairs: Optional[Sequence[Tuple[int, int]]] = None, *,
              margin: float = 0.0, **options) -> QueryResult:
        """Contact for bodies (Body or dicts of its fields); pairs = [(a, b),
        ...] or None for all pairs by the server's broad phase. options:
        detail ("wrench" | "patches" | "surface"), representation
        ("polygon" | "triangle"), point_contacts, stiction_tolerance,
        contact_model ("hydroelastic" | "point" | ...), energy (strain
        energy per pair and patch: PairResult.strain_energy), jacobian (True: each
        PairResult.jacobian holds the wrench Jacobians), reduce (K: at most K
        point contacts per patch in PairResult.reduced_contacts)."""
        r = self.call(query_request(bodies, pairs, margin=margin, **options), "contact_reply", idempotent=True)
        return QueryResult([PairResult._from(p) for p in r.results], r.compute_time_us, r.candidate_pairs)

    def stats(self) -> dict:
        r = self.call(stats_request(), "stats_reply", idempotent=True)
        d = {f.name: getattr(r, f.name) for f in r.DESCRIPTOR.fields if f.name not in ("latency", "worker_utilisation")}
        d["worker_utilisation"] = list(r.worker_utilisation)
        d["latency"] = [(b.upper_bound_us, b.count) for b in r.latency]
        return d

    def stream(self, bodies, pairs=None, *, latest_only: bool = False, margin: float = 0.0,
               on_reopen: Optional[Callable] = None, **options) -> "Stream":
        """Open a stream (bodies and options fixed once). See Stream.
        on_reopen(StreamReopenedEvent) is called when the client opened it
        again on a new connection."""
        env = open_stream_request(bodies, pairs, latest_only=latest_only, margin=margin, **options)
        r = self.call(env, "open_stream_reply", idempotent=True)
        self._stream_rids[env.request_id] = r.stream_id
        s = Stream(self, r.stream_id, env, on_reopen)
        self._streams[s.id] = s
        return s

    # used by Stream
    def _stream_update(self, s: "Stream", sequence: int, states):
        self._ready()
        if s._failed is not None:
            raise s._failed
        if s._untold is not None:
            ev, s._untold = s._untold, None
            raise StreamReopened(ev)
        env = stream_update_request(s.id, sequence, states)
        s._remember(env.stream_update)
        env.request_id = _STREAM_RID_BIT | self._next_stream_rid
        self._next_stream_rid += 1
        self._t.send(env.SerializeToString())

    def _stream_recv(self, timeout):
        self._ready()
        for s in list(self._streams.values()) + [s for s in self._reopen]:
            if s._untold is not None:
                ev, s._untold = s._untold, None
                raise StreamReopened(ev)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rep = self._queue.pop(0) if self._queue else self._recv(deadline)
            case = rep.WhichOneof("msg")
            if case == "stream_result":
                r = rep.stream_result
                s = self._streams.get(r.stream_id)
                if s is not None:
                    s.last_result_sequence = max(s.last_result_sequence, r.sequence)
                return StreamResult(r.stream_id, r.sequence, r.dropped_updates,
                                    [PairResult._from(p) for p in r.results], r.compute_time_us)
            if case == "error" and self._is_stream_rid(rep.request_id):
                self._raise(rep.error)

    def _stream_close(self, s: "Stream") -> dict:
        if not self._t.connected or self._streams.get(s.id) is not s:
            if s in self._reopen:
                self._reopen.remove(s)
            return {}
        try:
            r = self.call(close_stream_request(s.id), "close_stream_reply")
        except ConnectionLost:
            return {}  # the stream went with the connection
        finally:
            self._streams.pop(s.id, None)
        return dict(updates=r.updates, results=r.results, dropped_updates=r.dropped_updates)


class Stream:
    """An open stream: update() sends new states (no waiting), result()
    returns the next result in order, close() closes it (also on leaving a
    ``with`` block). When the connection breaks the client opens it again
    on the new one (``id`` changes, ``reopens`` counts, ``last_reopen`` is
    the StreamReopenedEvent) with the bodies at the last states sent."""

    def __init__(self, client: Client, stream_id: int, open_env=None, on_reopen: Optional[Callable] = None):
        self.client = client
        self.id = stream_id
        self.sequence = 0
        self.closed = False
        self.on_reopen = on_reopen
        self.reopens = 0
        self.last_reopen: Optional[StreamReopenedEvent] = None
        self.last_result_sequence = 0
        self._open = open_env
        self._states: Dict[int, list] = {}  # body id -> [pose or None, velocity or None], last sent
        self._untold: Optional[StreamReopenedEvent] = None
        self._failed: Optional[ContactdError] = None

    def _remember(self, update) -> None:
        for b in update.bodies:
            st = self._states.setdefault(b.body_id, [None, None])
            if b.HasField("pose"):
                st[0] = b.pose.SerializeToString()
            if b.HasField("velocity"):
                st[1] = b.velocity.SerializeToString()

    def _open_envelope(self):
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

    def update(self, states: Dict[int, dict], sequence: Optional[int] = None) -> int:
        """states: {body_id: {"position": ..., "orientation": ...,
        "linear_velocity": ..., "angular_velocity": ...}}. Returns the
        sequence number used (default: previous + 1)."""
        seq = self.sequence + 1 if sequence is None else sequence
        self.client._stream_update(self, seq, states)
        self.sequence = seq  # sent (not when it raised: the caller sends it again)
        return seq

    def result(self, timeout: Optional[float] = -1) -> StreamResult:
        """Next result of any stream on this connection (timeout in s; -1 =
        the client's timeout, None = forever). Raises StreamReopened once
        after an untold reopening (see Client)."""
        if self._failed is not None:
            raise self._failed
        return self.client._stream_recv(self.client.timeout if timeout == -1 else timeout)

    def close(self) -> dict:
        if self.closed:
            return {}
        self.closed = True
        return self.client._stream_close(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.client._t.closed:
            self.close()
