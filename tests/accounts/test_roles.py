"""require_role: the one role check every service makes. It trusts the membership the edge loaded for this
request (Actor.membership) only when it is the actor's own in the org asked about."""

import re

import pytest

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import require_role
from hangar.audit.models import ActorType
from hangar.errors import NotFound, PermissionDenied

pytestmark = pytest.mark.django_db


def actor_of(persona, membership=None, org_id=None) -> Actor:
    return Actor(
        type=ActorType.TOKEN, org_id=org_id or persona.org.pk, user=persona.user, membership=membership
    )


def test_it_uses_the_membership_the_edge_already_loaded(alice, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert require_role(actor_of(alice, alice.membership), alice.org.pk, Role.ADMIN) == alice.membership


def test_without_one_it_reads_the_membership(alice, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert require_role(actor_of(alice), alice.org.pk, Role.ADMIN) == alice.membership


def test_it_does_not_trust_a_membership_of_another_org(alice, charlie):
    # charlie's own globex membership says nothing about acme, where he is not a member.
    actor = actor_of(charlie, charlie.membership, org_id=alice.org.pk)
    with pytest.raises(NotFound):
        require_role(actor, alice.org.pk, Role.VIEWER)


def test_it_does_not_trust_another_users_membership(alice, bob):
    # bob is a member of acme, but alice's owner membership must not lend him her role.
    with pytest.raises(PermissionDenied):
        require_role(actor_of(bob, alice.membership), alice.org.pk, Role.OWNER)


def test_a_foreign_org_is_not_found_and_a_low_role_is_refused_naming_the_role(alice, bob, charlie):
    with pytest.raises(NotFound):
        require_role(actor_of(charlie, charlie.membership), alice.org.pk, Role.VIEWER)
    with pytest.raises(PermissionDenied, match=re.escape("This requires the admin role or higher.")):
        require_role(actor_of(bob, bob.membership), alice.org.pk, Role.ADMIN)
