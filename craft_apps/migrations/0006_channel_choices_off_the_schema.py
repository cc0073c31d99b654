"""A control's and a policy's ``channel`` keep their choices (``domain.Channel``'s) in the
model alone (``content.models.ChannelField``), so a new channel needs no migration. No SQL:
choices never reach the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("craft_apps", "0005_app_channel_channels"),
    ]

    operations = [
        migrations.AlterField(
            model_name="releasecontrol",
            name="channel",
            field=models.CharField(
                blank=True,
                default="",
                help_text="Where a hold or a rollout applies; a yank applies on every channel.",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="releasepolicy",
            name="channel",
            field=models.CharField(
                default="stable",
                help_text="The channel whose new releases the policy applies to.",
                max_length=16,
            ),
        ),
    ]
