"""Run the test identity provider: `python -m tests.oidc_idp.serve PORT STATE_DIR CLIENT_ID CLIENT_SECRET
REDIRECT_URI USER:PASSWORD:EMAIL ...`. Migrates its SQLite database, generates its RSA signing key, registers
the client (confidential, authorization code, RS256, consent skipped) and its users, prints `ready`, then
serves HTTP until killed."""

import os
import sys
from pathlib import Path
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


class _Threading(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main() -> None:
    port, state, client_id, client_secret, redirect_uri, *users = sys.argv[1:]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    os.environ["IDP_RSA_PRIVATE_KEY"] = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    os.environ["IDP_DATABASE"] = str(Path(state) / "idp.sqlite3")
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_idp.settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for spec in users:
        username, password, email = spec.split(":")
        User.objects.create_user(username, email=email, password=password, first_name=username.title())
    Application.objects.create(
        name="hangar",
        client_id=client_id,
        client_secret=client_secret,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect_uri,
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    server = make_server("127.0.0.1", int(port), get_wsgi_application(), _Threading, _Quiet)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
