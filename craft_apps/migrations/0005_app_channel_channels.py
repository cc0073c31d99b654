"""AppChannel's ``beta`` column becomes ``channels``: the names of the channels an app is served
on beyond stable, so a new channel needs no new column. The data moves both ways: ``beta``
on is ``["beta"]``, and back, ``"beta"`` in the list is ``beta`` on."""

from typing import Any

from django.db import migrations, models


def beta_to_channels(apps: Any, schema_editor: Any) -> None:
    AppChannel = apps.get_model("craft_apps", "AppChannel")
    db = schema_editor.connection.alias
    AppChannel.objects.using(db).filter(beta=True).update(channels=["beta"])


def channels_to_beta(apps: Any, schema_editor: Any) -> None:
    AppChannel = apps.get_model("craft_apps", "AppChannel")
    db = schema_editor.connection.alias
    on = [row.pk for row in AppChannel.objects.using(db).all() if "beta" in (row.channels or [])]
    AppChannel.objects.using(db).filter(pk__in=on).update(beta=True)


class Migration(migrations.Migration):
    dependencies = [
        ("craft_apps", "0004_release_policy"),
    ]

    operations = [
        migrations.AddField(
            model_name="appchannel",
            name="channels",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="The channels this app is served on beyond stable (beta: its prereleases, "
                "GET …/release_info?channel=beta). Any of them costs one more GitHub request per poll "
                "interval for this app.",
            ),
        ),
        migrations.RunPython(beta_to_channels, channels_to_beta),
        migrations.RemoveField(model_name="appchannel", name="beta"),
    ]
