"""Secrets of other services (a Label Studio token) kept encrypted at rest, under the server secret.

A sealed value is a Fernet token (the ``cryptography`` package: AES-128-CBC with HMAC-SHA256,
encrypt-then-MAC, a random IV and a timestamp; https://github.com/fernet/spec) behind the prefix ``v2.``. Its key
is derived from the data directory's server secret (:func:`crowdqa.store.private.server_secret`, the one the
dashboard's sessions use) with HKDF-SHA256 (RFC 5869) and a purpose label, so the session key and this one
never coincide. We use an audited construction rather than one of our own.

A sealed value opens only with the same server secret: a data directory whose secret is replaced loses its
sealed tokens (they must be given again), never shows them.
"""

from __future__ import annotations

import base64
import os

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from crowdqa.store.private import server_secret

__all__ = ["seal", "unseal", "SealError"]

_PREFIX = "v2."
_PURPOSE = b"crowdqa sealed secrets (Fernet key)"


class SealError(ValueError):
    """A sealed value that does not open (another server secret, or altered)."""


def _fernet(data_dir: str | os.PathLike) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PURPOSE).derive(server_secret(data_dir))
    return Fernet(base64.urlsafe_b64encode(key))


def seal(data_dir: str | os.PathLike, plaintext: str) -> str:
    """``plaintext`` encrypted and authenticated under the data directory's server secret, as ASCII."""
    return _PREFIX + _fernet(data_dir).encrypt(plaintext.encode("utf-8")).decode("ascii")


def unseal(data_dir: str | os.PathLike, sealed: str) -> str:
    """The plaintext of :func:`seal`; SealError if it was sealed under another secret or altered."""
    if not sealed.startswith(_PREFIX):
        raise SealError("not a sealed value of this version")
    try:
        return _fernet(data_dir).decrypt(sealed[len(_PREFIX):].encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError):
        raise SealError(
            "the sealed value does not open with this server secret (replaced, or the value altered)"
        ) from None
