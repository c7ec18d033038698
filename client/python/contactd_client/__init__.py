"""contactd_client — a small Python client for the contactd contact server.

Speaks the wire protocol of proto/contactd.proto (package contactd.v1):
each message is one Envelope preceded by its varint length, over TCP
("host:port") or a Unix socket ("unix:/path"). Uses Debian's python3-protobuf
and the module ``contactd_pb2``, which ``protoc --python_out`` generates from
proto/contactd.proto when the package is built: ``pip install
--no-build-isolation ./client/python`` in a venv made with
``--system-site-packages`` (client/python/README.md). Run from the source
tree instead, it finds the module in CONTACTD_PB2_DIR or on sys.path (the
CMake build writes it to ``<build>/proto/python``). numpy is optional:
``Surface.as_numpy()`` uses it, and ``PairResult.jacobian`` holds numpy
arrays when it imports (nested lists otherwise); nothing else needs it.

    from contactd_client import Client, Body
    with Client("127.0.0.1:7411") as c:
        ball = c.register_sphere(0.05, modulus=1e5, hint=0.01)
        floor = c.register_half_space(rigid=True)
        res = c.query([Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)],
                      pairs=[(1, 2)], detail="patches")
        print(res.pairs[0].force_a, res.pairs[0].area)

Results are plain Python objects (dataclasses of floats, tuples and lists).
Errors raise ContactdError with the server's gRPC code name, message and
field; transport problems raise ContactdError with ``remote = False``
(UNAVAILABLE for a refused or lost connection, DEADLINE_EXCEEDED for a
timeout).
"""

import os
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

try:  # generated module next to this package, on sys.path, or in CONTACTD_PB2_DIR
    from . import contactd_pb2 as pb  # type: ignore
except ImportError:  # pragma: no cover - depends on the installation
    _d = os.environ.get("CONTACTD_PB2_DIR")
    if _d and _d not in sys.path:
        sys.path.append(_d)
    import contactd_pb2 as pb  # type: ignore

__all__ = [
    "Client", "Body", "ContactdError", "PairResult", "Patch", "Surface", "QueryResult",
    "StreamResult", "Stream", "RegisterResult", "DEFAULT_ADDR", "PROTOCOL_VERSION",
    "encode_varint", "decode_varint", "hello_request", "register_request", "has_request",
    "release_request", "stats_request", "query_request", "open_stream_request", "stream_update_request",
    "close_stream_request",
]

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
DEFAULT_ADDR = "127.0.0.1:7411"
_STREAM_RID_BIT = 1 << 63


def encode_varint(n: int) -> bytes:
    """The base-128 varint of n (0 <= n < 2**64): a frame's length prefix."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def decode_varint(buf) -> Optional[Tuple[int, int]]:
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

Vec3 = Tuple[float, float, float]


class ContactdError(Exception):
    """A failed request: ``code`` (gRPC canonical number), ``code_name``
    ("INVALID_ARGUMENT", ...), ``message``, ``field`` (path of the offending
    field, may be empty), ``remote`` (True if the server sent it), and for a
    stream's failed computation ``stream_id`` and ``sequence`` (the update it
    answers; 0 otherwise)."""

    def __init__(self, code: int, message: str, field: str = "", remote: bool = True, stream_id: int = 0,
                 sequence: int = 0):
        self.code = code
        self.stream_id = stream_id
        self.sequence = sequence
        try:
            self.code_name = pb.ErrorCode.Name(code)
        except ValueError:
            self.code_name = "UNKNOWN"
        self.message = message
        self.field = field
        self.remote = remote
        super().__init__("%s: %s" % (self.code_name, message))


# ---- plain result types -----------------------------------------------------


def _v(m) -> Vec3:
    return (m.x, m.y, m.z)


@dataclass
class Patch:
    faces: int
    area: float
    normal_force: Vec3
    normal_force_magnitude: float
    point: Vec3
    strain_energy: float = 0.0  # J (query option energy=True)

    @staticmethod
    def _from(m) -> "Patch":
        return Patch(m.faces, m.area, _v(m.normal_force), m.normal_force_magnitude, _v(m.point),
                     m.strain_energy)


@dataclass
class Surface:
    """Contact surface, world frame: vertices (x, y, z), per-vertex pressure
    (Pa), faces as lists of vertex indices, per-face normals/areas/centroids."""
    vertices: List[Vec3]
    pressure: List[float]
    faces: List[List[int]]
    normals: List[Vec3]
    areas: List[float]
    centroids: List[Vec3]
    centroid_pressure: List[float]

    @staticmethod
    def _from(m) -> "Surface":
        def triples(a):
            return [(a[i], a[i + 1], a[i + 2]) for i in range(0, len(a) - 2, 3)]
        off = list(m.face_offsets)
        fv = list(m.face_vertices)
        faces = [fv[off[k]:off[k + 1]] for k in range(len(off) - 1)]
        return Surface(triples(m.vertices), list(m.pressure), faces, triples(m.normals),
                       list(m.areas), triples(m.centroids), list(m.centroid_pressure))

    def as_numpy(self):
        """(vertices (n,3), pressure (n,)) as numpy arrays (needs numpy)."""
        import numpy as np  # optional dependency
        return np.asarray(self.vertices, dtype=float).reshape(-1, 3), np.asarray(self.pressure, dtype=float)


def _matrix6(xs):
    """36 row-major values as a 6x6 numpy array when numpy imports, else
    as nested lists; None when absent."""
    if len(xs) != 36:
        return None
    rows = [[float(x) for x in xs[6 * i:6 * i + 6]] for i in range(6)]
    try:
        import numpy as np  # optional dependency
    except ImportError:
        return rows
    return np.array(rows, dtype=float)


@dataclass
class WrenchJacobian:
    """Derivatives of the wrench on A about A's origin (rows: torque x, y, z,
    force x, y, z; world frame) with respect to each body's pose (columns:
    dtheta x, y, z, dp x, y, z in the world frame, R <- exp([dtheta]x) R,
    p <- p + dp) and spatial velocity (columns: w x, y, z, v x, y, z of the
    body's origin). Each is 6x6 (numpy when available, else nested lists),
    None with `unavailable` set when the server has no Jacobian for the pair
    (proto/contactd.proto, WrenchJacobian)."""
    d_pose_a: object
    d_pose_b: object
    d_velocity_a: object
    d_velocity_b: object
    unavailable: str = ""

    @staticmethod
    def _from(m) -> "WrenchJacobian":
        return WrenchJacobian(_matrix6(m.d_pose_a), _matrix6(m.d_pose_b), _matrix6(m.d_velocity_a),
                              _matrix6(m.d_velocity_b), m.unavailable)


@dataclass
class PairResult:
    a: int
    b: int
    status: str            # "none", "surface", "point", "unsupported"
    area: float
    centroid: Vec3
    force_a: Vec3          # on A
    torque_a: Vec3         # on A about A's origin
    force_b: Vec3
    torque_b: Vec3         # on B about B's origin
    torque_a_centroid: Vec3  # on A about the surface centroid
    total: Optional[Patch]
    patches: List[Patch]
    surface: Optional[Surface]
    point_contacts: List[dict]
    penetration_depth: Optional[float]
    compute_time_us: int
    # Strain energy, J, and how it was obtained ("exact", "force_law",
    # "unavailable"; "unspecified" when not requested): query option energy=True.
    strain_energy: float = 0.0
    energy: str = "unspecified"
    jacobian: Optional[WrenchJacobian] = None  # when queried with jacobian=True
    # When queried with reduce=K: at most K points per patch whose forces and
    # moments (plus `couple`) add up to the patch's (proto ReducedContact):
    # dicts of patch, position, normal, force (on A), couple, stiffness (N/m),
    # dissipation (s/m), separation (m; stiffness * -separation is the
    # point's elastic normal force).
    reduced_contacts: List[dict] = field(default_factory=list)
    # status "speculative" (bodies apart within their margins): separation (m),
    # normal, point, stiffness at touch (N/m), faces; None otherwise.
    speculative: Optional[dict] = None

    @staticmethod
    def _from(m) -> "PairResult":
        st = pb.ContactStatus.Name(m.status).replace("CONTACT_STATUS_", "").lower()
        pcs = [dict(face=p.face, position=_v(p.position), normal=_v(p.normal), area=p.area,
                    pressure=p.pressure, g=p.g, stiffness=p.stiffness, phi0=p.phi0)
               for p in m.point_contacts]
        return PairResult(
            m.a, m.b, st, m.area, _v(m.centroid), _v(m.wrench_a.force), _v(m.wrench_a.torque),
            _v(m.wrench_b.force), _v(m.wrench_b.torque), _v(m.wrench_a_centroid.torque),
            Patch._from(m.total) if m.HasField("total") else None,
            [Patch._from(p) for p in m.patches],
            Surface._from(m.surface) if m.HasField("surface") else None,
            pcs, m.penetration.depth if m.HasField("penetration") else None, m.compute_time_us,
            m.strain_energy, pb.EnergyStatus.Name(m.energy).replace("ENERGY_STATUS_", "").lower(),
            WrenchJacobian._from(m.jacobian) if m.HasField("jacobian") else None,
            [dict(patch=p.patch, position=_v(p.position), normal=_v(p.normal), force=_v(p.force),
                  couple=_v(p.couple), stiffness=p.stiffness, dissipation=p.dissipation,
                  separation=p.separation) for p in m.reduced_contacts],
            dict(separation=m.speculative.separation, normal=_v(m.speculative.normal),
                 point=_v(m.speculative.point), stiffness=m.speculative.stiffness, faces=m.speculative.faces)
            if m.HasField("speculative") else None)


@dataclass
class QueryResult:
    pairs: List[PairResult]
    compute_time_us: int
    candidate_pairs: int


@dataclass
class StreamResult:
    stream_id: int
    sequence: int
    dropped_updates: int
    pairs: List[PairResult]
    compute_time_us: int


@dataclass
class RegisterResult:
    geometry_id: str
    already_cached: bool
    stats: Dict[str, float]


@dataclass
class Body:
    """A body of a query: client id, geometry id, pose (position, quaternion
    w, x, y, z; None = identity), spatial velocity (world frame)."""
    id: int
    geometry_id: str
    position: Sequence[float] = (0.0, 0.0, 0.0)
    orientation: Optional[Sequence[float]] = None
    angular_velocity: Sequence[float] = (0.0, 0.0, 0.0)
    linear_velocity: Sequence[float] = (0.0, 0.0, 0.0)
    material: Optional[Tuple[float, float]] = None  # (dissipation, friction) override
    name: str = ""


def _fill_vec(m, v):
    m.x, m.y, m.z = float(v[0]), float(v[1]), float(v[2])


def _fill_pose(pose, position, orientation):
    _fill_vec(pose.position, position)
    if orientation is not None:
        q = pose.orientation
        q.w, q.x, q.y, q.z = (float(x) for x in orientation)


def _fill_body(m, b: Body):
    m.body_id = b.id
    m.geometry_id = b.geometry_id
    _fill_pose(m.pose, b.position, b.orientation)
    _fill_vec(m.velocity.angular, b.angular_velocity)
    _fill_vec(m.velocity.linear, b.linear_velocity)
    if b.material is not None:
        m.material.dissipation, m.material.friction = b.material
    if b.name:
        m.name = b.name


_ENUMS = {
    "representation": ("REPRESENTATION_", pb.Representation),
    "detail": ("DETAIL_", pb.Detail),
    "contact_model": ("CONTACT_MODEL_", pb.ContactModel),
}


def _fill_options(m, detail=None, representation=None, point_contacts=False,
                  stiction_tolerance=None, contact_model=None, energy=False,
                  jacobian=False, reduce=0):
    for key, val in (("detail", detail), ("representation", representation),
                     ("contact_model", contact_model)):
        if val is not None:
            prefix, enum = _ENUMS[key]
            setattr(m, key, enum.Value(prefix + str(val).upper()))
    m.point_contacts = bool(point_contacts)
    m.want_energy = bool(energy)
    m.want_jacobian = bool(jacobian)
    m.reduced_contacts = int(reduce)
    if stiction_tolerance is not None:
        m.stiction_tolerance = float(stiction_tolerance)


def _as_body(b) -> Body:
    if isinstance(b, Body):
        return b
    return Body(**b)


# ---- requests as messages -----------------------------------------------------
# Each builds the Envelope of one request with request_id unset; Client's
# methods send them. For callers that number, batch or send requests
# themselves (their own transport, pipelining, test corpora).


def hello_request(client_name: str = "contactd_client.py") -> pb.Envelope:
    env = pb.Envelope()
    env.hello.protocol_version = PROTOCOL_VERSION
    env.hello.client_name = client_name
    return env


def register_request(shape: str, *, rigid: bool = False, modulus: float = 0.0, hint: float = 0.0,
                     slab: Optional[float] = None, dissipation: float = 0.0, friction: float = 0.0,
                     name: str = "", margin: float = 0.0, **dims) -> pb.Envelope:
    """A RegisterGeometry. shape: sphere (radius), box (size=(x, y, z)),
    cylinder / capsule (radius, length), ellipsoid (semi_axes=(a, b, c)),
    half_space, convex (points=[(x, y, z), ...]), mesh (data=bytes or
    path=..., format="obj"|...; compliant surfaces also take
    edge_length, field="laplace"|"distance", core_depth, hull_if_open),
    heightfield (heights = ny rows of nx values or a flat list with nx,
    ny; dx, dy, origin=(x, y, z), continuity=1|2; always rigid). margin
    (m, compliant sphere, box, cylinder, capsule): pairs apart within it
    are "speculative" (PairResult.speculative)."""
    env = pb.Envelope()
    r = env.register_geometry
    r.margin = float(margin)
    shape = shape.replace("-", "_")
    if shape == "sphere":
        r.sphere.radius = dims.pop("radius")
    elif shape == "box":
        _fill_vec(r.box.size, dims.pop("size"))
    elif shape in ("cylinder", "capsule"):
        m = getattr(r, shape)
        m.radius = dims.pop("radius")
        m.length = dims.pop("length")
    elif shape == "ellipsoid":
        r.ellipsoid.a, r.ellipsoid.b, r.ellipsoid.c = dims.pop("semi_axes")
    elif shape == "half_space":
        r.half_space.SetInParent()
    elif shape == "convex":
        r.convex.points.extend(float(x) for p in dims.pop("points") for x in p)
    elif shape == "mesh":
        data = dims.pop("data", None)
        path = dims.pop("path", None)
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        r.mesh_file.data = data
        fmt = dims.pop("format", None)
        if fmt:
            r.mesh_file.format = pb.MeshFormat.Value("MESH_FORMAT_" + fmt.upper())
        r.mesh_file.name = os.path.basename(path) if path else name
        surf = {k: dims.pop(k) for k in ("edge_length", "field", "core_depth", "hull_if_open") if k in dims}
        if surf:
            s = r.surface
            s.edge_length = surf.get("edge_length", 0.0)
            if surf.get("field"):
                s.field = pb.FieldKind.Value("FIELD_KIND_" + surf["field"].upper())
            s.core_depth = surf.get("core_depth", 0.0)
            s.use_convex_hull_if_open = bool(surf.get("hull_if_open", False))
    elif shape == "heightfield":
        h = r.height_field
        rows = dims.pop("heights")
        nx, ny = dims.pop("nx", None), dims.pop("ny", None)
        if nx is None:
            rows = [list(row) for row in rows]
            ny, nx = len(rows), len(rows[0]) if rows else 0
            h.heights.extend(float(z) for row in rows for z in row)
        else:
            h.heights.extend(float(z) for z in rows)
        h.nx, h.ny = nx, ny
        h.dx = dims.pop("dx")
        h.dy = dims.pop("dy", h.dx)
        _fill_vec(h.origin, dims.pop("origin", (0.0, 0.0, 0.0)))
        h.continuity = pb.CONTINUITY_C2 if dims.pop("continuity", 1) == 2 else pb.CONTINUITY_C1
        rigid = True
    else:
        raise ContactdError(pb.INVALID_ARGUMENT, "unknown shape %r" % shape, remote=False)
    if dims:
        raise ContactdError(pb.INVALID_ARGUMENT, "unexpected arguments %s for %s" % (sorted(dims), shape),
                            remote=False)
    r.compliance = pb.COMPLIANCE_RIGID if rigid else pb.COMPLIANCE_COMPLIANT
    if not rigid:
        r.modulus = modulus
    r.resolution_hint = hint
    if slab is not None:
        r.slab_thickness.value = slab
    if dissipation or friction:
        r.material.dissipation = dissipation
        r.material.friction = friction
    if name and shape != "mesh":
        r.name = name
    return env


def has_request(ids: Iterable[str]) -> pb.Envelope:
    env = pb.Envelope()
    env.has_geometry.geometry_ids.extend(ids)
    return env


def release_request(ids: Iterable[str]) -> pb.Envelope:
    env = pb.Envelope()
    env.release_geometry.geometry_ids.extend(ids)
    return env


def stats_request() -> pb.Envelope:
    env = pb.Envelope()
    env.stats.SetInParent()
    return env


def _fill_scene(m, bodies, pairs, margin, options):
    for b in bodies:
        _fill_body(m.bodies.add(), _as_body(b))
    if pairs:
        for a, b in pairs:
            p = m.pairs.add()
            p.a, p.b = a, b
    else:
        m.all_pairs.margin = margin
    _fill_options(m.options, **options)


def query_request(bodies, pairs: Optional[Sequence[Tuple[int, int]]] = None, *, margin: float = 0.0,
                  **options) -> pb.Envelope:
    """A ContactQuery (arguments: Client.query)."""
    env = pb.Envelope()
    _fill_scene(env.contact_query, bodies, pairs, margin, options)
    return env


def open_stream_request(bodies, pairs=None, *, latest_only: bool = False, margin: float = 0.0,
                        **options) -> pb.Envelope:
    """An OpenStream (arguments: Client.stream)."""
    env = pb.Envelope()
    o = env.open_stream
    _fill_scene(o, bodies, pairs, margin, options)
    o.mode = pb.STREAM_MODE_LATEST_ONLY if latest_only else pb.STREAM_MODE_QUEUE_ALL
    return env


def stream_update_request(stream_id: int, sequence: int, states: Dict[int, dict]) -> pb.Envelope:
    """A StreamUpdate (states: Stream.update). Its request_id must have the
    top bit set (stream updates get no reply of their own)."""
    env = pb.Envelope()
    u = env.stream_update
    u.stream_id = stream_id
    u.sequence = sequence
    for bid, st in states.items():
        m = u.bodies.add()
        m.body_id = bid
        if "position" in st or "orientation" in st:
            _fill_pose(m.pose, st.get("position", (0, 0, 0)), st.get("orientation"))
        if "angular_velocity" in st or "linear_velocity" in st:
            _fill_vec(m.velocity.angular, st.get("angular_velocity", (0, 0, 0)))
            _fill_vec(m.velocity.linear, st.get("linear_velocity", (0, 0, 0)))
    return env


def close_stream_request(stream_id: int) -> pb.Envelope:
    env = pb.Envelope()
    env.close_stream.stream_id = stream_id
    return env


# ---- the client ---------------------------------------------------------------


class Client:
    """A blocking connection to contactd. Not thread-safe: one per thread."""

    def __init__(self, addr: Optional[str] = None, timeout: float = 60.0,
                 connect_timeout: float = 5.0, max_frame: int = 256 << 20):
        addr = addr or os.environ.get("CONTACTD_ADDR") or DEFAULT_ADDR
        self.addr = addr
        self.timeout = timeout
        self.max_frame = max_frame
        self._buf = bytearray()
        self._queue: List = []
        self._next_rid = 1
        self._next_stream_rid = 1
        self._stream_rids: Dict[int, int] = {}  # open request id -> stream id
        s = None
        try:
            if addr.startswith("unix:"):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(connect_timeout)
                s.connect(addr[5:])
            else:
                host, sep, port = addr.rpartition(":")
                if not sep or not port.isdigit():
                    raise ContactdError(pb.INVALID_ARGUMENT, "bad address %r (want host:port or unix:/path)" % addr,
                                        remote=False)
                host = host.strip("[]") or "127.0.0.1"
                s = socket.create_connection((host, int(port)), timeout=connect_timeout)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except socket.timeout:
            if s is not None:
                s.close()
            raise ContactdError(pb.DEADLINE_EXCEEDED, "connect to %s timed out" % addr, remote=False) from None
        except OSError as e:
            if s is not None:
                s.close()
            raise ContactdError(pb.UNAVAILABLE, "connect to %s: %s" % (addr, e.strerror or e), remote=False) from None
        self._sock = s

    # context manager
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    # -- framing --
    def _send(self, env):
        body = env.SerializeToString()
        if self._sock is None:
            raise ContactdError(pb.UNAVAILABLE, "connection is closed", remote=False)
        try:
            self._sock.settimeout(self.timeout)
            self._sock.sendall(encode_varint(len(body)) + body)
        except socket.timeout:
            raise ContactdError(pb.DEADLINE_EXCEEDED, "sending timed out", remote=False) from None
        except OSError as e:
            raise ContactdError(pb.UNAVAILABLE, "connection lost: %s" % e, remote=False) from None

    def _try_decode(self):
        buf = self._buf
        try:
            prefix = decode_varint(buf)
        except ValueError:
            raise ContactdError(pb.INTERNAL, "malformed length prefix from the server", remote=False) from None
        if prefix is None:
            return None
        n, i = prefix
        if n > self.max_frame:
            raise ContactdError(pb.RESOURCE_EXHAUSTED, "reply of %d bytes exceeds the cap" % n, remote=False)
        if len(buf) - i < n:
            return None
        env = pb.Envelope()
        env.ParseFromString(bytes(buf[i:i + n]))
        del buf[:i + n]
        return env

    def _recv(self, deadline: Optional[float]):
        while True:
            env = self._try_decode()
            if env is not None:
                return env
            if self._sock is None:
                raise ContactdError(pb.UNAVAILABLE, "connection is closed", remote=False)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ContactdError(pb.DEADLINE_EXCEEDED, "no reply within the timeout", remote=False)
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(1 << 16)
            except socket.timeout:
                raise ContactdError(pb.DEADLINE_EXCEEDED, "no reply within the timeout", remote=False) from None
            except OSError as e:
                raise ContactdError(pb.UNAVAILABLE, "connection lost: %s" % e, remote=False) from None
            if not data:
                self.close()
                raise ContactdError(pb.UNAVAILABLE, "the server closed the connection", remote=False)
            self._buf += data

    def _is_stream_rid(self, rid):
        return bool(rid & _STREAM_RID_BIT) or rid in self._stream_rids

    @staticmethod
    def _raise(err):
        raise ContactdError(err.code or pb.UNKNOWN, err.message, err.field, remote=True, stream_id=err.stream_id,
                            sequence=err.sequence)

    def call(self, env, want: str):
        """Send an Envelope (request_id is set here) and return the payload
        of its reply, which must be the oneof member ``want``."""
        rid = self._next_rid
        self._next_rid += 1
        env.request_id = rid
        self._send(env)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
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

    # -- requests --
    def hello(self, client_name: str = "contactd_client.py") -> dict:
        r = self.call(hello_request(client_name), "hello_reply")
        lim = {f.name: getattr(r.limits, f.name) for f in r.limits.DESCRIPTOR.fields}
        return dict(server_version=r.server_version, protocol_version=r.protocol_version,
                    limits=lim, capabilities=list(r.capabilities), store=getattr(r, "store", ""))

    def register(self, shape: str, **kw) -> RegisterResult:
        """Register a geometry (arguments: register_request)."""
        rep = self.call(register_request(shape, **kw), "register_reply")
        st = {f.name: getattr(rep.stats, f.name) for f in rep.stats.DESCRIPTOR.fields}
        return RegisterResult(rep.geometry_id, rep.already_cached, st)

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
        return list(self.call(has_request(ids), "has_geometry_reply").missing)

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
        """Drop this connection's references: (released, unknown)."""
        r = self.call(release_request(ids), "release_reply")
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
        r = self.call(query_request(bodies, pairs, margin=margin, **options), "contact_reply")
        return QueryResult([PairResult._from(p) for p in r.results], r.compute_time_us, r.candidate_pairs)

    def stats(self) -> dict:
        r = self.call(stats_request(), "stats_reply")
        d = {f.name: getattr(r, f.name) for f in r.DESCRIPTOR.fields if f.name not in ("latency", "worker_utilisation")}
        d["worker_utilisation"] = list(r.worker_utilisation)
        d["latency"] = [(b.upper_bound_us, b.count) for b in r.latency]
        return d

    def stream(self, bodies, pairs=None, *, latest_only: bool = False, margin: float = 0.0,
               **options) -> "Stream":
        """Open a stream (bodies and options fixed once). See Stream."""
        env = open_stream_request(bodies, pairs, latest_only=latest_only, margin=margin, **options)
        r = self.call(env, "open_stream_reply")
        self._stream_rids[env.request_id] = r.stream_id
        return Stream(self, r.stream_id)

    # used by Stream
    def _stream_update(self, stream_id, sequence, states):
        env = stream_update_request(stream_id, sequence, states)
        env.request_id = _STREAM_RID_BIT | self._next_stream_rid
        self._next_stream_rid += 1
        self._send(env)

    def _stream_recv(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            rep = self._queue.pop(0) if self._queue else self._recv(deadline)
            case = rep.WhichOneof("msg")
            if case == "stream_result":
                r = rep.stream_result
                return StreamResult(r.stream_id, r.sequence, r.dropped_updates,
                                    [PairResult._from(p) for p in r.results], r.compute_time_us)
            if case == "error" and self._is_stream_rid(rep.request_id):
                self._raise(rep.error)


class Stream:
    """An open stream: update() sends new states (no waiting), result()
    returns the next result in order, close() closes it (also on leaving a
    ``with`` block)."""

    def __init__(self, client: Client, stream_id: int):
        self.client = client
        self.id = stream_id
        self.sequence = 0
        self.closed = False

    def update(self, states: Dict[int, dict], sequence: Optional[int] = None) -> int:
        """states: {body_id: {"position": ..., "orientation": ...,
        "linear_velocity": ..., "angular_velocity": ...}}. Returns the
        sequence number used (default: previous + 1)."""
        self.sequence = self.sequence + 1 if sequence is None else sequence
        self.client._stream_update(self.id, self.sequence, states)
        return self.sequence

    def result(self, timeout: Optional[float] = -1) -> StreamResult:
        """Next result of any stream on this connection (timeout in s; -1 =
        the client's timeout, None = forever)."""
        return self.client._stream_recv(self.client.timeout if timeout == -1 else timeout)

    def close(self) -> dict:
        if self.closed:
            return {}
        r = self.client.call(close_stream_request(self.id), "close_stream_reply")
        self.closed = True
        return dict(updates=r.updates, results=r.results, dropped_updates=r.dropped_updates)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.client._sock is not None:
            self.close()
