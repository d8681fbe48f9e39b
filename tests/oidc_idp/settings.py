"""A tiny Django project that is an OpenID Connect provider (django-oauth-toolkit), for the SSO tests: it
runs in its own process (serve.py) on 127.0.0.1 with its own SQLite database, and Hangar signs in against
it over real HTTP: discovery, authorization code with PKCE, token exchange, JWKS, RS256 ID tokens."""

import os

SECRET_KEY = os.environ.get("IDP_SECRET_KEY", "test-idp-only")
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.oidc_idp.urls"
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["IDP_DATABASE"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/login/"
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}]
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": os.environ.get("IDP_RSA_PRIVATE_KEY", ""),
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "email": "Email", "profile": "Profile"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_idp.validator.EmailClaims",
}
