"""The HTTP side: what launchers, people and operators fetch, and the webhook GitHub posts to.

Endpoint: ``views``, ``answer``, ``representation``, ``negotiation``,
``validators``, ``caching``, ``channels``, ``serializers``, ``schema``, and a web
process's state: ``runtime``, ``startup``. Private
apps: ``private_links``, ``private_assets``. People: ``downloads``, ``platforms``, ``pages``,
``page_cache``. Operators: ``health``, ``metrics``, ``policy_metrics``, ``guard_watch``,
``schema_views``, ``docs_settings``. GitHub: ``webhook``, ``refresh``. See docs/architecture.md.
"""
