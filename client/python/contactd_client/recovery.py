"""What the client keeps and tells so that it survives a restart of the
server: the registrations it made (to register them again when a server
answers NOT_FOUND for one of their ids), and the events it reports to the
caller (a new connection, geometry registered again, a stream reopened)."""
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Optional, Tuple

from ._pb import pb

__all__ = ["Registrations", "ReconnectedEvent", "GeometryReregisteredEvent", "StreamReopenedEvent",
           "geometry_ids", "missing_geometry", "body_field"]


@dataclass
class ReconnectedEvent:
    """The client connected again after its connection broke: to
    ``address`` (``previous_address`` broke), its ``generation``-th
    connection, after ``rounds`` rounds over the addresses and
    ``downtime_s`` seconds without a connection."""
    address: str
    previous_address: str
    generation: int
    rounds: int
    downtime_s: float


@dataclass
class GeometryReregisteredEvent:
    """The server at ``address`` answered NOT_FOUND for geometry this client
    had registered, and the client registered it again (``geometry_ids``),
    then sent the request again."""
    address: str
    geometry_ids: List[str]


@dataclass
class StreamReopenedEvent:
    """A stream open on a connection that broke was opened again on the new
    one, with the same bodies at the last states sent: ``stream`` (the
    Stream; its ``id`` is now ``new_id``), ``old_id``. Results of the updates
    after ``last_result_sequence`` (up to ``last_update_sequence``) never
    came: send them again. ``error`` is set (and the stream closed) when it
    could not be reopened."""
    stream: Any
    old_id: int
    new_id: int
    address: str
    last_update_sequence: int
    last_result_sequence: int
    error: Optional[Exception] = None


@dataclass
class _Kept:
    size: int
    envelope: Optional[bytes] = None           # a RegisterGeometry Envelope, serialized
    rebuild: Optional[Callable[[], Any]] = None  # re-reads the source (a mesh file)


class Registrations:
    """The registrations made through one client, by geometry id, so that
    they can be sent again: the RegisterGeometry message itself, or for a
    mesh registered from a file, the file's path (read again when needed).
    Bounded by ``max_bytes`` (the messages' sizes): the least recently used
    are dropped first; 0 keeps nothing. A dropped id is not recovered: its
    NOT_FOUND reaches the caller."""

    def __init__(self, max_bytes: int = 64 << 20):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._kept: "OrderedDict[str, _Kept]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, gid: object) -> bool:
        return gid in self._kept

    def add(self, gid: str, env: Any, rebuild: Optional[Callable[[], Any]] = None, source_size: int = 0) -> None:
        """Keep env (a RegisterGeometry Envelope) for gid, or only rebuild
        (which makes it again, counted as source_size bytes)."""
        self.discard([gid])
        if rebuild is not None:
            k = _Kept(source_size, rebuild=rebuild)
        else:
            body = env.SerializeToString()
            k = _Kept(len(body), envelope=body)
        if k.size > self.max_bytes:
            return
        self._kept[gid] = k
        self.bytes += k.size
        while self.bytes > self.max_bytes:
            _, old = self._kept.popitem(last=False)
            self.bytes -= old.size

    def touch(self, ids: Iterable[str]) -> None:
        """Mark ids as used now (kept longest)."""
        for gid in ids:
            if gid in self._kept:
                self._kept.move_to_end(gid)

    def discard(self, ids: Iterable[str]) -> None:
        for gid in ids:
            k = self._kept.pop(gid, None)
            if k is not None:
                self.bytes -= k.size

    def envelope(self, gid: str) -> Any:
        """A fresh RegisterGeometry Envelope for gid (request_id unset), or
        None when gid is not kept."""
        k = self._kept.get(gid)
        if k is None:
            return None
        if k.rebuild is not None:
            return k.rebuild()
        env = pb.Envelope()
        env.ParseFromString(k.envelope)
        return env


def geometry_ids(env: Any) -> Tuple[str, ...]:
    """The geometry ids a ContactQuery or OpenStream Envelope names."""
    case = env.WhichOneof("msg")
    if case not in ("contact_query", "open_stream"):
        return ()
    return tuple(dict.fromkeys(b.geometry_id for b in getattr(env, case).bodies))


_BODY_FIELD = re.compile(r"^(contactQuery|openStream)\.bodies\[(\d+)\]\.geometryId$")


def missing_geometry(env: Any, err: Any) -> Optional[str]:
    """The geometry id of env that a server's NOT_FOUND says is unknown
    (its field names the body), else None."""
    if not (err.remote and err.code == pb.NOT_FOUND):
        return None
    m = _BODY_FIELD.match(err.field)
    case = env.WhichOneof("msg")
    if not m or case not in ("contact_query", "open_stream"):
        return None
    bodies = getattr(env, case).bodies
    i = int(m.group(2))
    return bodies[i].geometry_id if i < len(bodies) else None


def body_field(env: Any, gid: str) -> str:
    """The field path of the first body of a ContactQuery or OpenStream
    Envelope with geometry gid, as the server names it."""
    case = env.WhichOneof("msg")
    name = "contactQuery" if case == "contact_query" else "openStream"
    for i, b in enumerate(getattr(env, case).bodies):
        if b.geometry_id == gid:
            return "%s.bodies[%d].geometryId" % (name, i)
    return name + ".bodies"
