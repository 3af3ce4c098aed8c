"""The digests the project takes (names of files, keys, fingerprints): SHA-256 and BLAKE2b
from CPython's own implementations. ``hashlib`` loads ``_hashlib``, which starts OpenSSL:
~2.5 ms of every cold process, and a hook starts one per tool call, for digests of a few
short strings. The digests are the same; a build without them gets hashlib's."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's flag (mypy knows it): this module loads no typing
if TYPE_CHECKING:  # hashlib's types: the modules below have no stubs
    from hashlib import blake2b, sha256
else:
    try:
        from _blake2 import blake2b

        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # a build with OpenSSL's alone
        from hashlib import blake2b, sha256

__all__ = ["blake2b", "sha256"]
