"""drf-spectacular descriptions of our token authentication (imported by AccountsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "hangar.accounts.authentication.TokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "hgr_<id>_<secret>"}


class BasicTokenScheme(OpenApiAuthenticationExtension):
    target_class = "hangar.accounts.authentication.BasicTokenAuthentication"
    name = "basicToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Any username; the password is an API token.",
        }
