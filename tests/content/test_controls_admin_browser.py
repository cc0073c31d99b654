"""The release controls' admin in Debian's Chromium (headless, 1280 px wide), as an operator in an
incident uses it, against Django's live server on a state file of the test's own: the admin
index names the section as the docs do, the list shows the reason and who changed it without
scrolling sideways, the app is chosen from a select of the configured apps, the tag offers the
releases the host knows of the chosen app and takes one not published yet (saved, with the
warning), and a control's page shows what is served now near its top. Each page's screenshot
is written to the test's directory, its path logged."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from craft_apps.api.representation import Refiner
from craft_apps.content.feed import NoticesFeed
from craft_apps.content.models import ReleaseControl
from tests.content.controls_support import control, publish_host
from tests.support import ONE_AT_A_TIME, apps_setting
from tests.support.chromium import HEIGHT, start_chromium

pytestmark = [pytest.mark.slow, ONE_AT_A_TIME, pytest.mark.django_db(transaction=True)]

logger = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0
PASSWORD = "a long password"
# A reason as operators write them in an incident: long, and a word a table can't break.
LONG_REASON = (
    "Crashes on start for users with a German keyboard layout; see the incident channel and "
    "https://github.com/storytold/photocraft/issues/1234567890-crash-on-start-with-de-layout "
    "before lifting it. " * 3
)


@pytest.fixture
def site(
    live_server: Any, state_dir: Path, settings: Any, install_runtime: Any, django_user_model: Any
) -> str:
    """The live server on two configured apps (photocraft with v0.4.0 and v0.5.0), a superuser,
    and three controls with long reasons (a rollout on the beta channel, a hold, and a yank for
    a key no configured app has)."""
    settings.CRAFT_APPS = {"APPS": apps_setting(), "STATE_DIR": str(state_dir)}
    feed = NoticesFeed(recheck_s=0.0, runner=lambda look: look())
    install_runtime(recheck_s=0.0, refiner=Refiner(start=lambda job: job(), after_s=0.0), feed=feed)
    publish_host(state_dir)
    django_user_model.objects.create_superuser("operator", "", PASSWORD)
    on_call = {"reason": LONG_REASON, "changed_by": "on-call-operator"}
    control(action="rollout", tag="v0.5.0", channel="beta", percentage=25, **on_call)
    held = {"app_key": "artcraft-launcher", "tag": "v1.0.0", "channel": "beta"}
    control(action="hold", **held, reason=LONG_REASON, changed_by="release-manager")
    control(app_key="inkcraft", action="yank", tag="v2.0.0", reason=LONG_REASON)
    return str(live_server.url)


@pytest.fixture
def browser(tmp_path: Path, site: str) -> Iterator[webdriver.Chrome]:
    """Chromium, logged in to the admin as the operator."""
    driver = start_chromium(tmp_path / "chromium-profile")
    try:
        driver.get(f"{site}/admin/login/?next=/admin/")
        driver.find_element(By.NAME, "username").send_keys("operator")
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        ready(driver, "return !!document.querySelector('#content-main')")
        yield driver
    finally:
        driver.quit()


def ready(driver: webdriver.Chrome, script: str) -> None:
    WebDriverWait(driver, READY_TIMEOUT_S).until(lambda d: d.execute_script(script))
    WebDriverWait(driver, READY_TIMEOUT_S).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def screenshot(driver: webdriver.Chrome, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot written to {path}"
    logger.warning("Screenshot of the admin: %s", path)
    return path


def test_the_index_names_the_section_as_the_docs_do(browser: webdriver.Chrome, site: str, tmp_path: Path):
    browser.get(f"{site}/admin/")
    ready(browser, "return !!document.querySelector('.app-craft_apps')")
    screenshot(browser, tmp_path, "index")
    caption = browser.execute_script("return document.querySelector('.app-craft_apps caption').textContent")
    assert caption.strip() == "Craft apps"  # as docs/controls.md names it
    models = browser.execute_script(
        "return [...document.querySelectorAll('.app-craft_apps th[scope=row]')]"
        ".map(e => e.textContent.trim())"
    )
    assert "Release controls" in models


def test_the_list_shows_the_reason_and_who_changed_it_without_scrolling_sideways(
    browser: webdriver.Chrome, site: str, tmp_path: Path
):
    browser.get(f"{site}/admin/craft_apps/releasecontrol/")
    ready(browser, "return document.querySelectorAll('#result_list tbody tr').length === 3")
    screenshot(browser, tmp_path, "changelist")
    page = browser.execute_script(
        "const s = document.scrollingElement; return [s.scrollWidth, s.clientWidth, window.innerWidth]"
    )
    assert page[0] <= page[1], f"the page scrolls sideways: {page}"
    results = browser.execute_script(
        "const r = document.querySelector('#changelist .results'); return [r.scrollWidth, r.clientWidth]"
    )
    assert results[0] <= results[1], f"the list scrolls sideways inside the page: {results}"
    for column in ("column-why", "column-changed"):
        right = browser.execute_script(
            f"return document.querySelector('#result_list th.{column}').getBoundingClientRect().right"
        )
        assert right <= page[2], f"{column} ends at {right} px, past the window's {page[2]}"
    shown = browser.find_element(By.ID, "result_list").text
    assert "on-call-operator" in shown and "release-manager" in shown
    assert "Crashes on start for users with a German keyboard layout" in shown


def test_the_app_is_a_select_and_the_tag_offers_the_known_releases_or_takes_an_unpublished_one(
    browser: webdriver.Chrome, site: str, tmp_path: Path
):
    browser.get(f"{site}/admin/craft_apps/releasecontrol/add/")
    ready(browser, "return !!document.querySelector('select[name=app_key]')")
    app = Select(browser.find_element(By.NAME, "app_key"))
    assert [o.get_attribute("value") for o in app.options] == ["", "photocraft", "artcraft-launcher"]
    app.select_by_value("photocraft")
    tag = browser.find_element(By.NAME, "tag")
    offered = browser.execute_script("return [...arguments[0].list.options].map(o => o.value)", tag)
    assert offered == ["v0.5.0", "v0.4.0"], "photocraft's releases, newest first"
    app.select_by_value("artcraft-launcher")
    offered = browser.execute_script("return [...arguments[0].list.options].map(o => o.value)", tag)
    assert offered == ["v1.0.0"], "the list follows the app chosen"
    app.select_by_value("photocraft")
    Select(browser.find_element(By.NAME, "action")).select_by_value("rollout")
    tag.send_keys("v0.6.1")
    browser.find_element(By.NAME, "percentage").send_keys("5")
    Select(browser.find_element(By.NAME, "channel")).select_by_value("stable")
    browser.find_element(By.NAME, "reason").send_keys("Prepared before the release: 5 % first.")
    screenshot(browser, tmp_path, "add")
    browser.find_element(By.NAME, "_save").click()
    ready(browser, "return !!document.querySelector('.messagelist, .errornote')")
    screenshot(browser, tmp_path, "added")
    errors = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".errornote, .errorlist")]
    assert not errors, errors
    warnings = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".messagelist .warning")]
    assert warnings == [
        "Photocraft has no release tagged v0.6.1 that this host knows (it knows v0.5.0, v0.4.0): the "
        "control is kept, and applied the moment the release appears. Check the tag's spelling if "
        "it is a typo."
    ]
    row = browser.find_element(By.XPATH, "//table[@id='result_list']//tr[contains(., 'v0.6.1')]").text
    assert "waiting for its release" in row, "the list says it waits"
    saved = ReleaseControl.objects.get(tag="v0.6.1")
    assert (saved.app_key, saved.percentage, saved.changed_by) == ("photocraft", 5, "operator")


def test_a_controls_page_shows_what_is_served_now_near_its_top(
    browser: webdriver.Chrome, site: str, tmp_path: Path
):
    rollout = ReleaseControl.objects.get(action="rollout")
    browser.get(f"{site}/admin/craft_apps/releasecontrol/{rollout.pk}/change/")
    ready(browser, "return !!document.querySelector('.field-served_now')")
    screenshot(browser, tmp_path, "change")
    served, app = browser.execute_script(
        "return [document.querySelector('.field-served_now').getBoundingClientRect().top,"
        " document.querySelector('select[name=app_key]').getBoundingClientRect().top]"
    )
    assert served < app, "above the form's first field"
    assert served < HEIGHT / 2, f"in the upper half of the first screen: {served} px"
    text = browser.find_element(By.CSS_SELECTOR, ".field-served_now").text
    assert "beta: latest_release v0.4.0; rollout of v0.5.0 to 25 %" in text
    assert "stable: latest_release v0.5.0" in text


def test_a_row_whose_key_no_configured_app_has_keeps_it_selected(
    browser: webdriver.Chrome, site: str, tmp_path: Path
):
    kept = ReleaseControl.objects.get(app_key="inkcraft")
    browser.get(f"{site}/admin/craft_apps/releasecontrol/{kept.pk}/change/")
    ready(browser, "return !!document.querySelector('select[name=app_key]')")
    screenshot(browser, tmp_path, "unconfigured")
    chosen = Select(browser.find_element(By.NAME, "app_key")).first_selected_option
    assert chosen.get_attribute("value") == "inkcraft"
    assert "no configured app has this key" in chosen.text
