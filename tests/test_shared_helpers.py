"""What test modules share lives in support modules and conftest files, never in another test
module: importing one runs its module-level setup (its marks, its fixtures) where it doesn't
belong, and a helper found there is found by luck. The test reads every module's imports."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(path: Path) -> list[str]:
    """The test modules (``test_*``) that the module at ``path`` imports from."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [name for name in names if name.rsplit(".", 1)[-1].startswith("test_")]
    return found


def test_no_module_of_the_suite_imports_from_a_test_module():
    offenders = {
        str(path.relative_to(TESTS)): modules
        for path in sorted(TESTS.rglob("*.py"))
        if (modules := imported_test_modules(path))
    }
    assert offenders == {}


def test_the_check_sees_a_relative_and_a_lazy_import(tmp_path: Path):
    module = tmp_path / "test_example.py"
    module.write_text(
        "from .test_poller import release_json\n\ndef f():\n    import tests.api.test_metrics\n"
    )
    assert imported_test_modules(module) == ["test_poller", "tests.api.test_metrics"]
