"""The messages of the protocol as Python: typed result types (dataclasses
of floats, tuples and lists; enums for statuses and options) made from the
replies, Body, and one builder per request that returns its Envelope unsent
(request_id unset). Every builder checks its input at once: an unknown key
or a value of the wrong shape raises ContactdError (INVALID_ARGUMENT, not
remote) naming it, before anything is sent. numpy is never needed here; the
array forms are in arrays.py."""
import enum
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._pb import pb
from .errors import ContactdError

PROTOCOL_VERSION = 1

Vec3 = Tuple[float, float, float]
Matrix6 = Tuple[Tuple[float, ...], ...]


def _bad(message: str, field_: str = "") -> ContactdError:
    return ContactdError(pb.INVALID_ARGUMENT, message, field_, remote=False)


# ---- enums ----------------------------------------------------------------------
# str-valued: each compares equal to its lower-case name ("surface"), which
# is also what the option arguments accept.


class _StrEnum(str, enum.Enum):
    """An enum whose members are their strings: they compare equal to them
    ("surface") and print as them, as the results' plain strings did."""

    def __str__(self) -> str:
        return str(self.value)


class ContactStatus(_StrEnum):
    """PairResult.status: no contact, a hydroelastic surface, a point
    contact, or a pair no model applies to."""
    UNSPECIFIED = "unspecified"
    NONE = "none"
    SURFACE = "surface"
    POINT = "point"
    UNSUPPORTED = "unsupported"
    SPECULATIVE = "speculative"  # apart within their margins: PairResult.speculative


class EnergyStatus(_StrEnum):
    """How PairResult.strain_energy was obtained (UNSPECIFIED: not asked)."""
    UNSPECIFIED = "unspecified"
    EXACT = "exact"
    FORCE_LAW = "force_law"
    UNAVAILABLE = "unavailable"


class Detail(_StrEnum):
    """How much of each contact a query returns."""
    WRENCH = "wrench"
    PATCHES = "patches"
    SURFACE = "surface"


class Representation(_StrEnum):
    """Contact surfaces as polygons or triangles."""
    POLYGON = "polygon"
    TRIANGLE = "triangle"


class ContactModel(_StrEnum):
    """The contact model of a query (proto ContactModel)."""
    HYDROELASTIC = "hydroelastic"
    POINT = "point"
    HYDROELASTIC_WITH_FALLBACK = "hydroelastic_with_fallback"


def _enum_from_pb(cls: Any, pb_enum: Any, prefix: str, value: int) -> Any:
    name = pb_enum.Name(value)[len(prefix):].lower()
    try:
        return cls(name)
    except ValueError:
        return cls("unspecified")


# ---- result types -------------------------------------------------------------


def _v(m: Any) -> Vec3:
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
    def _from(m: Any) -> "Patch":
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
    def _from(m: Any) -> "Surface":
        def triples(a: Sequence[float]) -> List[Vec3]:
            return [(a[i], a[i + 1], a[i + 2]) for i in range(0, len(a) - 2, 3)]
        off = list(m.face_offsets)
        fv = list(m.face_vertices)
        faces = [fv[off[k]:off[k + 1]] for k in range(len(off) - 1)]
        return Surface(triples(m.vertices), list(m.pressure), faces, triples(m.normals),
                       list(m.areas), triples(m.centroids), list(m.centroid_pressure))

    def as_numpy(self) -> Any:
        """(vertices (n,3), pressure (n,)) as numpy arrays; NumpyMissing
        without numpy."""
        from .arrays import numpy_or_raise
        np = numpy_or_raise("Surface.as_numpy")
        return np.asarray(self.vertices, dtype=float).reshape(-1, 3), np.asarray(self.pressure, dtype=float)


def _matrix6(xs: Sequence[float]) -> Optional[Matrix6]:
    """36 row-major values as six rows (tuples); None when absent."""
    if len(xs) != 36:
        return None
    return tuple(tuple(float(x) for x in xs[6 * i:6 * i + 6]) for i in range(6))


@dataclass
class WrenchJacobian:
    """Derivatives of the wrench on A about A's origin (rows: torque x, y, z,
    force x, y, z; world frame) with respect to each body's pose (columns:
    dtheta x, y, z, dp x, y, z in the world frame, R <- exp([dtheta]x) R,
    p <- p + dp) and spatial velocity (columns: w x, y, z, v x, y, z of the
    body's origin). Each is six rows of six floats (tuples, whether or not
    numpy is installed; ``as_numpy()`` gives 6x6 arrays), None with
    `unavailable` set when the server has no Jacobian for the pair
    (proto/contactd.proto, WrenchJacobian)."""
    d_pose_a: Optional[Matrix6]
    d_pose_b: Optional[Matrix6]
    d_velocity_a: Optional[Matrix6]
    d_velocity_b: Optional[Matrix6]
    unavailable: str = ""

    @staticmethod
    def _from(m: Any) -> "WrenchJacobian":
        return WrenchJacobian(_matrix6(m.d_pose_a), _matrix6(m.d_pose_b), _matrix6(m.d_velocity_a),
                              _matrix6(m.d_velocity_b), m.unavailable)

    def as_numpy(self) -> Dict[str, Any]:
        """{"d_pose_a": 6x6 array or None, ...}; NumpyMissing without numpy."""
        from .arrays import numpy_or_raise
        np = numpy_or_raise("WrenchJacobian.as_numpy")
        return {k: None if v is None else np.array(v, dtype=float)
                for k, v in (("d_pose_a", self.d_pose_a), ("d_pose_b", self.d_pose_b),
                             ("d_velocity_a", self.d_velocity_a), ("d_velocity_b", self.d_velocity_b))}


@dataclass
class PointContact:
    """One per-face point contact (query option point_contacts=True)."""
    face: int
    position: Vec3
    normal: Vec3
    area: float
    pressure: float
    g: float
    stiffness: float
    phi0: float


@dataclass
class ReducedContact:
    """One of at most K points per patch (query option reduce=K) whose
    forces and moments, with `couple`, add up to the patch's: force on A,
    stiffness (N/m), Hunt–Crossley dissipation (s/m), signed separation (m;
    stiffness * -separation is the point's elastic normal force)."""
    patch: int
    position: Vec3
    normal: Vec3
    force: Vec3
    couple: Vec3
    stiffness: float
    dissipation: float
    separation: float


@dataclass
class Speculative:
    """Bodies apart within their margins (status SPECULATIVE): their
    separation (m), the normal and point, the stiffness at touch (N/m) and
    the faces of the speculative surface; the force is zero."""
    separation: float
    normal: Vec3
    point: Vec3
    stiffness: float
    faces: int


@dataclass
class PairResult:
    a: int
    b: int
    status: ContactStatus
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
    point_contacts: List[PointContact]
    penetration_depth: Optional[float]
    compute_time_us: int
    # Strain energy, J, and how it was obtained: query option energy=True.
    strain_energy: float = 0.0
    energy: EnergyStatus = EnergyStatus.UNSPECIFIED
    jacobian: Optional[WrenchJacobian] = None  # when queried with jacobian=True
    reduced_contacts: List[ReducedContact] = field(default_factory=list)  # when queried with reduce=K
    speculative: Optional[Speculative] = None  # status SPECULATIVE

    @staticmethod
    def _from(m: Any) -> "PairResult":
        pcs = [PointContact(p.face, _v(p.position), _v(p.normal), p.area, p.pressure, p.g, p.stiffness, p.phi0)
               for p in m.point_contacts]
        return PairResult(
            m.a, m.b, _enum_from_pb(ContactStatus, pb.ContactStatus, "CONTACT_STATUS_", m.status), m.area,
            _v(m.centroid), _v(m.wrench_a.force), _v(m.wrench_a.torque),
            _v(m.wrench_b.force), _v(m.wrench_b.torque), _v(m.wrench_a_centroid.torque),
            Patch._from(m.total) if m.HasField("total") else None,
            [Patch._from(p) for p in m.patches],
            Surface._from(m.surface) if m.HasField("surface") else None,
            pcs, m.penetration.depth if m.HasField("penetration") else None, m.compute_time_us,
            m.strain_energy, _enum_from_pb(EnergyStatus, pb.EnergyStatus, "ENERGY_STATUS_", m.energy),
            WrenchJacobian._from(m.jacobian) if m.HasField("jacobian") else None,
            [ReducedContact(p.patch, _v(p.position), _v(p.normal), _v(p.force), _v(p.couple), p.stiffness,
                            p.dissipation, p.separation) for p in m.reduced_contacts],
            Speculative(m.speculative.separation, _v(m.speculative.normal), _v(m.speculative.point),
                        m.speculative.stiffness, m.speculative.faces) if m.HasField("speculative") else None)


@dataclass
class QueryResult:
    pairs: List[PairResult]
    compute_time_us: int
    candidate_pairs: int

    def arrays(self) -> Any:
        """The pairs as numpy arrays (arrays.PairArrays: a, b (P,), forces,
        torques, centroids (P, 3), areas (P,)); NumpyMissing without numpy."""
        from .arrays import PairArrays
        return PairArrays.of(self.pairs)


@dataclass
class StreamResult:
    """The result of one StreamUpdate. ``sequence`` is the update's;
    ``newest_sent`` the stream's last update sequence when this result was
    handed out, so ``stale`` (sequence < newest_sent) says a newer update
    was sent; ``queued`` counts the newer results already received and not
    yet taken (Stream.latest() takes the newest and discards them);
    ``skipped`` the older results latest() discarded for this one."""
    stream_id: int
    sequence: int
    dropped_updates: int
    pairs: List[PairResult]
    compute_time_us: int
    newest_sent: int = 0
    queued: int = 0
    skipped: int = 0
    pair_arrays: Any = None  # Stream.result(arrays=True): PairArrays, and ``pairs`` left empty

    @property
    def stale(self) -> bool:
        return self.sequence < self.newest_sent

    def arrays(self) -> Any:
        """As QueryResult.arrays()."""
        if self.pair_arrays is not None:
            return self.pair_arrays
        from .arrays import PairArrays
        return PairArrays.of(self.pairs)


class RegisterResult(str):
    """A registration's answer: the geometry id itself (a str: Body, has(),
    release() and comparisons take it as the id), with ``already_cached``
    (the server held it already) and the build ``stats``. Every register*
    method returns one."""
    already_cached: bool
    stats: Dict[str, float]

    def __new__(cls, geometry_id: str, already_cached: bool = False,
                stats: Optional[Dict[str, float]] = None) -> "RegisterResult":
        self = super().__new__(cls, geometry_id)
        self.already_cached = already_cached
        self.stats = dict(stats or {})
        return self

    @property
    def geometry_id(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return "RegisterResult(%r, already_cached=%r)" % (self.geometry_id, self.already_cached)


@dataclass
class HelloResult:
    """The server's answer to Hello: ``limits`` by the configuration's names
    (max_inflight_per_conn, max_bodies_per_query, ...; docs/operations.md),
    ``units`` of each, ``capabilities`` (e.g. "mesh_file:msh")."""
    server_version: str
    protocol_version: int
    limits: Dict[str, int]
    units: Dict[str, str]
    capabilities: List[str]
    store: str
    # who the connection is, when the server has principals (docs/security.md)
    principal: str = ""
    tenant: str = ""
    roles: List[str] = field(default_factory=list)


GeometryRef = str  # a geometry id, or the RegisterResult that is one


def geometry_id(g: GeometryRef) -> str:
    """The id of a geometry given as its id or its RegisterResult."""
    if not isinstance(g, str):
        raise _bad("geometry_id: expected a geometry id (str or RegisterResult), got %s" % type(g).__name__)
    return str.__str__(g)


@dataclass
class Body:
    """A body of a query: client id, geometry id (or RegisterResult),
    pose (position, quaternion w, x, y, z; None = identity), spatial velocity
    (world frame)."""
    id: int
    geometry_id: GeometryRef
    position: Sequence[float] = (0.0, 0.0, 0.0)
    orientation: Optional[Sequence[float]] = None
    angular_velocity: Sequence[float] = (0.0, 0.0, 0.0)
    linear_velocity: Sequence[float] = (0.0, 0.0, 0.0)
    material: Optional[Tuple[float, float]] = None  # (dissipation, friction) override
    name: str = ""


def _floats(v: Any, n: int, what: str) -> Tuple[float, ...]:
    """v as n floats, or ContactdError naming `what`."""
    try:
        out = tuple(float(x) for x in v)
    except TypeError:
        raise _bad("%s: expected %d numbers, got %r" % (what, n, v)) from None
    except ValueError as e:
        raise _bad("%s: %s" % (what, e)) from None
    if len(out) != n:
        raise _bad("%s: expected %d numbers, got %d" % (what, n, len(out)))
    return out


def _fill_vec(m: Any, v: Any, what: str = "vector") -> None:
    m.x, m.y, m.z = _floats(v, 3, what)


def _fill_pose(pose: Any, position: Any, orientation: Any, what: str = "") -> None:
    _fill_vec(pose.position, position, what + "position")
    if orientation is not None:
        q = pose.orientation
        q.w, q.x, q.y, q.z = _floats(orientation, 4, what + "orientation")


def _fill_body(m: Any, b: Body) -> None:
    what = "body %d: " % b.id
    m.body_id = b.id
    m.geometry_id = geometry_id(b.geometry_id)
    _fill_pose(m.pose, b.position, b.orientation, what)
    _fill_vec(m.velocity.angular, b.angular_velocity, what + "angular_velocity")
    _fill_vec(m.velocity.linear, b.linear_velocity, what + "linear_velocity")
    if b.material is not None:
        m.material.dissipation, m.material.friction = _floats(b.material, 2, what + "material")
    if b.name:
        m.name = b.name


def _enum_value(key: str, cls: Any, prefix: str, pb_enum: Any, val: Any) -> int:
    try:
        name = cls(val.value if isinstance(val, enum.Enum) else str(val).lower()).value
    except ValueError:
        raise _bad("%s: unknown value %r (one of %s)" % (key, val, ", ".join(m.value for m in cls)), key) \
            from None
    return int(pb_enum.Value(prefix + name.upper()))


def _fill_options(m: Any, detail: Union[Detail, str, None] = None,
                  representation: Union[Representation, str, None] = None, point_contacts: bool = False,
                  stiction_tolerance: Optional[float] = None, contact_model: Union[ContactModel, str, None] = None,
                  energy: bool = False, jacobian: bool = False, publish: str = "", reduce: int = 0) -> None:
    if detail is not None:
        m.detail = _enum_value("detail", Detail, "DETAIL_", pb.Detail, detail)
    if representation is not None:
        m.representation = _enum_value("representation", Representation, "REPRESENTATION_", pb.Representation,
                                       representation)
    if contact_model is not None:
        m.contact_model = _enum_value("contact_model", ContactModel, "CONTACT_MODEL_", pb.ContactModel,
                                      contact_model)
    m.point_contacts = bool(point_contacts)
    m.want_energy = bool(energy)
    m.want_jacobian = bool(jacobian)
    m.reduced_contacts = int(reduce)
    if stiction_tolerance is not None:
        m.stiction_tolerance = float(stiction_tolerance)
    if publish:
        m.publish = publish


_BODY_KEYS = ("id", "geometry_id", "position", "orientation", "angular_velocity", "linear_velocity", "material",
              "name")


def _as_body(b: Union[Body, Mapping[str, Any]]) -> Body:
    if isinstance(b, Body):
        return b
    if not isinstance(b, Mapping):
        raise _bad("a body must be a Body or a dict of its fields, got %s" % type(b).__name__)
    bad = [k for k in b if k not in _BODY_KEYS]
    if bad:
        raise _bad("body %s: unknown key %r (keys: %s)" % (b.get("id", "?"), bad[0], ", ".join(_BODY_KEYS)), bad[0])
    return Body(**b)


# ---- requests as messages -----------------------------------------------------
# Each builds the Envelope of one request with request_id unset; Client's
# methods send them. For callers that number, batch or send requests
# themselves (their own transport, pipelining, test corpora).


def hello_request(client_name: str = "contactd_client.py") -> Any:
    env = pb.Envelope()
    env.hello.protocol_version = PROTOCOL_VERSION
    env.hello.client_name = client_name
    return env


def _need(dims: Dict[str, Any], key: str, shape: str) -> Any:
    if key not in dims:
        raise _bad("%s: missing argument %r" % (shape, key), key)
    return dims.pop(key)


def register_request(shape: str, *, rigid: bool = False, modulus: float = 0.0, hint: float = 0.0,
                     slab: Optional[float] = None, dissipation: float = 0.0, friction: float = 0.0,
                     name: str = "", margin: float = 0.0, **dims: Any) -> Any:
    """A RegisterGeometry. shape: sphere (radius), box (size=(x, y, z)),
    cylinder / capsule (radius, length), ellipsoid (semi_axes=(a, b, c)),
    half_space, convex (points=[(x, y, z), ...]), mesh (data=bytes or
    path=..., format="obj"|...; compliant surfaces also take
    edge_length, field="laplace"|"distance", core_depth, hull_if_open),
    heightfield (heights = ny rows of nx values or a flat list with nx,
    ny; dx, dy, origin=(x, y, z), continuity=1|2; always rigid). margin
    (m; any compliant geometry but the half space: primitives, convex
    sets, meshes): pairs apart within it are speculative
    (PairResult.speculative)."""
    env = pb.Envelope()
    r = env.register_geometry
    r.margin = float(margin)
    shape = shape.replace("-", "_")
    if shape == "sphere":
        r.sphere.radius = _need(dims, "radius", shape)
    elif shape == "box":
        _fill_vec(r.box.size, _need(dims, "size", shape))
    elif shape in ("cylinder", "capsule"):
        m = getattr(r, shape)
        m.radius = _need(dims, "radius", shape)
        m.length = _need(dims, "length", shape)
    elif shape == "ellipsoid":
        r.ellipsoid.a, r.ellipsoid.b, r.ellipsoid.c = _need(dims, "semi_axes", shape)
    elif shape == "half_space":
        r.half_space.SetInParent()
    elif shape == "convex":
        r.convex.points.extend(float(x) for p in _need(dims, "points", shape) for x in p)
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
        rows = _need(dims, "heights", shape)
        nx, ny = dims.pop("nx", None), dims.pop("ny", None)
        if nx is None:
            rows = [list(row) for row in rows]
            ny, nx = len(rows), len(rows[0]) if rows else 0
            h.heights.extend(float(z) for row in rows for z in row)
        else:
            h.heights.extend(float(z) for z in rows)
        h.nx, h.ny = nx, ny
        h.dx = _need(dims, "dx", shape)
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


def has_request(ids: Iterable[GeometryRef]) -> Any:
    env = pb.Envelope()
    env.has_geometry.geometry_ids.extend(geometry_id(g) for g in ids)
    return env


def release_request(ids: Iterable[GeometryRef]) -> Any:
    env = pb.Envelope()
    env.release_geometry.geometry_ids.extend(geometry_id(g) for g in ids)
    return env


def stats_request() -> Any:
    env = pb.Envelope()
    env.stats.SetInParent()
    return env


Pairs = Optional[Sequence[Tuple[int, int]]]
BodyLike = Union[Body, Mapping[str, Any]]


def _fill_scene(m: Any, bodies: Iterable[BodyLike], pairs: Pairs, margin: float, options: Dict[str, Any]) -> None:
    for b in bodies:
        _fill_body(m.bodies.add(), _as_body(b))
    if pairs:
        for k, pr in enumerate(pairs):
            try:
                a, b2 = pr
                p = m.pairs.add()
                p.a, p.b = int(a), int(b2)
            except (TypeError, ValueError):
                raise _bad("pairs[%d]: expected (a, b) body ids, got %r" % (k, pr), "pairs") from None
    else:
        m.all_pairs.margin = margin
    _fill_options(m.options, **options)


def query_request(bodies: Iterable[BodyLike], pairs: Pairs = None, *, margin: float = 0.0,
                  **options: Any) -> Any:
    """A ContactQuery (arguments: Client.query)."""
    env = pb.Envelope()
    _fill_scene(env.contact_query, bodies, pairs, margin, options)
    return env


def open_stream_request(bodies: Iterable[BodyLike], pairs: Pairs = None, *, latest_only: bool = False,
                        margin: float = 0.0, **options: Any) -> Any:
    """An OpenStream (arguments: Client.stream)."""
    env = pb.Envelope()
    o = env.open_stream
    _fill_scene(o, bodies, pairs, margin, options)
    o.mode = pb.STREAM_MODE_LATEST_ONLY if latest_only else pb.STREAM_MODE_QUEUE_ALL
    return env


STATE_KEYS = ("position", "orientation", "linear_velocity", "angular_velocity")
State = Mapping[str, Sequence[float]]


def stream_update_request(stream_id: int, sequence: int, states: Mapping[int, State],
                          body_ids: Optional[Iterable[int]] = None) -> Any:
    """A StreamUpdate (states: Stream.update), request_id left 0: the
    server names the stream and the sequence in its result or error. An
    unknown key (say "positon"), a value of the wrong length, or (given
    body_ids, the stream's) a body not in the stream raises at once."""
    env = pb.Envelope()
    u = env.stream_update
    u.stream_id = stream_id
    u.sequence = sequence
    known = None if body_ids is None else set(body_ids)
    if not isinstance(states, Mapping):
        raise _bad("states: expected {body_id: {key: value}}, got %s" % type(states).__name__)
    for bid, st in states.items():
        if known is not None and bid not in known:
            raise _bad("body %s is not in stream %d (its bodies: %s)" % (bid, stream_id, sorted(known)),
                       "bodies")
        if not isinstance(st, Mapping):
            raise _bad("body %s: expected a dict of %s, got %s" % (bid, ", ".join(STATE_KEYS), type(st).__name__))
        for k in st:
            if k not in STATE_KEYS:
                raise _bad("body %s: unknown key %r (keys: %s)" % (bid, k, ", ".join(STATE_KEYS)), str(k))
        m = u.bodies.add()
        m.body_id = int(bid)
        what = "body %s: " % bid
        if "position" in st or "orientation" in st:
            _fill_pose(m.pose, st.get("position", (0, 0, 0)), st.get("orientation"), what)
        if "angular_velocity" in st or "linear_velocity" in st:
            _fill_vec(m.velocity.angular, st.get("angular_velocity", (0, 0, 0)), what + "angular_velocity")
            _fill_vec(m.velocity.linear, st.get("linear_velocity", (0, 0, 0)), what + "linear_velocity")
    return env


def close_stream_request(stream_id: int) -> Any:
    env = pb.Envelope()
    env.close_stream.stream_id = stream_id
    return env
