"""Personas for usage and audit reads: erin, an auditor of acme (reads the audit log and usage, nothing
else), beside alice (owner), bob (member) and charlie (owner of globex)."""

import pytest

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken, Membership, Role, User
from hangar.usage.ledger_services import ModelCall, usage_record
from tests.foundation_fixtures import _fresh_throttles  # noqa: F401


@pytest.fixture
def erin(acme, alice):
    """An auditor of acme."""
    from tests.conftest import Persona

    user = User.objects.create_user("erin@acme.test", password="pw-erin")
    membership = Membership.objects.create(org=acme, user=user, role=Role.AUDITOR)
    raw, prefix = tokens.generate()
    row = ApiToken.objects.create(org=acme, user=user, name="test", prefix=prefix, digest=tokens.digest(raw))
    return Persona(user, acme, membership, alice.project, raw, row)


def record(
    persona, *, model="m1", cost=0.01, session="ses_x", kind="step", outcome="ok", estimated=False, **tokens_
):
    """One ledger row (and its rollup) as a model call by `persona` in its project would write it."""
    usage_record(
        ModelCall(
            org_id=persona.org.pk,
            project_id=persona.project.pk,
            session_id=session,
            user_id=persona.user.pk,
            kind=kind,
            source="app",
            provider="scripted",
            model=model,
            input_tokens=tokens_.get("input", 100),
            output_tokens=tokens_.get("output", 10),
            cost=cost,
            latency_ms=5,
            outcome=outcome,
            tokens_estimated=estimated,
        )
    )
