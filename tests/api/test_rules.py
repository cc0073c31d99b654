"""The pure rules behind the endpoint's headers: the validator's input, entity-tag lists and
Accept-Encoding weights (the HTTP behaviour is in test_http_caching)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from craft_apps.api.negotiation import acceptable_weight, choose_encoding, parse_accept_encoding
from craft_apps.api.validators import not_modified, parse_if_none_match, weak_etag, without_fetch_times


def answer_data() -> dict[str, Any]:
    return {
        "success": True,
        "release_info": {
            "apps": {
                "photocraft": {
                    "name": "PhotoCraft",
                    "latest_release": {"tag": "v1"},
                    "app_last_fetched": "A",
                },
                "vectorcraft": {"name": "VectorCraft", "latest_release": None, "app_last_fetched": "B"},
            },
            "last_fetched": "A",
        },
        "app_renames": [],
        "repo_renames": [],
        "important_notices": {"announcements": [], "alerts": []},
    }


def changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = answer_data()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


class TestTheValidatorCovers:
    def test_everything_but_fetch_times(self):
        stripped = without_fetch_times(answer_data())
        assert "last_fetched" not in stripped["release_info"]
        assert all("app_last_fetched" not in app for app in stripped["release_info"]["apps"].values())
        assert stripped["important_notices"] == answer_data()["important_notices"]

    @pytest.mark.parametrize(
        "path",
        [("release_info", "last_fetched"), ("release_info", "apps", "vectorcraft", "app_last_fetched")],
    )
    def test_not_fetch_times(self, path):
        assert weak_etag(changed(path, "later")) == weak_etag(answer_data())

    @pytest.mark.parametrize(
        ("path", "value"),
        [
            (("release_info", "apps", "photocraft", "latest_release"), {"tag": "v2"}),
            (("app_renames",), [{"old_name": "PhotoCraft", "new_name": "PixelCraft"}]),
            (("repo_renames",), [{"old_name": "a/b", "new_name": "a/c"}]),
            (("important_notices", "alerts"), [{"title": "Maintenance", "body": "tonight"}]),
            (
                ("release_info", "apps", "photocraft", "download_page"),
                "https://example.com",
            ),  # a field added later
            (("release_info", "apps", "newcraft"), {"name": "NewCraft", "latest_release": None}),
        ],
    )
    def test_anything_else_a_launcher_sees(self, path, value):
        assert weak_etag(changed(path, value)) != weak_etag(answer_data())

    def test_is_the_same_whatever_the_key_order(self):
        data = answer_data()
        reordered = dict(reversed(list(copy.deepcopy(data).items())))
        assert weak_etag(reordered) == weak_etag(data)
        assert weak_etag(data).startswith('W/"') and len(weak_etag(data)) == 2 + 18


class TestEntityTagLists:
    @pytest.mark.parametrize(
        ("header", "tags"),
        [
            ('"a"', ['"a"']),
            ('W/"a", "b" ,W/"c"', ['W/"a"', '"b"', 'W/"c"']),
            ('"a,b", "c"', ['"a,b"', '"c"']),  # a comma may be inside an opaque tag
            ('bare, "x", w/"y", "z" junk, W/"ok"', ['"x"', 'W/"ok"']),
            ("", []),
            (" , ,", []),
        ],
    )
    def test_parsing(self, header, tags):
        assert parse_if_none_match(header) == tags

    def test_a_star_means_any(self):
        assert parse_if_none_match(" * ") is None
        assert not_modified("*", 'W/"x"')

    def test_weak_comparison(self):
        assert not_modified('"x"', 'W/"x"') and not_modified('W/"x"', 'W/"x"')
        assert not not_modified('"xy"', 'W/"x"') and not not_modified(None, 'W/"x"')


class TestAcceptEncoding:
    def test_weights(self):
        assert parse_accept_encoding("gzip;q=0.5, BR, x-gzip;q=1, *;q=0.001, identity;q=0") == {
            "gzip": 0.5,
            "br": 1.0,
            "*": 0.001,
            "identity": 0.0,
        }

    @pytest.mark.parametrize("bad_q", ["q=1.0001", "q=2", "q=-1", "q=.5", "q=", "q=0.1234", "q=abc"])
    def test_an_element_with_a_q_outside_the_grammar_counts_as_not_listed(self, bad_q):
        assert parse_accept_encoding(f"br;{bad_q}, gzip") == {"gzip": 1.0}

    @pytest.mark.parametrize("good_q", ["q=1", "q=1.", "q=1.000", "q=0", "q=0.", "q=0.999", "q = 0.5"])
    def test_every_q_of_the_grammar_is_read(self, good_q):
        assert "br" in parse_accept_encoding(f"br;{good_q}")

    def test_identity_not_listed_is_acceptable_but_last(self):
        assert acceptable_weight("identity", {"gzip": 0.001}) > 0
        assert choose_encoding("gzip;q=0.001") == "gzip"
        assert acceptable_weight("identity", {"*": 0.0}) == 0.0

    def test_only_codings_we_have_are_chosen(self):
        assert choose_encoding("zstd, br;q=0.1", available=("gzip", "identity")) == "identity"
        assert choose_encoding("zstd, br;q=0.1") == "br"
        assert choose_encoding("bad token!, gzip") == "gzip"
