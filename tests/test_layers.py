"""The package's import graph: no cycles, and no import from a lower layer to a higher one.

The tiers are GitHub -> the host's state file and the fleet's Redis -> the HTTP answer. The
layers below say which packages each module may import; the test reads every module's imports
from its source (module-level and function-level alike), so a lazy import can't hide a cycle.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "craft_apps"

# Layer of each part of the package, lowest first. A module may import its own part and any part
# of a strictly lower layer, and nothing else. The kernel's and the release controls' modules are
# parts of their own (``kernel.domain``, ``controls.rules``), so the order inside them is held too.
LAYERS: dict[str, float] = {
    "kernel": -2,  # the kernel package itself: a docstring, no code
    "kernel.compat": -1,  # what Python 3.11 added, for 3.10: below everything
    "kernel.domain": 0,
    "kernel.instants": 0,
    "kernel.clock": 0,
    "kernel.text": 0,
    "kernel.codec": 1,
    "kernel.links": 1,  # which links from GitHub may be served: pure
    # The Tauri updater: each module of the package is a part of its own, at its own layer.
    "tauri": -2,  # the package itself: a docstring, no code
    "tauri.names": 1,  # the bundler's file names
    "tauri.updates": 2,  # what the Tauri updater endpoint offers (uses versions)
    "tauri.files": 2,  # latest.json and the .sig files read into updater files
    "tauri.file_reads": 2.5,  # each release's files read once and kept (uses source)
    "tauri.fake_release": 2.5,  # a release as tauri-action publishes one, for tests
    "tauri.answers": 4.5,  # the endpoint's answers as sent (uses api's representation)
    "tauri.views": 4.6,  # the Tauri updater endpoint (uses api and answers)
    "kernel.versions": 1,  # a tag read as a version and which release is newest: pure
    "kernel.signing": 1,  # the Ed25519 signature and its reference verifier, for launcher authors
    # The release controls: each module of the package is a part of its own, its pure rules low
    # (held to the kernel's purity), what reads or writes higher.
    "controls": -2,  # the package itself: a docstring, no code
    "controls.actions": 1.5,  # one class per control action and their registry (uses versions)
    "conf": 2,
    "controls.rules": 2,  # hold, yank and staged rollout: the rule, its check and its codec
    "kernel.source": 2,  # what the poller asks of a release source; github implements it
    "controls.guard": 2.2,  # a guarded policy's rule: moves on while healthy, pauses (uses rules)
    "controls.policies": 2.5,  # each app's release policy: what waits (uses rules)
    "controls.kept": 2.6,  # the controls kept in the state directory (content's feed reads them)
    "kernel.serving": 3,  # what each channel serves each app: the one serving rule
    "github": 3,
    "host": 3,
    "fleet": 3,
    "content": 3,  # what operators edit: renames, notices, channels, release controls
    "controls.form": 3.1,  # the admin's control form (uses content's model)
    "controls.known_tags": 3.1,  # the tags the host knows (uses host)
    "controls.relay": 3.1,  # the controls shared with the fleet (uses fleet)
    "controls.status": 3.1,  # the policies as the status shows them (uses serving)
    "controls.guard_banner": 3.1,  # a paused guarded rollout's banner (uses content's policies)
    "reports": 3.5,  # install reports: the endpoint, its queue and the counts (host and fleet)
    "polling": 4,
    "api": 4,
    "models": 4,  # where Django looks for the content's models
    "migrations": 4,
    "checks": 5,
    "admin": 5,  # previews with the api's serializers
    "urls": 5,
    "ops": 5,  # what operators ask: craft_apps_status
    "apps": 6,
    "management": 6,
    "testing": 6,
    "cdn": 5,  # purge on change: reads the answers (api), runs beside the poller
    "install_example": 6,  # runs the shipped install snippet; imports nothing of the package
}
# What Django looks for by name, the settings object and the install snippet: the only modules
# at the top of the package; everything else is in a package named for what it holds.
AT_THE_TOP = {"apps", "checks", "conf", "install_example", "models", "urls"}  # and admin/, a package


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "craft_apps":
                # ``from craft_apps import __version__`` names the package itself, not a part.
                found.update(f"craft_apps.{a.name}" for a in node.names if not a.name.startswith("__"))
            elif node.module.startswith("craft_apps."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("craft_apps."))
    return found


def part_of(module: str) -> str:
    """The layer's name of a module: its top-level part, or ``<package>.<module>`` in the kernel,
    the release controls and the Tauri updater, whose modules sit at layers of their own."""
    parts = module.split(".")
    return ".".join(parts[1:3]) if parts[1] in ("kernel", "controls", "tauri") else parts[1]


@functools.cache
def graph() -> dict[str, set[str]]:
    return {module_name(p): imported_modules(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {part_of(m) for m in graph() if m != "craft_apps"}
    assert parts <= set(LAYERS), f"give these a layer: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize("module", sorted(graph()))
def test_imports_only_its_own_part_or_lower_layers(module: str) -> None:
    if module == "craft_apps":
        return
    own = part_of(module)
    wrong = sorted(
        target
        for target in graph()[module]
        if part_of(target) != own and LAYERS[part_of(target)] >= LAYERS[own]
    )
    assert not wrong, f"{module} (layer {LAYERS[own]}) imports a same or higher layer: {wrong}"


# The release controls' pure rules, held to the kernel's purity.
PURE_CONTROLS = ("controls.rules", "controls.actions", "controls.guard", "controls.policies")


def is_pure(part: str) -> bool:
    return part.startswith("kernel") or part in PURE_CONTROLS


def imports_django(path: Path) -> bool:
    return any(
        (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "django" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "django")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
    )


def test_the_kernel_and_the_control_rules_import_only_each_other() -> None:
    """The kernel and the controls' rules are pure: no Django, nothing of the package outside
    them (a test of plain data)."""
    outside = sorted(
        (src, dst)
        for src, targets in graph().items()
        if src != "craft_apps" and is_pure(part_of(src))
        for dst in targets
        if not is_pure(part_of(dst))
    )
    assert not outside
    paths = [*(PACKAGE / "kernel").rglob("*.py"), *(PACKAGE / "controls" / "actions").rglob("*.py")]
    paths += [PACKAGE / "controls" / f"{name}.py" for name in ("rules", "guard", "policies")]
    assert all(path.is_file() for path in paths)
    assert [str(path.relative_to(PACKAGE.parent)) for path in paths if imports_django(path)] == []


def test_the_top_holds_only_what_django_looks_for_and_the_entry_points() -> None:
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert top == AT_THE_TOP


def test_the_http_side_and_polling_never_import_each_other() -> None:
    edges = graph()
    crossing = sorted(
        (src, dst)
        for src, targets in edges.items()
        for dst in targets
        if {part_of(src), part_of(dst)} == {"api", "polling"}
    )
    assert not crossing


def test_nothing_the_wheel_ships_imports_the_testing_helpers() -> None:
    """``craft_apps.testing`` is left out of the wheel (pyproject.toml): a site never needs it."""
    importers = sorted(
        src
        for src, targets in graph().items()
        if src != "craft_apps" and part_of(src) != "testing"
        for dst in targets
        if part_of(dst) == "testing"
    )
    assert not importers


def test_polling_names_no_github_module() -> None:
    """The poller knows its source only through ``craft_apps.kernel.source``; GitHub is plugged in above
    it (``poll_craft_releases`` hands ``GitHubClient.from_settings`` to the runner)."""
    naming = sorted(
        (src, dst)
        for src, targets in graph().items()
        for dst in targets
        if part_of(src) == "polling" and part_of(dst) == "github"
    )
    assert not naming
    assert any(
        part_of(dst) == "kernel.source"
        for src, targets in graph().items()
        for dst in targets
        if part_of(src) == "polling"
    )


def test_no_import_cycles() -> None:
    edges = {m: {t for t in ts if t in graph()} for m, ts in graph().items()}
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert state and all(v == 2 for v in state.values())
