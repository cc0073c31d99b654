import os

from django.core.asgi import get_asgi_application

from config.startup import log_connection_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_asgi_application()
log_connection_settings()
