from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # The event log is the largest table: the index is built without holding writes back.
    atomic = False

    dependencies = [
        ("conversations", "0018_sandbox_host_org_written"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="event",
            index=models.Index(
                condition=models.Q(("type", "session.notice")),
                fields=["session", "seq"],
                name="event_notice_idx",
            ),
        ),
    ]
