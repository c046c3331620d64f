"""API tokens, for people (committee) and for schedulers (allocations): made and hashed one way.

Only the SHA-256 of a token is stored; the token itself is shown once. A token is long and
random, so a plain (unsalted) hash is enough to look it up and useless to whoever reads the table.
"""

from __future__ import annotations

import hashlib
import secrets


def token_new(*, prefix: str) -> str:
    """A fresh token: `prefix` (which says what kind it is, e.g. "dks_") and 32 random bytes."""
    return prefix + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What is stored of a token, and what a presented token is looked up by."""
    return hashlib.sha256(token.encode()).hexdigest()
