"""``python -m craft_apps.install_example [project]``: applies the install snippet the wheel ships
(``install_example.sh`` beside this module, shown in the README) to a site made by
``django-admin startproject``, from the directory of its ``manage.py``. It says what it changed,
adds each file's block only once (run again, it changes nothing), and refuses a project name
without ``settings.py`` and ``urls.py`` in one line. Installing the package from a clone or a
wheel leaves no ``docs/`` directory behind; this needs none."""

from __future__ import annotations

import os
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("install_example.sh")


def main(argv: list[str]) -> None:
    # The script is POSIX sh (two heredocs appended to settings.py and urls.py); sh runs it as is.
    os.execvp("sh", ["sh", str(SCRIPT), *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
