"""Encryption at rest for provider keys and project env values: MultiFernet over settings.ENCRYPTION_KEYS.
The first key encrypts; every key decrypts, so an operator rotates by prepending a new key, running
`manage.py rotate_encryption_keys`, then dropping the old key."""

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


def _fernet() -> MultiFernet:
    # Built per call (cheap) so a settings override in tests or a key change on reload takes effect.
    return MultiFernet(
        [Fernet(key.encode() if isinstance(key, str) else key) for key in settings.ENCRYPTION_KEYS]
    )


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str) -> str:
    return _fernet().decrypt(ciphertext.encode()).decode()


def rotate(ciphertext: str) -> str:
    """Re-encrypt under the first key (MultiFernet.rotate keeps the original timestamp)."""
    return _fernet().rotate(ciphertext.encode()).decode()


def mask(secret: str) -> str:
    """What people may see of a secret: its last four characters, and only if it is long enough
    that four characters reveal little."""
    return f"…{secret[-4:]}" if len(secret) >= 12 else "…"
