"""The messages of the protocol as Python: plain result types (dataclasses of
floats, tuples and lists) made from the replies, Body, and one builder per
request that returns its Envelope unsent (request_id unset)."""
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from ._pb import pb
from .errors import ContactdError

PROTOCOL_VERSION = 1

Vec3 = Tuple[float, float, float]


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
