"""`access_changed(org_id, user_id)`: a person's access to an org shrank or may have (a membership removed
or its role changed, a token revoked). Sent after the transaction commits. Open streams of that person in
that org listen for it (hangar.realtime.access) and check their credentials again at once, instead of at
their next periodic re-check; accounts itself knows nothing of streams."""

from django.db import transaction
from django.dispatch import Signal

access_changed = Signal()


def announce_access_changed(*, org_id: int, user_id: int) -> None:
    transaction.on_commit(lambda: access_changed.send(sender=None, org_id=org_id, user_id=user_id))


# `member_leaving(org_id, user_id)`: sent inside member_remove's transaction, before the membership goes.
# Apps above accounts that hold a member's own things in that org (personal provider keys) remove them
# there and answer how many they removed, so the removal is one atomic change.
member_leaving = Signal()
