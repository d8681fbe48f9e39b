"""`access_changed(org_id, user_id)`: a person's access to an org shrank or may have (a membership removed
or its role changed, a token revoked). Sent after the transaction commits. Open streams of that person in
that org listen for it (hangar.realtime.access) and check their credentials again at once, instead of at
their next periodic re-check; accounts itself knows nothing of streams."""

from django.db import transaction
from django.dispatch import Signal

access_changed = Signal()


def announce_access_changed(*, org_id: int, user_id: int) -> None:
    transaction.on_commit(lambda: access_changed.send(sender=None, org_id=org_id, user_id=user_id))
