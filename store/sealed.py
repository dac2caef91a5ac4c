"""Secrets of other services (a Label Studio token) kept encrypted at rest, under the server secret.

The keys are derived from the data directory's server secret (:func:`crowdqa.store.private.server_secret`, the
one the dashboard's sessions use) with HMAC-SHA256 as the PRF of HKDF's expand step (RFC 5869), one key for
encryption and one for authentication. Encryption is that PRF in counter mode over a random 16-byte nonce (a
stream cipher whose security is the PRF's), authenticated by HMAC-SHA256 over nonce and ciphertext
(encrypt-then-MAC, Bellare & Namprempre 2000). The standard library has no block cipher, and crowdqa adds no
cryptography dependency for one token; the sealed text names its scheme (``v1.``) so another can follow.

A sealed value opens only with the same server secret: a data directory whose secret is replaced loses its
sealed tokens (they must be given again), never shows them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from crowdqa.store.private import server_secret

__all__ = ["seal", "unseal", "SealError"]

_PREFIX = "v1."
_NONCE = 16
_TAG = 32


class SealError(ValueError):
    """A sealed value that does not open (another server secret, or altered)."""


def _keys(secret: bytes) -> tuple[bytes, bytes]:
    enc = hmac.new(secret, b"crowdqa sealed v1 encryption\x01", hashlib.sha256).digest()
    mac = hmac.new(secret, b"crowdqa sealed v1 authentication\x01", hashlib.sha256).digest()
    return enc, mac


def _stream(key: bytes, nonce: bytes, n: int) -> bytes:
    blocks = (hmac.new(key, nonce + i.to_bytes(8, "big"), hashlib.sha256).digest() for i in range((n + 31) // 32))
    return b"".join(blocks)[:n]


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def seal(data_dir: str | os.PathLike, plaintext: str) -> str:
    """``plaintext`` encrypted and authenticated under the data directory's server secret, as ASCII."""
    enc, mac = _keys(server_secret(data_dir))
    nonce = secrets.token_bytes(_NONCE)
    raw = plaintext.encode("utf-8")
    body = nonce + _xor(raw, _stream(enc, nonce, len(raw)))
    tag = hmac.new(mac, body, hashlib.sha256).digest()
    return _PREFIX + base64.urlsafe_b64encode(body + tag).decode("ascii")


def unseal(data_dir: str | os.PathLike, sealed: str) -> str:
    """The plaintext of :func:`seal`; SealError if it was sealed under another secret or altered."""
    if not sealed.startswith(_PREFIX):
        raise SealError("not a sealed value of this version")
    try:
        blob = base64.urlsafe_b64decode(sealed[len(_PREFIX):].encode("ascii"))
    except ValueError:
        raise SealError("not a sealed value") from None
    if len(blob) < _NONCE + _TAG:
        raise SealError("not a sealed value")
    enc, mac = _keys(server_secret(data_dir))
    body, tag = blob[:-_TAG], blob[-_TAG:]
    if not hmac.compare_digest(tag, hmac.new(mac, body, hashlib.sha256).digest()):
        raise SealError("the sealed value does not open with this server secret (replaced, or the value altered)")
    nonce, ct = body[:_NONCE], body[_NONCE:]
    return _xor(ct, _stream(enc, nonce, len(ct))).decode("utf-8")
