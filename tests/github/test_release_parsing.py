"""Every rule of ``parse_release`` and every asset-name case of ``parse_platform``."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from craft_apps.github.parsing import (
    MAX_NOTES_BYTES,
    ReleaseRejected,
    parse_platform,
    parse_release,
    read_release,
)
from craft_apps.kernel.codec import decode_release, encode_release
from craft_apps.kernel.compat import UTC
from craft_apps.kernel.domain import (
    MAX_TAG_BYTES,
    AssetPlatform,
    CraftAppArch,
    CraftAppOs,
    CraftAppPackageType,
    Release,
)
from craft_apps.kernel.source import MAX_ASSETS

from .support import HASH, REPO, WEB_URL, github_asset, github_release

DOWNLOADS = f"{WEB_URL}/{REPO}/releases/download/v0.5.0/"


def parse(**overrides: Any) -> Release:
    return parse_release(json.dumps(github_release(**overrides)).encode(), REPO)


def parse_assets(*assets: Any) -> list[str]:
    return [asset.name for asset in parse(assets=list(assets)).assets]


# --- The release ----------------------------------------------------------------------------------


def test_reads_a_release() -> None:
    release = parse()
    assert (release.tag, release.version, release.name) == ("v0.5.0", "0.5.0", "PhotoCraft v0.5.0")
    assert release.published_at == datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)
    assert release.html_url == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"
    assert release.prerelease is False
    assert release.notes_markdown == "Notes"
    [asset] = release.assets
    assert asset.name == "photocraft-0.5.0-windows-x64.msi"
    assert asset.size_bytes == 7
    assert asset.download_url == DOWNLOADS + "photocraft-0.5.0-windows-x64.msi"
    assert asset.sha256 == HASH
    assert asset.platform == AssetPlatform(CraftAppOs.WINDOWS, CraftAppArch.X64, CraftAppPackageType.MSI)


def test_a_parsed_release_survives_the_storage_codec() -> None:
    release = parse(name="Ph\ud800oto", body="x\udfff")  # lone surrogates that JSON escapes allow
    assert release.name == "Ph\ufffdoto"
    assert release.notes_markdown == "x\ufffd"
    assert decode_release(encode_release(release)) == release
    encode_release(release).encode("utf-8")  # would raise on a surrogate


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("v0.5.0", "0.5.0"),
        ("V0.5.0", "0.5.0"),
        ("vv1", "v1"),
        ("0.5.0", "0.5.0"),
        ("v", "v"),
        ("ver2", "er2"),
    ],
)
def test_the_version_is_the_tag_without_one_leading_v(tag: str, version: str) -> None:
    assert parse(tag_name=tag).version == version


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("artcraft-v0.37.0", "0.37.0"),  # tauri-action as ArtCraft configures it
        ("app-v1.2.0", "1.2.0"),  # tauri-action's default
        ("artcraft-v0.38.0-rc.1", "0.38.0-rc.1"),
        ("@storytold/photocraft@1.2.3-rc.1", "1.2.3-rc.1"),  # changesets
        ("v1.2.3-rc.1", "1.2.3-rc.1"),
        ("artcraft-v0.37", "artcraft-v0.37"),  # no version after the prefix: the tag, as before
    ],
)
def test_a_prefixed_tag_serves_the_version_after_its_prefix(tag: str, version: str) -> None:
    release = parse(tag_name=tag)
    assert (release.tag, release.version) == (tag, version)


def test_a_tag_of_64_characters_is_kept() -> None:
    assert parse(tag_name="v" + "1" * 63).tag == "v" + "1" * 63


@pytest.mark.parametrize("name", [None, "", "   ", 42, ["x"]])
def test_a_missing_or_unusable_name_becomes_the_tag(name: object) -> None:
    assert parse(name=name).name == "v0.5.0"


def test_a_missing_name_key_becomes_the_tag() -> None:
    data = github_release()
    del data["name"]
    assert parse_release(json.dumps(data).encode(), REPO).name == "v0.5.0"


def test_a_long_name_is_cut_to_200_characters_and_an_ellipsis() -> None:
    assert parse(name="n" * 200).name == "n" * 200
    assert parse(name="é" * 201).name == "é" * 200 + "…"


@pytest.mark.parametrize(
    "html_url",
    [
        None,
        42,
        "https://evil.example/storytold/photocraft/releases/tag/v0.5.0",
        "https://github.com/storytold/other/releases/tag/v0.5.0",
        "https://github.com/storytold/photocraft/tags",
        "http://github.com/storytold/photocraft/releases/tag/v0.5.0",
        "https://github.com/storytold/photocraft/releases/tag/v0.5.0 https://evil.example",
        "https://github.com/storytold/photocraft/releases/tag/v0.5.0\n",
    ],
)
def test_a_release_page_elsewhere_is_rebuilt(html_url: object) -> None:
    assert parse(html_url=html_url).html_url == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"


@pytest.mark.parametrize(
    "html_url",
    [
        "https://github.com/storytold/photocraft/releases/tag/v0.5.0/../../../../evil/x/releases/tag/v1",
        "https://github.com/storytold/photocraft/releases/../../other/releases/tag/v0.5.0",
        "https://github.com/storytold/photocraft/releases/%2e%2e/%2E%2E/%2e./evil/x/releases/tag/v1",
        "https://github.com/storytold/photocraft/releases\\..\\..\\..\\evil/x/releases/tag/v1",
        "https://github.com/storytold/photocraft/releases/tag/..%2F..%2F..%2F..%2Fevil",
    ],
)
def test_a_release_page_a_browser_resolves_elsewhere_is_rebuilt(html_url: str) -> None:
    assert parse(html_url=html_url).html_url == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"


def test_a_release_page_is_served_as_a_browser_resolves_it() -> None:
    html_url = "HTTPS://GitHub.com:443/storytold/photocraft/releases/tag/v0.4.0/../v0.5.0"
    assert parse(html_url=html_url).html_url == "https://github.com/storytold/photocraft/releases/tag/v0.5.0"


def test_a_rebuilt_page_that_would_not_stay_in_the_repository_is_the_releases_page() -> None:
    # Git allows this tag; quoted, a server decoding twice would read "..".
    release = parse(tag_name="%2e%2e", html_url=None)
    assert release.html_url == "https://github.com/storytold/photocraft/releases/"


def test_the_rebuilt_page_quotes_the_tag() -> None:
    release = parse(tag_name="release/1.0+build#2", html_url=None)
    assert release.html_url == "https://github.com/storytold/photocraft/releases/tag/release/1.0%2Bbuild%232"


def test_links_follow_the_configured_web_url() -> None:
    web = "http://127.0.0.1:8123"
    data = github_release(
        html_url=f"{web}/{REPO}/releases/tag/v0.5.0",
        assets=[github_asset(browser_download_url=f"{web}/{REPO}/releases/download/v0.5.0/a.msi")],
    )
    release = parse_release(json.dumps(data).encode(), REPO, web_url=web)
    assert release.html_url == f"{web}/{REPO}/releases/tag/v0.5.0"
    assert [a.download_url for a in release.assets] == [f"{web}/{REPO}/releases/download/v0.5.0/a.msi"]
    # ...and github.com links are then foreign.
    assert parse_release(json.dumps(github_release()).encode(), REPO, web_url=web).assets == ()


def test_repository_names_compare_as_github_compares_them() -> None:
    # Configured as HePengJu/Redis-ME, answered as hepengju/redis-me: the same repository.
    parsed = read_release(json.dumps(github_release()).encode(), "Storytold/PhotoCraft")
    assert parsed.repo == REPO
    assert [asset.download_url for asset in parsed.release.assets] == [
        DOWNLOADS + "photocraft-0.5.0-windows-x64.msi"
    ]
    assert parsed.release.html_url == f"{WEB_URL}/{REPO}/releases/tag/v0.5.0"
    assert parsed.dropped == ()


def test_another_repository_is_still_refused_unless_github_renamed_it() -> None:
    body = json.dumps(github_release()).encode()
    kept = read_release(body, "storytold/photocraft-old")
    assert (kept.repo, kept.release.assets, kept.dropped) == (
        "storytold/photocraft-old",
        (),
        (("link_elsewhere", 1),),
    )
    renamed = read_release(body, "storytold/photocraft-old", renamed=True)
    assert renamed.repo == REPO
    assert len(renamed.release.assets) == 1 and renamed.dropped == ()


def test_links_on_another_host_are_dropped_as_such() -> None:
    # GITHUB_API_URL pointed at an Enterprise server while GITHUB_WEB_URL stayed github.com.
    body = json.dumps(github_release()).encode()
    parsed = read_release(body, REPO, web_url="https://ghe.example")
    assert parsed.release.assets == ()
    assert parsed.dropped == (("link_host", 1),)


def test_each_dropped_asset_is_counted_by_reason() -> None:
    items: list[Any] = [
        github_asset(),
        github_asset(name="x.msi", browser_download_url="https://evil.example/x.msi"),
        github_asset(
            name="y.msi", browser_download_url=f"{WEB_URL}/storytold/other/releases/download/v1/y.msi"
        ),
        github_asset(name=".hidden"),
        github_asset(name="big.msi", size=-1),
        "not an object",
    ]
    parsed = read_release(json.dumps(github_release(assets=items)).encode(), REPO)
    assert [asset.name for asset in parsed.release.assets] == ["photocraft-0.5.0-windows-x64.msi"]
    assert dict(parsed.dropped) == {
        "link_host": 1,
        "link_elsewhere": 1,
        "bad_name": 1,
        "bad_size": 1,
        "not_an_asset": 1,
    }


@pytest.mark.parametrize(
    ("value", "expected"), [(True, True), (False, False), (None, False), ("true", False), (1, False)]
)
def test_prerelease_is_true_only_for_json_true(value: object, expected: bool) -> None:
    assert parse(prerelease=value).prerelease is expected


@pytest.mark.parametrize("draft", [False, None])
def test_a_release_that_is_not_a_draft_is_read(draft: object) -> None:
    assert parse(draft=draft).tag == "v0.5.0"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-10-08T14:52:50Z", datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)),
        ("2026-10-08T16:52:50+02:00", datetime(2026, 10, 8, 14, 52, 50, tzinfo=UTC)),
        ("2026-10-08T14:52:50.250Z", datetime(2026, 10, 8, 14, 52, 50, 250_000, tzinfo=UTC)),
        ("2026-10-08T14:52:50", None),  # no zone
        ("2026-10-08", None),
        ("yesterday", None),
        ("0001-01-01T00:00:00+01:00", None),  # before year 1 in UTC
        ("0001-01-01T00:00:00Z", None),  # GitHub's placeholder: outside 1970-9999
        ("1969-12-31T23:59:59.999Z", None),
        ("1970-01-01T00:00:00Z", datetime(1970, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
        (1_790_000_000, None),
        (None, None),
    ],
)
def test_published_at_is_utc_or_none(value: object, expected: datetime | None) -> None:
    published_at = parse(published_at=value).published_at
    assert published_at == expected
    if published_at is not None:
        assert published_at.utcoffset() == timedelta(0)


def test_notes_up_to_64_kib_are_kept_whole() -> None:
    assert parse(body="a" * MAX_NOTES_BYTES).notes_markdown == "a" * MAX_NOTES_BYTES


def test_longer_notes_are_cut_to_64_kib_with_an_ellipsis() -> None:
    assert parse(body="a" * (MAX_NOTES_BYTES + 1)).notes_markdown == "a" * MAX_NOTES_BYTES + "…"


def test_notes_are_cut_on_a_character_boundary() -> None:
    notes = parse(body="€" * 30_000).notes_markdown  # 3 bytes each: 65536 falls inside one
    assert notes == "€" * (MAX_NOTES_BYTES // 3) + "…"
    assert len(notes[:-1].encode("utf-8")) <= MAX_NOTES_BYTES


def test_control_characters_are_stripped_from_the_name_and_the_notes() -> None:
    text = "A\x00B\x07C\x1bD\tE\nF\x7fG\x85H\x9bI"
    release = parse(name=text, body=text)
    assert release.name == release.notes_markdown == "ABCD\tE\nFGHI"


def test_carriage_returns_become_newlines() -> None:
    assert parse(body="one\r\ntwo\rthree\n").notes_markdown == "one\ntwo\nthree\n"


def test_a_name_of_only_control_characters_becomes_the_tag() -> None:
    assert parse(name="\x00\x01\x7f").name == "v0.5.0"


def test_notes_are_cut_to_64_kib_after_stripping() -> None:
    assert parse(body="\x00" * 10 + "a" * MAX_NOTES_BYTES).notes_markdown == "a" * MAX_NOTES_BYTES


@pytest.mark.parametrize("body", [None, 42, ["notes"], {"text": "x"}])
def test_notes_that_are_not_a_string_are_empty(body: object) -> None:
    assert parse(body=body).notes_markdown == ""


# --- Rejected answers -----------------------------------------------------------------------------

GIT_REFUSED_TAGS = ["../../../../evil", "..", "v1/../x", ".v1", "v1/.x", "/v1", "v1/", "v1//x", "v1."]
GIT_REFUSED_TAGS += ["v1.lock", "@", "v1@{0}", "v1~1", "v1^", "v1:x", "v1?", "v1*", "v1[", "v1\\x"]
REJECTED: dict[str, bytes] = {
    "garbage": b"<html>Unicorn!</html>",
    "empty": b"",
    "a JSON list": b"[]",
    "a JSON string": b'"v1.0.0"',
    "JSON null": b"null",
    "invalid UTF-8": b'{"tag_name": "v1.0.0\xff"}',
    "a UTF-8 BOM": b'\xef\xbb\xbf{"tag_name": "v1.0.0"}',
    "no tag": b'{"assets": []}',
    "a null tag": b'{"tag_name": null}',
    "an empty tag": b'{"tag_name": ""}',
    "a number tag": b'{"tag_name": 1}',
    "a 256-byte tag": json.dumps({"tag_name": "v" + "1" * 255}).encode(),
    "a tag with a space": b'{"tag_name": "v1 .0"}',
    "a tag with a newline": b'{"tag_name": "v1\\n"}',
    **{f"a tag git refuses: {tag!r}": json.dumps({"tag_name": tag}).encode() for tag in GIT_REFUSED_TAGS},
    "a draft": b'{"tag_name": "v1.0.0", "draft": true}',
    "a draft flag that is not a boolean": b'{"tag_name": "v1.0.0", "draft": "yes"}',
    "assets that are an object": b'{"tag_name": "v1.0.0", "assets": {}}',
    "assets that are a string": b'{"tag_name": "v1.0.0", "assets": "x.msi"}',
    "assets that are null": b'{"tag_name": "v1.0.0", "assets": null}',
    "JSON nested too deeply": b"[" * 100_000 + b"]" * 100_000,
    "an integer too long to read": b'{"tag_name": "v1", "id": ' + b"9" * 5000 + b"}",
    "truncated JSON": json.dumps(github_release()).encode()[:-10],
}


@pytest.mark.parametrize("body", REJECTED.values(), ids=REJECTED.keys())
def test_an_unusable_answer_is_rejected_with_a_one_line_reason(body: bytes) -> None:
    with pytest.raises(ReleaseRejected) as rejected:
        parse_release(body, REPO)
    reason = rejected.value.reason
    assert reason == str(rejected.value)
    assert reason and "\n" not in reason and len(reason) < 200


def test_a_missing_asset_list_means_no_assets() -> None:
    data = github_release()
    del data["assets"]
    assert parse_release(json.dumps(data).encode(), REPO).assets == ()


@pytest.mark.parametrize(
    "tag",
    [
        "@changesets/cli@2.27.1-rc.1",
        "@scope-with-a-long-name/package-with-an-even-longer-name@12.345.6789-canary.20260101T000000",
        "v" + "1" * (MAX_TAG_BYTES - 1),
        "é" * (MAX_TAG_BYTES // 2),  # 254 bytes
    ],
)
def test_long_tags_git_allows_are_read(tag: str) -> None:
    release = parse(tag_name=tag, html_url=None)
    assert release.tag == tag
    assert release.html_url.startswith(f"{WEB_URL}/{REPO}/releases/tag/")


def test_a_tag_over_255_bytes_is_refused() -> None:
    with pytest.raises(ReleaseRejected, match="256 bytes long, over 255"):
        parse(tag_name="é" * 128)


# --- Assets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/x.msi",
        "https://github.com/storytold/other/releases/download/v1/x.msi",
        "https://github.com/storytold/photocraft/archive/v1.zip",
        "http://github.com/storytold/photocraft/releases/download/v0.5.0/x.msi",
        "https://github.com/storytold/photocraft/releases/download/v0.5.0/x.msi\nhttps://evil.example",
        f"{DOWNLOADS}../../../../evil/x/releases/download/v1/x.msi",
        f"{DOWNLOADS}%2e%2e/%2E%2E/.%2e/%2e./evil/x/releases/download/v1/x.msi",
        f"{DOWNLOADS}..\\..\\..\\..\\evil\\x\\releases\\download\\v1\\x.msi",
        f"{DOWNLOADS}..%2F..%2F..%2F..%2Fevil%2Fx/x.msi",
        None,
        42,
    ],
)
def test_an_asset_downloading_from_elsewhere_is_dropped(url: object) -> None:
    assert parse_assets(github_asset(browser_download_url=url)) == []


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".hidden.msi",
        "a" * 201,
        None,
        42,
        *(f"photo{c}craft.msi" for c in '/\\:<>"|?*'),
        "photo\x00craft.msi",
        "photo\ncraft.msi",
        "photo\x7fcraft.msi",
        "photo\u202egsm.exe",  # right-to-left override
        "photo\ud800craft.msi",
    ],
)
def test_an_asset_with_an_unsafe_name_is_dropped(name: Any) -> None:
    url = DOWNLOADS + "x.msi"
    assert parse_assets(github_asset(name=name, browser_download_url=url)) == []


@pytest.mark.parametrize(
    "name", ["a" * 200, "Photo Craft 0.5.0.msi", "PhotoCraft-é-0.5.0.msi", "SHA256SUMS.txt"]
)
def test_an_asset_with_a_fair_name_is_kept(name: str) -> None:
    assert parse_assets(github_asset(name=name, browser_download_url=DOWNLOADS + "x")) == [name]


def test_an_asset_link_is_served_as_a_browser_resolves_it() -> None:
    url = "HTTPS://GITHUB.COM/storytold/photocraft/releases/download/v0.4.0/../v0.5.0/./x.msi"
    assert [a.download_url for a in parse(assets=[github_asset(browser_download_url=url)]).assets] == [
        DOWNLOADS + "x.msi"
    ]


def test_an_asset_larger_than_json_numbers_hold_exactly_is_dropped() -> None:
    assert parse_assets(github_asset(size=2**53)) == []
    assert parse_assets(github_asset(size=2**64 - 1)) == []
    assert parse(assets=[github_asset(size=2**53 - 1)]).assets[0].size_bytes == 2**53 - 1


@pytest.mark.parametrize("size", ["7", -1, True, False, 7.0, None, [7]])
def test_an_asset_without_a_non_negative_integer_size_is_dropped(size: object) -> None:
    assert parse_assets(github_asset(size=size)) == []


def test_an_asset_without_a_size_is_dropped() -> None:
    asset = github_asset()
    del asset["size"]
    assert parse_assets(asset) == []


def test_an_empty_asset_is_kept_with_size_zero() -> None:
    assert parse(assets=[github_asset(size=0)]).assets[0].size_bytes == 0


@pytest.mark.parametrize("item", [None, "photocraft.msi", [], 7])
def test_an_asset_that_is_not_an_object_is_dropped(item: object) -> None:
    assert parse_assets(item, github_asset()) == ["photocraft-0.5.0-windows-x64.msi"]


@pytest.mark.parametrize(
    ("digest", "sha256"),
    [
        (f"sha256:{HASH}", HASH),
        (f"sha256:{HASH.upper()}", HASH),
        (f"SHA256:{HASH}", None),
        (f"sha512:{HASH}", None),
        (f"sha256:{HASH[:-1]}", None),
        (f"sha256:{HASH}0", None),
        (f"sha256:{'g' * 64}", None),
        (HASH, None),
        (None, None),
        (42, None),
    ],
)
def test_the_sha256_comes_only_from_a_well_formed_digest(digest: object, sha256: str | None) -> None:
    [asset] = parse(assets=[github_asset(digest=digest)]).assets
    assert asset.sha256 == sha256


def test_an_asset_without_a_digest_is_kept_without_a_sha256() -> None:
    asset = github_asset()
    del asset["digest"]
    assert parse(assets=[asset]).assets[0].sha256 is None


def test_githubs_1000_assets_are_kept_in_order_and_what_is_past_them_is_counted() -> None:
    assert MAX_ASSETS == 1000  # GitHub's own limit per release
    items: list[Any] = []
    for i in range(1010):
        items.append(github_asset(name=f"file-{i}.bin", size="bad"))  # dropped, not kept
        items.append(github_asset(name=f"file-{i}.bin"))
    parsed = read_release(json.dumps(github_release(assets=items)).encode(), REPO)
    names = [asset.name for asset in parsed.release.assets]
    assert names == [f"file-{i}.bin" for i in range(MAX_ASSETS)]
    # 1000 bad sizes among the first 2000 entries, then 20 entries past the limit.
    assert dict(parsed.dropped) == {"bad_size": 1000, "over_limit": 20}


def test_an_asset_of_no_known_platform_is_kept_without_one() -> None:
    [asset] = parse(assets=[github_asset(name="SHA256SUMS.txt")]).assets
    assert asset.platform is None


# --- Asset names ----------------------------------------------------------------------------------

W, M, L, F = CraftAppOs.WINDOWS, CraftAppOs.MACOS, CraftAppOs.LINUX, CraftAppOs.FREEBSD
X64, X86, ARM, UNI = CraftAppArch.X64, CraftAppArch.X86, CraftAppArch.ARM64, CraftAppArch.UNIVERSAL
P = CraftAppPackageType
WEB = AssetPlatform(CraftAppOs.WEB, None, P.WEB_ZIP)

PLATFORMS: list[tuple[str, AssetPlatform | None]] = [
    # The reference's cases.
    ("photocraft-0.5.0-macos-universal.dmg", AssetPlatform(M, UNI, P.DMG)),
    ("photocraft-cli-0.5.0-macos-universal.zip", AssetPlatform(M, UNI, P.CLI_ZIP)),
    ("photocraft-0.5.0-windows-arm64-portable.zip", AssetPlatform(W, ARM, P.PORTABLE_ZIP)),
    ("photocraft-0.5.0-windows-x86.msi", AssetPlatform(W, X86, P.MSI)),
    ("photocraft-0.5.0-linux-aarch64.AppImage", AssetPlatform(L, ARM, P.APP_IMAGE)),
    ("photocraft-0.5.0-linux-x86_64.AppImage.zsync", AssetPlatform(L, X64, P.APP_IMAGE_ZSYNC)),
    ("photocraft-0.5.0-linux-x86_64.deb", AssetPlatform(L, X64, P.DEB)),
    ("photocraft-0.5.0-linux-x86_64.rpm", AssetPlatform(L, X64, P.RPM)),
    ("photocraft-0.5.0-linux-x86_64.flatpak", AssetPlatform(L, X64, P.FLATPAK)),
    ("photocraft-0.5.0-freebsd-x86_64.tar.gz", AssetPlatform(F, X64, P.TAR_GZ)),
    ("photocraft-0.2.0-rc.1-linux-x86_64.tar.gz", AssetPlatform(L, X64, P.TAR_GZ)),
    ("photocraft-web-0.5.0.zip", WEB),
    ("SHA256SUMS.txt", None),
    ("photocraft-0.5.0-plan9-x64.msi", None),
    # App keys with dashes, pre-release versions, the other spellings.
    ("artcraft-launcher-0.2.0-windows-x64.msi", AssetPlatform(W, X64, P.MSI)),
    ("artcraft-launcher-cli-0.2.0-macos-universal.zip", AssetPlatform(M, UNI, P.CLI_ZIP)),
    ("artcraft-launcher-web-0.2.0.zip", WEB),
    ("artcraft-launcher-0.2.0-windows-x64-portable.zip", AssetPlatform(W, X64, P.PORTABLE_ZIP)),
    ("photocraft-0.6.0-rc.1-linux-aarch64.deb", AssetPlatform(L, ARM, P.DEB)),
    ("photocraft-web-0.6.0-rc.1.zip", WEB),
    ("photocraft-v0.5.0-linux-x64.deb", AssetPlatform(L, X64, P.DEB)),
    ("photocraft-0.5.0-windows-x64.msi", AssetPlatform(W, X64, P.MSI)),
    ("photocraft-0.5.0-windows-arm64.msi", AssetPlatform(W, ARM, P.MSI)),
    ("photocraft-0.5.0-freebsd-x64.tar.gz", AssetPlatform(F, X64, P.TAR_GZ)),
    ("photocraft-0.5.0-linux-arm64.flatpak", AssetPlatform(L, ARM, P.FLATPAK)),
    ("photocraft-cli-0.5.0-macos-arm64.zip", AssetPlatform(M, ARM, P.CLI_ZIP)),
    # "-web-" inside an app key does not make a native package the web build.
    ("craft-web-studio-1.0.0-windows-x64-portable.zip", AssetPlatform(W, X64, P.PORTABLE_ZIP)),
    ("craft-web-studio-cli-1.0.0-macos-universal.zip", AssetPlatform(M, UNI, P.CLI_ZIP)),
    ("craft-web-studio-1.0.0-linux-x86_64.deb", AssetPlatform(L, X64, P.DEB)),
    ("craft-web-studio-web-1.0.0.zip", WEB),
    # A package type only for the systems it exists on.
    ("photocraft-0.5.0-linux-x86_64-portable.zip", None),
    ("photocraft-0.5.0-macos-universal-portable.zip", None),
    ("photocraft-0.5.0-macos-arm64.msi", None),
    ("photocraft-0.5.0-windows-x64.dmg", None),
    ("photocraft-0.5.0-windows-x64.deb", None),
    ("photocraft-0.5.0-freebsd-x64.rpm", None),
    ("photocraft-0.5.0-macos-arm64.tar.gz", None),
    ("photocraft-0.5.0-windows-universal.msi", None),
    ("photocraft-0.5.0-linux-universal.AppImage", None),
    # A bare ".zip" is only the macOS command-line tools.
    ("photocraft-0.5.0-windows-x64.zip", None),
    ("photocraft-0.5.0-macos-universal.zip", None),
    ("photocraft-cli-0.5.0-linux-x86_64.zip", None),
    ("photocraft-web-0.5.0-windows-x64.zip", None),
    ("photocraft-web-0.5.0-portable.zip", None),
    # Not the naming scheme.
    ("photocraft-linux-x86_64.deb", None),  # no version
    ("linux-x86_64.deb", None),
    ("-0.5.0-linux-x86_64.deb", None),
    ("photocraft-0.5.0-Linux-x86_64.deb", None),
    ("photocraft-0.5.0-linux-x86_64.appimage", None),
    ("photocraft-0.5.0-linux-x86_64.zsync", None),
    ("photocraft-0.5.0-linux-sparc.deb", None),
    ("photocraft-0.5.0-windows-x64.msi.sha256", None),
    ("photocraft-0.5.0-windows-x64.exe", None),
    ("photocraft-web-.zip", None),
    ("web-0.5.0.zip", None),
    ("photocraft-web-latest.zip", None),
    ("photocraft-0.5.0.zip", None),
    ("", None),
]


@pytest.mark.parametrize(("name", "platform"), PLATFORMS, ids=[name or "(empty)" for name, _ in PLATFORMS])
def test_parse_platform(name: str, platform: AssetPlatform | None) -> None:
    assert parse_platform(name) == platform


def test_every_asset_of_a_parsed_release_gets_its_platform() -> None:
    names = [name for name, _ in PLATFORMS if name]
    release = parse(assets=[github_asset(name=n, browser_download_url=DOWNLOADS + n) for n in names])
    assert {a.name: a.platform for a in release.assets} == {n: p for n, p in PLATFORMS if n}
