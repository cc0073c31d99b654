"""The HTTP side: what the endpoint lists (``answer``), the contract's serializers and OpenAPI
names (``serializers``, ``schema``) and the views (``views``). Reads only the host's state file:
no GitHub, no Redis, no polling on the request path."""
