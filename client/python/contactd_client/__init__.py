"""contactd_client — a small Python client for the contactd contact server.

Speaks the wire protocol of proto/contactd.proto (package contactd.v1):
each message is one Envelope preceded by its varint length, over TCP
("host:port") or a Unix socket ("unix:/path"). Uses Debian's python3-protobuf
and the module ``contactd_pb2``, which ``protoc --python_out`` generates from
proto/contactd.proto when the package is built: ``pip install
--no-build-isolation ./client/python`` in a venv made with
``--system-site-packages`` (client/python/README.md). Run from the source
tree instead, it finds the module in CONTACTD_PB2_DIR or on sys.path (the
CMake build writes it to ``<build>/proto/python``). numpy is optional: the
array API (Stream.update_arrays, QueryResult.arrays(), StreamResult.arrays(),
Surface.as_numpy(), WrenchJacobian.as_numpy()) needs it and raises
NumpyMissing without it; every other result is the same tuples and lists
whether numpy is installed or not.

    from contactd_client import Client, Body
    with Client("127.0.0.1:7411") as c:
        ball = c.register_sphere(0.05, modulus=1e5, hint=0.01)
        floor = c.register_half_space(rigid=True)
        res = c.query([Body(1, ball, position=(0, 0, 0.045)), Body(2, floor)],
                      pairs=[(1, 2)], detail="patches")
        print(res.pairs[0].force_a, res.pairs[0].area)

Results are typed dataclasses of floats, tuples and lists, with enums
(ContactStatus, EnergyStatus, compared equal to their lower-case names).
A Client may be shared between threads; every call takes ``timeout``
(None: the client's). Each Stream yields only its own results, with their
sequence; Stream.latest() returns the newest (client.py).
Errors raise ContactdError with the server's gRPC code name, message and
field; transport problems raise ContactdError with ``remote = False``
(DEADLINE_EXCEEDED for a timeout, UNAVAILABLE for a refused connection) and
a connection lost under a request raises its subclass ConnectionLost
(``retryable``). The client survives a restart of the server: it
reconnects (to any of several addresses), registers its geometry again
where the server lacks it and reopens its streams (client.py).

Modules: transport (framing, addresses, reconnecting with backoff), client
(Client, Stream and recovery), recovery (kept registrations, events),
messages (result types and request builders), arrays (numpy), errors.
"""

from ._pb import pb
from .arrays import NumpyMissing, PairArrays, stream_update_arrays_request
from .client import DEFAULT_ADDR, Client, Stream
from .errors import ConnectionLost, ContactdError, StreamReopened
from .messages import (PROTOCOL_VERSION, Body, ContactModel, ContactStatus, Detail, EnergyStatus, HelloResult,
                       PairResult, Patch, PointContact, QueryResult, ReducedContact, RegisterResult, Representation,
                       Speculative, StreamResult,
                       Surface, WrenchJacobian, close_stream_request, has_request, hello_request,
                       open_stream_request, query_request, register_request, release_request, stats_request,
                       stream_update_request)
from .recovery import GeometryReregisteredEvent, ReconnectedEvent, Registrations, StreamReopenedEvent
from .transport import Backoff, Transport, decode_varint, encode_varint, parse_addresses

__all__ = [
    "Client", "Body", "ContactdError", "PairResult", "Patch", "Surface", "QueryResult",
    "StreamResult", "Stream", "RegisterResult", "HelloResult", "DEFAULT_ADDR", "PROTOCOL_VERSION",
    "ContactStatus", "EnergyStatus", "Detail", "Representation", "ContactModel", "PointContact", "ReducedContact",
    "Speculative",
    "NumpyMissing", "PairArrays", "stream_update_arrays_request",
    "encode_varint", "decode_varint", "hello_request", "register_request", "has_request",
    "release_request", "stats_request", "query_request", "open_stream_request", "stream_update_request",
    "close_stream_request", "WrenchJacobian", "pb",
    "ConnectionLost", "StreamReopened", "Backoff", "Transport", "parse_addresses", "Registrations",
    "ReconnectedEvent", "GeometryReregisteredEvent", "StreamReopenedEvent",
]

__version__ = "0.1.0"
