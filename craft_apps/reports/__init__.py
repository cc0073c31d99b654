"""Install reports: launchers and apps say how an update went, and the fleet counts them per app,
version and outcome. ``view`` the ``POST /v1/craft_apps/reports`` endpoint; ``report`` one report
read from a body (pure); ``digest`` the hashed install id; ``limits`` rate limits; ``intake`` the
queue and the writer thread; ``counts`` what a store does, ``redis_counts`` and ``file_counts``
the two stores, ``stores`` which one and ``release_counts``; ``meters`` counters and log lines;
``status`` what ``craft_apps_status`` shows; ``notify`` the webhook post when a guarded rollout
pauses. See docs/reports.md.
"""
