"""A control's ``action`` keeps its choices and help text (``controls.actions``' registry) in the
model alone (``content.models.ActionField``), so a new action needs no migration. No SQL:
neither reaches the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("craft_apps", "0007_guarded_policy"),
    ]

    operations = [
        migrations.AlterField(
            model_name="releasecontrol",
            name="action",
            field=models.CharField(max_length=16),
        ),
    ]
