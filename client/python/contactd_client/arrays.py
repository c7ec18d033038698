"""numpy forms of the client's inputs and results, for simulators that hold
many bodies in arrays: a stream update of N bodies from (N, 7) poses and
(N, 6) velocities (Stream.update_arrays), and a result's pairs as (P, 3)
arrays (QueryResult.arrays(), StreamResult.arrays()).

numpy stays optional: importing the package never needs it. Without it
these functions raise NumpyMissing (an ImportError naming the method and
the package to install); no result changes type with numpy's presence
(the tuple API gives tuples either way)."""
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence

from ._pb import pb
from .messages import PairResult, _bad

__all__ = ["NumpyMissing", "PairArrays", "numpy_or_raise", "stream_update_arrays_request"]


class NumpyMissing(ImportError):
    """An array method was called without numpy installed."""


def numpy_or_raise(what: str) -> Any:
    """The numpy module, or NumpyMissing naming `what`."""
    try:
        import numpy
    except ImportError:
        raise NumpyMissing("%s needs numpy, which is not installed (Debian: apt-get install python3-numpy; "
                           "pip: pip install contactd-client[numpy])" % what) from None
    return numpy


@dataclass
class PairArrays:
    """A result's P pairs as arrays, in the order of its pairs: body ids
    ``a``, ``b`` (P,) int64; ``force_a``, ``torque_a`` (on A, about A's
    origin), ``force_b``, ``torque_b``, ``centroid`` (P, 3) float64;
    ``area`` (P,) float64. The same float64 values as the tuples of
    PairResult, bit for bit."""
    a: Any
    b: Any
    force_a: Any
    torque_a: Any
    force_b: Any
    torque_b: Any
    centroid: Any
    area: Any

    @staticmethod
    def of(pairs: Sequence[PairResult]) -> "PairArrays":
        np = numpy_or_raise("arrays()")

        def v3(attr: str) -> Any:
            return np.array([getattr(p, attr) for p in pairs], dtype=np.float64).reshape(len(pairs), 3)
        return PairArrays(np.array([p.a for p in pairs], dtype=np.int64), np.array([p.b for p in pairs], dtype=np.int64),
                          v3("force_a"), v3("torque_a"), v3("force_b"), v3("torque_b"), v3("centroid"),
                          np.array([p.area for p in pairs], dtype=np.float64))


def pair_arrays_from_messages(results: Sequence[Any]) -> PairArrays:
    """PairArrays straight from the reply's PairResult messages, without
    making PairResult objects (what Stream.result(arrays=True) hands out;
    100 pairs: about 380 us with parsing, against 480 us through
    PairResult, the protobuf module's field access being most of either).
    The same values."""
    np = numpy_or_raise("arrays")
    n = len(results)

    def v3(get: Any) -> Any:
        out = np.empty((n, 3), dtype=np.float64)
        for i, m in enumerate(results):
            v = get(m)
            out[i, 0], out[i, 1], out[i, 2] = v.x, v.y, v.z
        return out
    return PairArrays(np.fromiter((m.a for m in results), dtype=np.int64, count=n),
                      np.fromiter((m.b for m in results), dtype=np.int64, count=n),
                      v3(lambda m: m.wrench_a.force), v3(lambda m: m.wrench_a.torque),
                      v3(lambda m: m.wrench_b.force), v3(lambda m: m.wrench_b.torque), v3(lambda m: m.centroid),
                      np.fromiter((m.area for m in results), dtype=np.float64, count=n))


def stream_update_arrays_request(stream_id: int, sequence: int, ids: Any, poses: Any, velocities: Any = None,
                                 body_ids: Optional[Iterable[int]] = None) -> Any:
    """A StreamUpdate of N bodies: ids (N,) integers; poses (N, 7) rows of
    x, y, z, qw, qx, qy, qz (None: poses unchanged); velocities (N, 6) rows
    of angular x, y, z, linear x, y, z (None: velocities unchanged). Wrong
    shapes, non-integer ids, or (given body_ids) a body not in the stream
    raise ContactdError naming the argument, before anything is sent."""
    np = numpy_or_raise("Stream.update_arrays")
    ids_a = np.asarray(ids)
    if ids_a.ndim != 1 or (ids_a.size and not np.issubdtype(ids_a.dtype, np.integer)):
        raise _bad("ids: expected a 1-D array of integer body ids, got shape %s dtype %s"
                   % (ids_a.shape, ids_a.dtype), "ids")
    n = int(ids_a.shape[0])
    cols: List[Optional[List[List[float]]]] = []
    for name, arr, width in (("poses", poses, 7), ("velocities", velocities, 6)):
        if arr is None:
            cols.append(None)
            continue
        a = np.asarray(arr, dtype=np.float64)
        if a.shape != (n, width):
            raise _bad("%s: expected shape (%d, %d) for %d ids, got %s" % (name, n, width, n, a.shape), name)
        cols.append(a.tolist())
    if poses is None and velocities is None:
        raise _bad("update_arrays: give poses, velocities or both", "poses")
    known = None if body_ids is None else set(body_ids)
    env = pb.Envelope()
    u = env.stream_update
    u.stream_id = stream_id
    u.sequence = sequence
    p_rows, v_rows = cols
    for i, bid in enumerate(ids_a.tolist()):
        if known is not None and bid not in known:
            raise _bad("ids[%d]: body %d is not in stream %d" % (i, bid, stream_id), "ids")
        m = u.bodies.add()
        m.body_id = bid
        if p_rows is not None:
            r = p_rows[i]
            pos, q = m.pose.position, m.pose.orientation
            pos.x, pos.y, pos.z = r[0], r[1], r[2]
            q.w, q.x, q.y, q.z = r[3], r[4], r[5], r[6]
        if v_rows is not None:
            r = v_rows[i]
            w, lin = m.velocity.angular, m.velocity.linear
            w.x, w.y, w.z = r[0], r[1], r[2]
            lin.x, lin.y, lin.z = r[3], r[4], r[5]
    return env
