"""The stand-in speaks GitHub's latest-release API: JSON shape, ETags, 404s, rate limits, records."""

from __future__ import annotations

import hashlib
import json

import pytest
import requests

from craft_apps.testing.demo_releases import demo_releases
from craft_apps.testing.fake_github import FakeGitHub, StatusFault
from tests.standin.support import START_EPOCH_S, ManualTime, latest_url

PHOTOCRAFT = "storytold/photocraft"
RATE_HEADERS = (
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-used",
    "x-ratelimit-reset",
    "x-ratelimit-resource",
)


def rate(response: requests.Response) -> tuple[int, int, int, int]:
    """(limit, remaining, used, reset) as the answer states them."""
    h = response.headers
    return (
        int(h["x-ratelimit-limit"]),
        int(h["x-ratelimit-remaining"]),
        int(h["x-ratelimit-used"]),
        int(h["x-ratelimit-reset"]),
    )


# --- Releases, ETags, 404 -----------------------------------------------------------------------


def test_serves_the_published_release_as_github_json(demo_github, http):
    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == demo_releases()[PHOTOCRAFT]
    body = response.json()
    assert body["tag_name"] == "v0.5.0"
    assert body["assets"][0]["digest"].startswith("sha256:")
    assert {"id", "node_id", "url", "author", "created_at"} <= set(body)


def test_the_url_has_no_trailing_slash_and_a_stopped_server_has_none():
    stand_in = FakeGitHub()
    with pytest.raises(RuntimeError):
        _ = stand_in.url
    with stand_in:
        assert stand_in.url.startswith("http://127.0.0.1:")
        assert not stand_in.url.endswith("/")
        assert int(stand_in.url.rsplit(":", 1)[1]) > 0


def test_the_etag_is_strong_and_is_the_digest_of_the_body(demo_github, http):
    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    etag = response.headers["etag"]
    assert etag == '"' + hashlib.sha256(response.content).hexdigest() + '"'
    assert not etag.startswith("W/")
    assert demo_github.etag_of(PHOTOCRAFT) == etag


def test_if_none_match_gets_a_304_without_a_body(demo_github, http):
    etag = http.get(latest_url(demo_github, PHOTOCRAFT)).headers["etag"]

    response = http.get(latest_url(demo_github, PHOTOCRAFT), headers={"If-None-Match": etag})

    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag
    assert all(name in response.headers for name in RATE_HEADERS)


@pytest.mark.parametrize("header", ['"stale"', "W/{etag}", '"other", {etag}', "*"])
def test_if_none_match_forms(demo_github, http, header):
    etag = demo_github.etag_of(PHOTOCRAFT)
    response = http.get(
        latest_url(demo_github, PHOTOCRAFT), headers={"If-None-Match": header.format(etag=etag)}
    )

    assert response.status_code == (200 if header == '"stale"' else 304)


def test_a_new_release_changes_the_etag_and_the_old_one_gets_the_new_body(github, http):
    github.publish(PHOTOCRAFT, {"tag_name": "v1.0.0", "assets": []})
    old_etag = http.get(latest_url(github, PHOTOCRAFT)).headers["etag"]
    github.publish(PHOTOCRAFT, {"tag_name": "v1.1.0", "assets": []})

    response = http.get(latest_url(github, PHOTOCRAFT), headers={"If-None-Match": old_etag})

    assert response.status_code == 200
    assert response.json()["tag_name"] == "v1.1.0"
    assert response.headers["etag"] != old_etag


def test_publish_keeps_its_own_copy(github, http):
    release = {"tag_name": "v1.0.0", "assets": []}
    github.publish(PHOTOCRAFT, release)
    release["tag_name"] = "changed later"

    assert http.get(latest_url(github, PHOTOCRAFT)).json()["tag_name"] == "v1.0.0"


def test_repository_names_are_case_insensitive_like_github(github, http):
    github.publish("StoryTold/PhotoCraft", {"tag_name": "v1.0.0", "assets": []})

    assert http.get(latest_url(github, PHOTOCRAFT)).status_code == 200


def test_a_repository_without_a_release_is_a_github_404(github, http):
    response = http.get(latest_url(github, "storytold/nothing-yet"))

    assert response.status_code == 404
    assert response.json()["message"] == "Not Found"
    assert response.json()["documentation_url"].startswith("https://docs.github.com/")
    assert all(name in response.headers for name in RATE_HEADERS)


def test_unpublish_brings_the_404_back(demo_github, http):
    demo_github.releases.unpublish(PHOTOCRAFT)

    assert http.get(latest_url(demo_github, PHOTOCRAFT)).status_code == 404
    assert http.get(latest_url(demo_github, "storytold/vectorcraft")).status_code == 200


def test_other_paths_are_404(demo_github, http):
    assert http.get(f"{demo_github.url}/repos/{PHOTOCRAFT}/releases/1").status_code == 404
    assert http.get(f"{demo_github.url}/repos/storytold/nothing/releases").status_code == 404
    assert http.get(f"{demo_github.url}/").status_code == 404


def test_the_release_list_serves_prereleases_drafts_and_deletions_with_its_own_etag(demo_github, http):
    url = f"{demo_github.url}/repos/{PHOTOCRAFT}/releases?per_page=2"
    latest = demo_github.published()[PHOTOCRAFT]
    rc = {**latest, "tag_name": "v9.0.0-rc.1", "published_at": "2030-01-01T00:00:00Z"}
    demo_github.releases.publish_prerelease(PHOTOCRAFT, rc)
    demo_github.releases.add_draft(PHOTOCRAFT, {**latest, "tag_name": "v9.1.0", "published_at": None})
    first = http.get(url)
    assert first.status_code == 200
    listed = [(r["tag_name"], r["prerelease"], r["draft"]) for r in first.json()]
    assert listed == [("v9.1.0", False, True), ("v9.0.0-rc.1", True, False)]  # newest first, per_page
    assert first.headers["ETag"] != demo_github.etag_of(PHOTOCRAFT)  # its own
    again = http.get(url, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    demo_github.releases.delete_release(PHOTOCRAFT, latest["tag_name"])  # the only stable one
    assert http.get(latest_url(demo_github, PHOTOCRAFT)).status_code == 404
    assert http.get(url, headers={"If-None-Match": first.headers["ETag"]}).status_code == 304  # same page
    whole = http.get(f"{demo_github.url}/repos/{PHOTOCRAFT}/releases?per_page=10").json()
    assert [r["tag_name"] for r in whole] == ["v9.1.0", "v9.0.0-rc.1"]  # the deleted one is gone
    assert [r.repo for r in demo_github.requests if "/releases?" in r.path] == [PHOTOCRAFT] * 4


def test_serves_the_web_side_of_a_release_without_counting_it(demo_github, http):
    release = demo_github.published()[PHOTOCRAFT]
    asset = release["assets"][0]
    base = f"{demo_github.url}/{PHOTOCRAFT}/releases"
    download = http.get(f"{base}/download/v0.5.0/{asset['name']}")
    assert download.status_code == 200
    assert download.headers["content-type"] == "text/plain; charset=utf-8"
    assert download.text == f"{asset['name']}: a stand-in for this file of PhotoCraft v0.5.0.\n"
    notes = http.get(f"{base}/tag/v0.5.0")
    assert notes.status_code == 200 and notes.text == release["body"]
    for missing in (
        f"{base}/download/v0.4.0/{asset['name']}",  # not the published tag
        f"{base}/download/v0.5.0/photocraft-9.9.9-windows-x64.msi",  # no such asset
        f"{base}/download/v0.5.0",
        f"{demo_github.url}/storytold/nosuchapp/releases/tag/v0.5.0",
    ):
        assert http.get(missing).status_code == 404, missing
    assert "x-ratelimit-used" not in download.headers
    assert all(r.repo is None for r in demo_github.requests)
    assert rate(http.get(latest_url(demo_github, PHOTOCRAFT)))[2] == 1, "only the API request counted"


def test_load_demo_publishes_thirteen_releases_under_the_web_url(epoch):
    with FakeGitHub(now=epoch, web_url="https://ghe.example.com/").load_demo() as stand_in:
        published = stand_in.published()
        assert len(published) == 13
        html_url = published[PHOTOCRAFT]["html_url"]
        assert html_url.startswith("https://ghe.example.com/storytold/photocraft/")


# --- Rate limits --------------------------------------------------------------------------------


def test_every_answer_states_the_core_rate_limit(demo_github, http):
    response = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert rate(response) == (60, 59, 1, int(START_EPOCH_S) + 3600)
    assert response.headers["x-ratelimit-resource"] == "core"


def test_unauthenticated_quota_counts_304s_then_refuses_with_403(demo_github, http):
    first = http.get(latest_url(demo_github, PHOTOCRAFT))
    etag = first.headers["etag"]
    answers = [
        http.get(latest_url(demo_github, PHOTOCRAFT), headers={"If-None-Match": etag}) for _ in range(59)
    ]

    assert {a.status_code for a in answers} == {304}
    assert [rate(a)[1] for a in answers[:3]] == [58, 57, 56]  # a 304 costs one request
    assert rate(answers[-1])[1:3] == (0, 60)

    refused = http.get(latest_url(demo_github, PHOTOCRAFT), headers={"If-None-Match": etag})
    assert refused.status_code == 403
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert int(refused.headers["x-ratelimit-reset"]) == int(START_EPOCH_S) + 3600
    assert refused.json()["message"].startswith("API rate limit exceeded for 127.0.0.1.")
    assert "etag" not in refused.headers


def test_authenticated_requests_have_their_own_larger_quota_and_304s_are_free(demo_github, http):
    auth = {"Authorization": "Bearer ghp_test_token"}
    first = http.get(latest_url(demo_github, PHOTOCRAFT), headers=auth)
    assert rate(first)[:3] == (5000, 4999, 1)

    revalidated = http.get(
        latest_url(demo_github, PHOTOCRAFT), headers={**auth, "If-None-Match": first.headers["etag"]}
    )
    assert revalidated.status_code == 304
    assert rate(revalidated)[:3] == (5000, 4999, 1)

    assert rate(http.get(latest_url(demo_github, PHOTOCRAFT)))[:3] == (60, 59, 1)  # the IP's own count


def test_an_exhausted_token_gets_403_without_its_token_in_the_answer(epoch, http):
    with FakeGitHub(now=epoch, authenticated_limit=2).load_demo() as stand_in:
        auth = {"Authorization": "Bearer ghp_secret_value"}
        assert [http.get(latest_url(stand_in, PHOTOCRAFT), headers=auth).status_code for _ in range(2)] == [
            200,
            200,
        ]

        refused = http.get(latest_url(stand_in, PHOTOCRAFT), headers=auth)
        assert refused.status_code == 403
        assert refused.headers["x-ratelimit-remaining"] == "0"
        assert refused.json()["message"].startswith("API rate limit exceeded for user ID ")
        assert "ghp_secret_value" not in refused.text
        assert "ghp_secret_value" not in "".join(f"{k}{v}" for k, v in refused.headers.items())

        other = http.get(latest_url(stand_in, PHOTOCRAFT), headers={"Authorization": "token other"})
        assert other.status_code == 200  # another token, another quota
        assert http.get(latest_url(stand_in, PHOTOCRAFT)).status_code == 200  # and the IP's is apart


def test_the_window_rolls_over_with_the_injected_clock(epoch, http):
    with FakeGitHub(now=epoch, unauthenticated_limit=2, window_s=600).load_demo() as stand_in:
        for _ in range(2):
            http.get(latest_url(stand_in, PHOTOCRAFT))
        refused = http.get(latest_url(stand_in, PHOTOCRAFT))
        reset = int(refused.headers["x-ratelimit-reset"])
        assert refused.status_code == 403
        assert reset == int(START_EPOCH_S) + 600

        epoch.advance(reset - epoch() - 1)
        assert http.get(latest_url(stand_in, PHOTOCRAFT)).status_code == 403  # one second early

        epoch.advance(1)
        again = http.get(latest_url(stand_in, PHOTOCRAFT))
        assert again.status_code == 200
        assert rate(again) == (2, 1, 1, reset + 600)


def test_a_malformed_authorization_header_is_bad_credentials(demo_github, http):
    response = http.get(latest_url(demo_github, PHOTOCRAFT), headers={"Authorization": "Bearer "})

    assert response.status_code == 401
    assert response.json()["message"] == "Bad credentials"
    assert rate(response)[0] == 60


def test_a_faulted_answer_still_states_the_rate_limit_but_costs_nothing(demo_github, http):
    demo_github.set_fault(PHOTOCRAFT, StatusFault(503, b'{"message": "Unavailable"}'))

    faulted = http.get(latest_url(demo_github, PHOTOCRAFT))

    assert faulted.status_code == 503
    assert rate(faulted)[1:3] == (60, 0)


# --- Recording ----------------------------------------------------------------------------------


def test_every_request_is_recorded_with_its_headers_status_and_time(demo_github, http, epoch: ManualTime):
    etag = demo_github.etag_of(PHOTOCRAFT)
    http.get(
        latest_url(demo_github, PHOTOCRAFT), headers={"If-None-Match": etag, "Authorization": "Bearer t0k"}
    )
    epoch.advance(5)
    http.get(latest_url(demo_github, "storytold/vectorcraft"))
    http.get(f"{demo_github.url}/elsewhere")

    first, second, third = demo_github.requests
    assert (first.method, first.path, first.repo, first.status) == (
        "GET",
        f"/repos/{PHOTOCRAFT}/releases/latest",
        PHOTOCRAFT,
        304,
    )
    assert first.headers["if-none-match"] == etag
    assert first.header("Authorization") == "Bearer t0k"
    assert first.time == START_EPOCH_S
    assert second.header("authorization") is None
    assert second.time == START_EPOCH_S + 5
    assert (third.repo, third.status) == (None, 404)


def test_requests_for_filters_by_repository_and_reset_clears(demo_github, http):
    for repo in (PHOTOCRAFT, "storytold/vectorcraft", PHOTOCRAFT):
        http.get(latest_url(demo_github, repo))

    assert [r.repo for r in demo_github.requests_for("StoryTold/PhotoCraft")] == [PHOTOCRAFT, PHOTOCRAFT]
    demo_github.reset_requests()
    assert demo_github.requests == []


def test_the_repr_of_a_recorded_request_hides_the_token(demo_github, http):
    http.get(latest_url(demo_github, PHOTOCRAFT), headers={"Authorization": "Bearer ghp_do_not_show"})

    (recorded,) = demo_github.requests
    assert "ghp_do_not_show" not in repr(recorded)
    assert "<redacted>" in repr(recorded)


def test_the_stand_ins_log_never_carries_the_token(demo_github, http, caplog):
    caplog.set_level("DEBUG", logger="craft_apps.testing.fake_github")
    http.get(latest_url(demo_github, PHOTOCRAFT), headers={"Authorization": "Bearer ghp_not_in_logs"})

    assert any(PHOTOCRAFT in r.getMessage() for r in caplog.records)  # requests are logged ...
    assert all("ghp_not_in_logs" not in r.getMessage() for r in caplog.records)  # ... without headers


def test_served_json_is_what_was_published_byte_for_byte(github, http):
    release = {"tag_name": "v2.0.0", "name": "Ünïcode", "assets": [], "unknown": [1, 2]}
    github.publish(PHOTOCRAFT, release)

    response = http.get(latest_url(github, PHOTOCRAFT))

    assert json.loads(response.content.decode("utf-8")) == release
