"""Every release control action by its stored name, found among the modules of this package.

``named`` takes a control's stored ``action`` and returns its ``Action`` (the base, which
changes nothing, for a name that is no action); ``EVERY_ACTION`` lists them in rank order.
See docs/controls.md.
"""

from __future__ import annotations

import importlib
import pkgutil

from craft_apps.controls.actions import base

_OWN = {"base", "registry"}


def _found() -> tuple[base.Action, ...]:
    """One instance of each ``Action`` subclass the package's other modules define, by rank."""
    package = base.__name__.rsplit(".", 1)[0]
    kinds: list[type[base.Action]] = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if info.name in _OWN:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        kinds.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and issubclass(value, base.Action)
            and value.__module__ == module.__name__
        )
    return tuple(kind() for kind in sorted(kinds, key=lambda kind: kind.rank))


EVERY_ACTION = _found()
_BY_NAME = {action.name: action for action in EVERY_ACTION}
_NONE = base.Action()


def named(name: str) -> base.Action:
    """The action stored as ``name``; the base ``Action`` (no action) for any other name."""
    return _BY_NAME.get(name, _NONE)


def names() -> tuple[str, ...]:
    """The stored names of every action, in rank order: ``("hold", "yank", "rollout")``."""
    return tuple(_BY_NAME)
