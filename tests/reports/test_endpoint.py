"""POST /v1/craft_apps/reports: every answer, through Django's client; the report is queued,
and the request never waits on the counts' store."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from craft_apps.reports import meters
from craft_apps.reports.intake import Intake, use
from craft_apps.reports.view import MAX_BODY_BYTES, reports
from tests.reports.support import URL, body, reports_settings, value


@pytest.fixture
def quiet_intake(state_dir: Path) -> Iterator[Intake]:
    """An intake whose writer doesn't run: the test writes with ``write_batch``."""
    with reports_settings(state_dir), use(Intake(writer=False)) as intake:
        yield intake


def post(client: Client, data: bytes, **extra: str) -> tuple[int, dict[str, object]]:
    response = client.post(URL, data, content_type="application/json", **extra)  # type: ignore[arg-type]
    return response.status_code, response.json()


def test_a_report_is_accepted_and_queued(client: Client, quiet_intake: Intake) -> None:
    before = value(meters.ANSWERS, status="202")
    assert post(client, body()) == (202, {"success": True})
    assert quiet_intake.queue.qsize() == 1
    assert value(meters.ANSWERS, status="202") == before + 1


def test_the_optional_fields_may_be_left_out(client: Client, quiet_intake: Intake) -> None:
    data = body(previous_version=..., channel=None, os=..., arch=..., version="v1.2.3-beta.1")
    assert post(client, data) == (202, {"success": True})
    assert quiet_intake.queue.get_nowait().version == "1.2.3-beta.1"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"not json", "the body is not a JSON object"),
        (b"[1, 2]", "the body is not a JSON object"),
        (body(outcome=...), "the field 'outcome' is missing"),
        (body(install_id=...), "the field 'install_id' is missing"),
        (body(version=3), "the field 'version' is not a non-empty string"),
        (
            body(outcome="exploded"),
            "unknown outcome 'exploded': one of installed, failed, crashed, rolled_back",
        ),
        (body(app_key="nosuchapp"), "this host serves no app 'nosuchapp'"),
        (body(version="0.6"), "version '0.6' is not a SemVer version"),
        (body(install_id="me"), "the field 'install_id' is not a UUID"),
        (body(os="x" * 65), "the field 'os' is over 64 characters"),
    ],
)
def test_a_malformed_report_is_refused_in_one_line(
    client: Client, quiet_intake: Intake, data: bytes, error: str
) -> None:
    assert post(client, data) == (400, {"success": False, "error": error})
    assert quiet_intake.queue.qsize() == 0


def test_a_body_over_4_kib_is_refused_by_its_length_unread(client: Client, quiet_intake: Intake) -> None:
    status, answer = post(client, body(padding="x" * MAX_BODY_BYTES))
    assert (status, answer["success"]) == (413, False)


def test_a_body_without_length_is_read_no_further_than_the_bound(quiet_intake: Intake) -> None:
    """A chunked body (no Content-Length) from a server that ends the input at its end."""
    stream = io.BytesIO(b"{" + b" " * (10 * MAX_BODY_BYTES) + b"}")
    request = RequestFactory().post(URL, b"", content_type="application/json")
    request.META.update({"wsgi.input": stream, "wsgi.input_terminated": True, "CONTENT_LENGTH": ""})
    assert reports(request).status_code == 413
    assert stream.tell() == MAX_BODY_BYTES + 1
    small = RequestFactory().post(URL, b"", content_type="application/json")
    small.META.update({"wsgi.input": io.BytesIO(body()), "wsgi.input_terminated": True, "CONTENT_LENGTH": ""})
    assert reports(small).status_code == 202


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_other_methods_are_refused(client: Client, quiet_intake: Intake, method: str) -> None:
    response = getattr(client, method)(URL)
    assert response.status_code == 405 and response["Allow"] == "POST"


def test_a_full_queue_drops_the_report_counted_and_still_answers_202(
    client: Client, state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = value(meters.NOT_COUNTED, reason="queue_full")
    with reports_settings(state_dir), use(Intake(writer=False, capacity=2)) as intake:
        answers = [post(client, body())[0] for _ in range(5)]
    assert answers == [202] * 5 and intake.queue.qsize() == 2
    assert value(meters.NOT_COUNTED, reason="queue_full") == before + 3
    assert caplog.text.count("the reports' queue is full") <= 1


def test_nothing_of_the_client_is_kept(client: Client, quiet_intake: Intake) -> None:
    install = str(uuid.uuid4())
    post(client, body(install_id=install), REMOTE_ADDR="203.0.113.9", HTTP_USER_AGENT="Launcher/1.0")
    queued = quiet_intake.queue.get_nowait()
    assert install not in repr(queued) and "203.0.113.9" not in repr(queued)
    assert "Launcher" not in repr(queued)
