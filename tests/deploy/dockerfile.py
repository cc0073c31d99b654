"""The Dockerfile example read as Docker reads it (instructions, line continuations, ARG and ENV
values) and its steps run here without Docker: the image's directories become directories of the
test, its ``python`` this machine's interpreter, and a RUN runs in ``sh`` with the image's
environment, as the builder runs it."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# The image's directories the Dockerfile names, in the order they are replaced.
IMAGE_DIRS = ("/opt/venv", "/app", "/tmp/build", "/var/lib/craft_apps")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str


def instructions(text: str) -> list[Instruction]:
    """Each instruction with its continuation lines joined; comments and blank lines left out."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        found.append(Instruction(keyword.upper(), " ".join(arguments.split())))
    return found


def assignments(arguments: str, env: dict[str, str]) -> dict[str, str]:
    """``KEY=value`` pairs of an ENV or ARG line, ``$NAME`` and ``${NAME}`` expanded from ``env``."""
    values = {}
    for word in shlex.split(arguments):
        key, _, value = word.partition("=")
        values[key] = re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)
    return values


def ignored(context: Path, dockerignore: str) -> set[str]:
    """The context's paths (relative, POSIX) that .dockerignore's patterns leave out."""
    patterns = [line.strip().rstrip("/") for line in dockerignore.splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    names = [str(path.relative_to(context)) for path in context.rglob("*")]
    return {
        name
        for name in names
        for pattern in patterns
        if fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(name, pattern.removeprefix("**/"))
        or fnmatch.fnmatch(name.rsplit("/", 1)[-1], pattern.removeprefix("**/"))
    }  # fmt: skip


@dataclass
class Build:
    """The image's filesystem under ``root``; ``env`` and ``workdir`` as the last step left them."""

    root: Path
    context: Path
    env: dict[str, str]
    workdir: str = "/"
    user: str = "root"
    skipped: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)

    def path(self, text: str) -> str:
        """``text`` with the image's directories moved under ``root``."""
        for directory in IMAGE_DIRS:
            text = re.sub(
                rf"(?<![\w/]){re.escape(directory)}(?=[/\s\"':]|$)", f"{self.root}{directory}", text
            )
        return text

    def run(self, command: list[str] | str, **env: str) -> subprocess.CompletedProcess[str]:
        argv = ["sh", "-c", self.path(command)] if isinstance(command, str) else command
        done = subprocess.run(
            argv, cwd=self.path(self.workdir), env=self.env | env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done

    def copy(self, arguments: str, dockerignore: str) -> None:
        *sources, destination = shlex.split(arguments)
        target = Path(
            self.path(destination if destination.startswith("/") else f"{self.workdir}/{destination}")
        )
        left_out = ignored(self.context, dockerignore)
        for source in sources:
            origin = self.context / source
            if origin.is_dir():
                shutil.copytree(
                    origin,
                    target,
                    dirs_exist_ok=True,
                    ignore=lambda directory, names: [
                        n for n in names if str((Path(directory) / n).relative_to(self.context)) in left_out
                    ],
                )
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(origin, target if not destination.endswith("/") else target / origin.name)


def outside_path() -> str:
    return os.environ.get("PATH", "/usr/bin:/bin")


def home() -> str:
    """This user's home: pip's cache (the only thing of it a step uses) is kept between runs."""
    return os.environ.get("HOME", "/root")
