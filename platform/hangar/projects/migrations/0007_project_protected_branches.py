from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0006_project_agents"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="protected_branches",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
