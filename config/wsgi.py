import os

from django.core.wsgi import get_wsgi_application

from config.startup import log_connection_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()
log_connection_settings()
