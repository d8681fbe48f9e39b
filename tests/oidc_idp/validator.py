from oauth2_provider.oauth2_validators import OAuth2Validator


class EmailClaims(OAuth2Validator):
    """The claims Hangar provisions from: email (verified) and name."""

    def get_additional_claims(self, request):
        return {"email": request.user.email, "email_verified": True, "name": request.user.first_name}
