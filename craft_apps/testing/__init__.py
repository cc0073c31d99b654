"""What the tests, the demo and the benchmarks run on; in the wheel too, for a site's own tests.

``clock`` a fake clock; ``demo_releases`` the demo's releases of the 13 Craft Apps (a
tauri-action release: ``craft_apps.tauri.fake_release``); ``fake_github`` a fake GitHub on a
local port (``python -m craft_apps.testing.fake_github``), with ``fake_releases`` its releases,
``fake_faults`` the faults it injects, ``fake_quota`` the rate limit, ``fake_responder`` its
answers and request log, ``fake_http`` its HTTP server and ``private`` its private repositories.
"""
