"""The ``guarded`` release policy: its minimum of installs, its failure threshold, its optional
webhook and what it decided per release (``guard``). A policy's kind keeps its choices in the
model alone (``policy_models.KindField``), as a channel's (0006): a new kind needs no migration."""

from decimal import Decimal

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("craft_apps", "0006_channel_choices_off_the_schema"),
    ]

    operations = [
        migrations.AlterField(
            model_name="releasepolicy",
            name="policy",
            field=models.CharField(
                default="immediate",
                help_text="immediate: a new release is served at once. staged: it starts as a rollout following the schedule from its publication. guarded: staged, each step taken only while the release's install reports are healthy. approval: it waits for an approval here.",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="releasepolicy",
            name="min_installs",
            field=models.PositiveIntegerField(
                default=200,
                help_text="guarded: the distinct installs a release needs reported before its next step.",
                validators=[django.core.validators.MaxValueValidator(10000000)],
            ),
        ),
        migrations.AddField(
            model_name="releasepolicy",
            name="max_failing_percent",
            field=models.DecimalField(
                decimal_places=2,
                default=Decimal("2.00"),
                help_text="guarded: the most of those installs that may fail, crash or roll back (percent); over it, the rollout pauses itself until resumed.",
                max_digits=5,
                validators=[
                    django.core.validators.MinValueValidator(Decimal("0")),
                    django.core.validators.MaxValueValidator(Decimal("100")),
                ],
            ),
        ),
        migrations.AddField(
            model_name="releasepolicy",
            name="notify_url",
            field=models.URLField(
                blank=True,
                help_text="guarded: a webhook (Slack-compatible) told when a rollout pauses itself; optional.",
                max_length=500,
            ),
        ),
        migrations.AddField(
            model_name="releasepolicy",
            name="guard",
            field=models.TextField(
                blank=True,
                editable=False,
                max_length=6400,
                validators=[django.core.validators.MaxLengthValidator(6400)],
            ),
        ),
    ]
