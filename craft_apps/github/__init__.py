"""GitHub as the poller's release source (``craft_apps.kernel.source.Source``); the first tier.

- ``client``: GitHub as the poller's source, never raising; the client the settings describe
  (``GitHubClient.from_settings``). Its parts: ``release_requests`` the release endpoints judged
  into outcomes, ``updater_downloads`` the updater files' downloads, ``guarded_session`` the
  session that refuses unsafe redirects, ``deadline`` each request's total deadline, ``access``
  the token or GitHub App and the private repositories, ``answers`` answers read safely.
- ``parsing``: GitHub's answer read into a ``Release``, keeping only what is safe to serve;
  ``rejudge`` applies the same rules to a stored release.
- ``links``: where a link points once resolved as a browser resolves it, and whether that is
  inside the repository's release files.
- ``tauri_names``: the Tauri bundler's file names as tauri-action uploads them: what each file
  is to Tauri, and the platform the contract's enums can give it.
- ``updater_files``: what to download for a release's Tauri updater files (its ``latest.json``
  or its ``.sig`` files) and what of them is kept; the client downloads them.
- ``asset_links``: a private release file's short-lived download URL, asked of the API and kept
  a minute; ``credentials`` what authenticates GitHub's API, as the settings describe: a token,
  or a GitHub App's installation tokens (``app_auth``).

Nothing here knows about the state file, Redis or HTTP answers.
"""
