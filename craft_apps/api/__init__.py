"""The HTTP side: what the endpoint lists (``answer``), the contract's serializers and OpenAPI
names (``serializers``, ``schema``), the docs' drf-spectacular settings a site imports
(``docs_settings``), the views (``views``) and the schema-only DRF faces of the plain views
(``schema_views``: health, metrics, the webhook). Reads only the host's state file:
no GitHub, no Redis, no polling on the request path."""
