"""Who a run is by: its member, so a store shared by several can tell one member's many
runs from many members' runs (a house rule needs runs of several, ``recall.predict``).

A member is the user and host a run was recorded on, or the name ``REFLECT_MEMBER``
configures, stored only as a digest: the point is to tell members apart, and a user's
and a host's names are nobody's business in a team's store. The digest is plain, not
keyed: every member must derive the same value for the same name without asking the
store (a capture kept aside while it is away has its member too), and any key they all
shared would be readable by whoever reads the store. A digest of a guessable name can
be guessed: it keeps the name out of sight, it does not make it secret."""

from __future__ import annotations

import os
import re

from reflect.base.digest import sha256

# A member as the store keeps it: the first 16 hex digits of its name's digest (64 bits:
# no two of a team's members collide).
FORM = re.compile(r"[0-9a-f]{16}")
_SALT = b"reflect member\0"  # this project's digests, not a bare SHA-256 of the name


def member_id(name: str) -> str:
    """``name`` as the store keeps it; one already in that form stays as it is, so a
    context made again from its own variables names the same member."""
    if FORM.fullmatch(name):
        return name
    return sha256(_SALT + name.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def this_user() -> str:
    """``user@host`` of this process: its real user id's name (not what the environment
    says), and the machine's."""
    try:
        import pwd

        user = pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):  # no passwd entry (a container's uid): the number
        user = str(os.getuid())
    return f"{user}@{os.uname().nodename}"
