"""Password hashing for the users the tests make: PBKDF2 as in production, at 1,000 iterations.

Django's default (1,000,000 iterations) costs about 0.2 CPU-s per password hashed or checked on these
2-core machines, and most tests make two or three personas (tests/conftest.py): hundreds of CPU-seconds
over a run of the suite. A hash keeps the algorithm's name (`pbkdf2_sha256`) and carries its iteration
count, so the web servers and workers the tests start verify it with Django's default hasher (which
then re-hashes it at the default count, as it would any older hash). tests/conftest.py installs it for
every test process, the foundation and in-process loop tests included (they swapped in MD5 per test
before, which the servers other tests start could not verify)."""

from django.conf import global_settings
from django.contrib.auth import hashers


class FastPBKDF2PasswordHasher(hashers.PBKDF2PasswordHasher):
    iterations = 1000


def install(settings) -> None:
    settings.PASSWORD_HASHERS = [
        "tests.password_hashing.FastPBKDF2PasswordHasher",
        *(name for name in global_settings.PASSWORD_HASHERS if not name.endswith(".PBKDF2PasswordHasher")),
    ]
    hashers.get_hashers.cache_clear()
    hashers.get_hashers_by_algorithm.cache_clear()
