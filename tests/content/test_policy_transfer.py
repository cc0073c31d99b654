"""The release policies in ``craft_apps_notices`` export and import: every field an operator
relies on travels (when the policy took effect, its approvals, who changed it), a bad schedule
is refused with its line, and an export made before policies leaves them as they are."""

from __future__ import annotations

from datetime import datetime

import pytest

from craft_apps.content.policy_models import ReleasePolicy
from craft_apps.content.transfer import ImportRefused, export_notices, import_notices
from craft_apps.kernel.compat import UTC

pytestmark = pytest.mark.django_db

SINCE = datetime(2026, 10, 1, tzinfo=UTC)


def saved() -> ReleasePolicy:
    row = ReleasePolicy(app_key="photocraft", channel="beta", policy="approval", reason="Testers first.")
    row.approve("v0.6.0")
    row.changed_by = "operator"
    row.full_clean()
    row.save()
    ReleasePolicy.objects.filter(pk=row.pk).update(effective_from=SINCE)
    return row


def test_a_policy_goes_out_and_comes_back_as_it_was():
    row = saved()
    document = export_notices()
    [exported] = document["release_policies"]
    assert exported["effective_from"] == "2026-10-01T00:00:00Z"
    assert (exported["approved"], exported["changed_by"]) == ("v0.6.0", "operator")
    ReleasePolicy.objects.all().delete()
    report = import_notices(document)
    assert report.counts["release_policies"].added == 1
    back = ReleasePolicy.objects.get(pk=row.pk)
    assert (back.policy, back.effective_from, back.approved_tags()) == ("approval", SINCE, ["v0.6.0"])


def test_a_bad_schedule_is_refused_with_its_row_and_nothing_is_written():
    saved()
    document = export_notices()
    document["release_policies"][0].update(policy="staged", schedule="+24h 25, +0h 50")
    with pytest.raises(ImportRefused) as refused:
        import_notices(document)
    assert any(
        "release_policies[0]" in p and "later than the one before" in p for p in refused.value.problems
    )
    assert ReleasePolicy.objects.get().policy == "approval"


def test_an_export_made_before_policies_leaves_them_as_they_are():
    saved()
    document = export_notices()
    del document["release_policies"]
    import_notices(document)
    assert ReleasePolicy.objects.count() == 1
