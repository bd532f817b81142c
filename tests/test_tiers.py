"""The test tiers of tests/conftest.py: each test gets exactly one, by what it uses (real data, a
shared base run, a process, a server or an MLflow store, followed through helper functions and
fixtures), `slow` is e2e plus realdata, a unit-tier test that starts a process fails naming it;
and no test module imports another (shared helpers live in helper modules)."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e", "realdata")


@pytest.fixture
def tiered(pytester):
    """Collect the given test files with this project's conftest; {test name: (tier markers, slow)}."""
    shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")

    def collect(**files: str) -> dict[str, tuple[list[str], bool]]:
        for name, text in files.items():
            (pytester.path / f"{name}.py").write_text(textwrap.dedent(text))
        items, _ = pytester.inline_genitems(*(str(pytester.path / f"{name}.py") for name in files if name.startswith("test_")))
        return {item.name: ([m.name for m in item.iter_markers() if m.name in TIERS],
                            item.get_closest_marker("slow") is not None) for item in items}

    return collect


def test_each_test_gets_the_tier_of_what_it_uses(tiered):
    found = tiered(helper="""
        import subprocess

        def run_it():
            return start()

        def start():
            return subprocess.run(["true"])
        """, test_mix="""
        import pytest
        from helper import run_it

        def local_helper():
            return run_it()

        @pytest.fixture
        def store(tmp_path):
            return f"sqlite:///{tmp_path}/mlflow.db"

        def test_pure():
            assert 1 + 1 == 2

        def test_through_two_helpers():
            local_helper()

        def test_with_a_store(store):
            pass

        def test_on_real_data(shared_data):
            pass

        @pytest.mark.slow
        def test_marked_slow():
            pass

        @pytest.mark.integration
        def test_says_its_tier(shared_data):
            pass

        def test_hands_python_to_a_library():
            import sys
            helper_of_a_library([sys.executable, "-c", "pass"])

        class TestGrouped:
            def test_in_a_class(self):
                import multiprocessing
        """, test_whole_e2e="""
        def test_anything():
            pass
        """)
    assert found == {"test_pure": (["unit"], False), "test_through_two_helpers": (["integration"], False),
                     "test_with_a_store": (["integration"], False), "test_on_real_data": (["realdata"], True),
                     "test_marked_slow": (["e2e"], True), "test_says_its_tier": (["integration"], False),
                     "test_hands_python_to_a_library": (["integration"], False),
                     "test_in_a_class": (["integration"], False), "test_anything": (["e2e"], True)}


def test_two_tier_markers_are_refused(pytester):
    shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")
    pytester.makepyfile(test_two="""
        import pytest

        pytestmark = pytest.mark.unit

        @pytest.mark.e2e
        def test_both():
            pass
        """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    assert result.ret != 0
    assert "test_two.py::test_both: more than one tier marker: ['e2e', 'unit']" in str(result.stdout) + str(result.stderr)


def test_a_unit_test_that_starts_python_fails_naming_it(pytester):
    shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")
    pytester.makepyfile(test_hidden="""
        import importlib

        def test_hidden():  # the process is started where a reader of this file cannot see it
            importlib.import_module("sub" + "process").run(["python3", "-c", "pass"])
        """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a unit-tier test starts `python3`*integration*"])


def test_no_test_module_imports_another():
    """Shared helpers live in conftest.py or a helper module (losscheck.py, pipeline_runs.py, ...)."""
    found = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}:{node.lineno} imports {n}" for n in names
                      if n.split(".")[-1].startswith("test_") or n.startswith("tests.test_")]
    assert not found, found
