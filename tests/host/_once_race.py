"""Starts N ``poll_craft_releases --once`` processes at the same instant (run as a script).

Django is set up once, then N children are forked and released together through a pipe, so
they reach the state file within a millisecond of each other, as a fleet-wide restart of many
supervisors would. Each child runs the real command and exits as the command makes it exit;
its output goes to ``<log_dir>/once-<n>.log``. Prints one ``n status`` line per child.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(count: int, log_dir: Path) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.core.management.base import CommandError

    start_read, start_write = os.pipe()
    children: dict[int, int] = {}
    for number in range(count):
        pid = os.fork()
        if pid == 0:
            os.close(start_write)
            log = os.open(log_dir / f"once-{number}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.read(start_read, 1)  # returns for everyone at once when the parent closes the pipe
            status = 0
            try:
                call_command("poll_craft_releases", "--once")
            except CommandError as err:
                sys.stderr.write(f"CommandError: {err}\n")
                status = 1
            except BaseException as err:  # anything else is a crash the test must see
                sys.stderr.write(f"crash: {type(err).__name__}: {err}\n")
                status = 3
            sys.stderr.flush()
            os._exit(status)
        children[pid] = number
    os.close(start_read)
    os.close(start_write)
    for _ in range(count):
        pid, wait_status = os.wait()
        print(children[pid], os.waitstatus_to_exitcode(wait_status), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]))
