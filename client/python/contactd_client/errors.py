"""The client's exceptions: ContactdError for every failed request, and its
subclasses for a lost connection (ConnectionLost) and for a stream the
client reopened on a new connection (StreamReopened)."""
from typing import Any

from ._pb import pb

__all__ = ["ContactdError", "ConnectionLost", "StreamReopened"]


class ContactdError(Exception):
    """A failed request: ``code`` (gRPC canonical number), ``code_name``
    ("INVALID_ARGUMENT", ...), ``message``, ``field`` (path of the offending
    field, may be empty), ``remote`` (True if the server sent it), and for a
    stream's failed computation ``stream_id`` and ``sequence`` (the update it
    answers; 0 otherwise). ``retryable`` is True when the same request may
    simply be sent again (ConnectionLost)."""

    retryable = False

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


class ConnectionLost(ContactdError):
    """The connection broke (or could not be made again) while a request was
    in flight: the request may or may not have run on the server, and its
    reply is lost. ``retryable`` is True when the client will reconnect on
    its next call (reconnect is on and the client was not closed), so the
    request can be sent again: every request but a stream update is safe to
    repeat (queries and registrations are idempotent). code_name is
    UNAVAILABLE, ``remote`` False, ``address`` the server it was talking
    to."""

    def __init__(self, message: str, retryable: bool = True, address: str = ""):
        super().__init__(pb.UNAVAILABLE, message, remote=False)
        self.retryable = retryable
        self.address = address


class StreamReopened(ContactdError):
    """Raised once by Stream.result() after the client reopened the stream
    on a new connection, when nobody was told by a callback (neither the
    stream's ``on_reopen`` nor the client's ``on_event`` is set). ``event``
    is the StreamReopenedEvent: the updates after
    ``event.last_result_sequence`` got no result and must be sent again.
    Calling result() again continues with the reopened stream."""

    retryable = True

    def __init__(self, event: Any) -> None:
        super().__init__(pb.UNAVAILABLE, "stream %d was reopened as stream %d on %s after the connection broke; "
                         "updates after sequence %d got no result: send them again"
                         % (event.old_id, event.new_id, event.address, event.last_result_sequence), remote=False)
        self.event = event
