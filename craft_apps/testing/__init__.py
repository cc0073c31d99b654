"""What the tests, the demo and the benchmarks run on; in the wheel too, for a site's own tests.

- ``clock``: a fake clock (sleeping moves it at once, randomness scripted);
- ``demo_releases``: realistic, deterministic GitHub releases of the 13 Craft Apps;
- ``tauri_release``: a release as tauri-action publishes one, with its small files' bytes;
- ``fake_github``: a fake GitHub on a local port (``python -m craft_apps.testing.fake_github``).
  Its parts: ``fake_releases`` the releases it serves, ``fake_faults`` the faults it injects,
  ``fake_quota`` the rate limit, ``fake_responder`` how it answers and its request log,
  ``fake_http`` the HTTP server; ``private`` its private repositories, signed file URLs and
  GitHub Apps.
"""
