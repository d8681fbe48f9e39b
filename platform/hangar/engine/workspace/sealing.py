"""The agent channel's secret on its way from a sandbox host to the engine worker that asked for it.

A host task's result travels through Redis (the result backend) and Celery writes results into its log
("Task ... succeeded: <result>") and into task events. So the host never returns the secret itself: it
seals it to a key only the asking worker process holds. Each engine worker process makes an X25519 key
pair when it first needs one and sends its public half with the request (hangar.engine.workspace.remote);
the host seals with a fresh key pair of its own (X25519, HKDF-SHA256, AES-256-GCM, the session id as
associated data, so a sealed secret cannot be passed off as another session's). Neither side needs the
platform's encryption keys: a host holds none (docs/scale-out.md). What Redis, a log line or an event
carries is useless without the worker's private key, which never leaves its memory.
"""

from __future__ import annotations

import os
import threading

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from sandbox.protocol import SandboxUnavailable

_INFO = b"hangar agent channel secret v1"


def _raw(key: X25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def _key(shared: bytes, sender: bytes, recipient: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=sender + recipient, info=_INFO).derive(shared)


def seal(secret: bytes, recipient_hex: str, context: str) -> dict[str, str]:
    """`secret` sealed to the public key `recipient_hex` (an Opener's), bound to `context`."""
    recipient = X25519PublicKey.from_public_bytes(bytes.fromhex(recipient_hex))
    mine = X25519PrivateKey.generate()
    sender = _raw(mine.public_key())
    key = _key(mine.exchange(recipient), sender, _raw(recipient))
    nonce = os.urandom(12)
    box = AESGCM(key).encrypt(nonce, secret, context.encode())
    return {"epk": sender.hex(), "nonce": nonce.hex(), "box": box.hex()}


class Opener:
    """A process's key pair: its public half goes with a request, its private half opens the answer."""

    def __init__(self) -> None:
        self._private = X25519PrivateKey.generate()
        self.public_hex = _raw(self._private.public_key()).hex()

    def open(self, sealed: dict[str, str], context: str) -> bytes:
        try:
            sender = bytes.fromhex(sealed["epk"])
            shared = self._private.exchange(X25519PublicKey.from_public_bytes(sender))
            key = _key(shared, sender, bytes.fromhex(self.public_hex))
            return AESGCM(key).decrypt(
                bytes.fromhex(sealed["nonce"]), bytes.fromhex(sealed["box"]), context.encode()
            )
        except (KeyError, TypeError, ValueError, InvalidTag) as exc:
            raise SandboxUnavailable(f"the sandbox host's answer for {context} could not be opened") from exc


_opener: Opener | None = None
_lock = threading.Lock()


def opener() -> Opener:
    """This process's Opener (made once)."""
    global _opener
    with _lock:
        if _opener is None:
            _opener = Opener()
        return _opener
