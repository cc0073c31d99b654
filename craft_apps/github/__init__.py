"""GitHub as the poller's release source (``kernel.source.Source``); no state file, Redis or HTTP.

``client`` the source, never raising, with ``release_requests`` the release endpoints,
``updater_downloads`` updater files, ``guarded_session`` safe redirects, ``deadline`` each
request's deadline, ``access`` the token or App, ``answers`` answers read safely; ``parsing`` an
answer read into a ``Release``; ``asset_links`` a private file's URL; ``credentials``/``app_auth``
a token or a GitHub App (docs/private.md).
"""
