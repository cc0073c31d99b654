"""The benchmark's site: the demo site's settings without debug, and a bare view beside the
endpoint (``bench.site_urls``), so both are measured on the same server."""

from config.settings import *  # noqa: F403

DEBUG = False
ROOT_URLCONF = "bench.site_urls"
