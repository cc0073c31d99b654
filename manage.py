#!/usr/bin/env python
"""Django's command-line utility for the demo site."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import execute_from_command_line

    django.setup()
    from config.startup import log_connection_settings

    log_connection_settings()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
