"""Email domains are proven before they route sign-ins. Claims made before this migration are not proven
(nothing proved them): each gets a token, and its org proves it (DNS TXT) or the operator approves it."""

import secrets

from django.db import migrations, models


def give_tokens(apps, schema_editor):
    SsoDomain = apps.get_model("sso", "SsoDomain")
    for claim in SsoDomain.objects.filter(token=""):
        claim.token = secrets.token_urlsafe(24)
        claim.save(update_fields=["token"])


class Migration(migrations.Migration):
    dependencies = [("sso", "0001_identity_providers")]

    operations = [
        migrations.AlterField(model_name="ssodomain", name="domain", field=models.CharField(max_length=253)),
        migrations.AddField(
            model_name="ssodomain",
            name="token",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="ssodomain", name="verified_at", field=models.DateTimeField(blank=True, null=True)
        ),
        migrations.AddField(
            model_name="ssodomain",
            name="verified_by",
            field=models.CharField(
                blank=True, choices=[("dns", "Dns"), ("operator", "Operator")], max_length=16
            ),
        ),
        migrations.AddField(
            model_name="ssodomain",
            name="created_at",
            field=models.DateTimeField(auto_now_add=True, null=True),
        ),
        migrations.RunPython(give_tokens, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="ssodomain",
            constraint=models.UniqueConstraint(fields=("provider", "domain"), name="sso_domain_claim_once"),
        ),
        migrations.AddConstraint(
            model_name="ssodomain",
            constraint=models.UniqueConstraint(
                condition=models.Q(("verified_at__isnull", False)),
                fields=("domain",),
                name="sso_domain_proven_once",
            ),
        ),
    ]
