"""The generated protocol module contactd_pb2, found next to this package
(where the package build puts it), on sys.path, or in CONTACTD_PB2_DIR."""
import os
import sys

try:
    from . import contactd_pb2 as pb  # type: ignore
except ImportError:  # pragma: no cover - depends on the installation
    _d = os.environ.get("CONTACTD_PB2_DIR")
    if _d and _d not in sys.path:
        sys.path.append(_d)
    import contactd_pb2 as pb  # type: ignore

__all__ = ["pb"]
