"""Shared fixtures, and the tiers every test is sorted into at collection (pyproject.toml names them):

* ``realdata``: uses the real LETOR files (the fixtures ``shared_data``, ``mq2008_dir``,
  ``ohsumed_dir``, ``ohsumed_fold``); skips when ../shared/data is absent;
* ``e2e``: whole studies through the Snakemake CLI: a module in ``E2E_MODULES`` or named
  ``*_e2e.py``, a test using a shared base run (``E2E_FIXTURES``), or one marked ``slow``;
* ``integration``: one component against a real neighbour: the test, a fixture it uses or a
  helper they call (followed through the module and the helper modules of tests/) starts a
  process, a server or an MLflow store (``NEIGHBOURS``);
* ``unit``: everything else.

A tier marker on a test or its module (``pytestmark = pytest.mark.integration``) overrides this.
``slow`` is e2e plus realdata (``-m "not slow"`` = unit and integration). A unit-tier test that
starts the Snakemake CLI, Python, MLflow or a shell fails, naming the command.

Under pytest-xdist (``-n 3 --dist loadgroup``, pyproject.toml) a test shares a worker with the
tests it shares a costly fixture with (``group_for_workers``), and the long groups start first."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# JAX programs compile without most of XLA's optimisation passes here, and in the pipeline jobs
# the tests start: the tests' arrays are small and compiling was most of their JAX time (the three
# JAX modules: 87 s -> 70 s of wall, same results). The pipeline and the benchmarks keep them;
# set the variable to false to test with them.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "true")
SHARED_DATA = Path(os.environ.get("RANKSTUDY_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not (SHARED_DATA / "MQ2008" / "Fold1" / "train.txt.gz").exists():
        if os.environ.get("RANKSTUDY_REQUIRE_SHARED_DATA"):
            pytest.fail(f"RANKSTUDY_REQUIRE_SHARED_DATA is set but {SHARED_DATA}/MQ2008 is missing")
        pytest.skip(f"real LETOR data not found under {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def mq2008_dir(shared_data: Path) -> Path:
    return shared_data / "MQ2008"


@pytest.fixture(scope="session")
def ohsumed_dir(shared_data: Path) -> Path:
    """LETOR 3.0 OHSUMED, QueryLevelNorm (the seeds' data: long queries, a third relevant)."""
    folder = shared_data / "OHSUMED" / "QueryLevelNorm"
    if not (folder / "Fold1" / "train.txt.gz").exists():
        if os.environ.get("RANKSTUDY_REQUIRE_SHARED_DATA"):
            pytest.fail(f"RANKSTUDY_REQUIRE_SHARED_DATA is set but {folder} is missing")
        pytest.skip(f"OHSUMED not found under {folder}")
    return folder


@pytest.fixture(scope="session")
def ohsumed_fold(ohsumed_dir: Path):
    """``ohsumed_fold(fold=1, cleaning=None, rel_threshold=1, normalization="querylevel")``: the
    fold's {train, vali, test} RankData, cleaned and normalised as the pipeline does (the
    cleaning rules as in config: ``{"chakrabarti": [...], "drop_no_relevant": [...], ...}``).
    Parsed once per session."""
    from rankstudy.data.folds import Fold, clean
    from rankstudy.data.letor import read_letor
    from rankstudy.features.normalize import Normalizer

    parsed: dict[int, dict] = {}

    def load(fold: int = 1, cleaning: dict | None = None, rel_threshold: float = 1,
             normalization: str = "querylevel") -> dict:
        if fold not in parsed:
            parsed[fold] = {s: read_letor(ohsumed_dir / f"Fold{fold}" / f"{s}.txt.gz", n_features=45, labels=[0, 2])
                            for s in ("train", "vali", "test")}
        prepared = Fold(dict(parsed[fold]), 2.0)
        clean(prepared, cleaning or {}, rel_threshold)
        normalizer = Normalizer(normalization).fit(prepared.splits["train"])
        return {s: normalizer.transform(d) for s, d in prepared.splits.items()}

    return load


# ---- base runs built once per session; a test that changes a run works on a copy (copy_run)

@pytest.fixture(autouse=True, scope="session")
def progress_on_the_terminal(request):
    """The runs take minutes: show Snakemake's progress as it comes, past pytest's capture."""
    runs = sys.modules.get("pipeline_runs")
    if runs is None:  # no collected test runs the pipeline
        return
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def to_terminal(line: str) -> None:
        with capture.global_and_fixture_disabled():
            print(line, file=sys.stderr, flush=True)  # a pytest-xdist worker's stdout is not shown

    runs.say = to_terminal


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """``(workdir, CompletedProcess)``: the tiny study (pipeline_runs.TINY) run once in a git clone
    of its own. Shared by every test that reads it: never change it, copy it (copy_run)."""
    from pipeline_runs import TINY, git, make_workdir, snakemake

    workdir = make_workdir(tmp_path_factory.mktemp("tiny-base"), TINY)
    git(workdir, "init", "-q")
    git(workdir, "add", ".")
    git(workdir, "commit", "-qm", "the user's clone")
    return workdir, snakemake(workdir)


# ---- tiers

TIERS = ("unit", "integration", "e2e", "realdata")
TIER = pytest.StashKey[str]()  # the tier a test got, for the unit tier's check below
REALDATA_FIXTURES = {"shared_data", "mq2008_dir", "ohsumed_dir", "ohsumed_fold"}
E2E_FIXTURES = {"tiny_base", "tiny_run"}
E2E_MODULES = {"test_pipeline_e2e", "test_bench_scale"}  # besides every test_*_e2e.py
# names whose use starts a process or a server, or opens an MLflow store
# (sys.executable: a command line for a library that starts it)
NEIGHBOURS = {"subprocess", "Popen", "multiprocessing", "SNAKEMAKE", "LINT_IMPORTS", "snakemake", "serving",
              "HTTPServer", "ThreadingHTTPServer", "socketserver", "MlflowClient", "mlflow", "sqlite3", "executable"}
NEIGHBOUR_MODULES = {"subprocess", "multiprocessing", "mlflow", "socketserver", "sqlite3"}
# what a unit-tier test may not start (a library's own helpers, e.g. ldconfig, stay allowed)
UNIT_FORBIDDEN = {"snakemake", "mlflow", "lint-imports", "bash", "sh", "git", "sinfo", "sbatch", "sacct"}


class _Refs:
    """The names a module-level function or class of a tests/ file uses, followed through the
    module's own definitions and those it imports from the helper modules of tests/."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.modules: dict[Path, tuple[dict, dict]] = {}
        self.memo: dict[tuple[Path, str], bool] = {}

    def parse(self, path: Path) -> tuple[dict, dict]:
        if path not in self.modules:
            tree = ast.parse(path.read_text(), str(path))
            defs, imported = {}, {}
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defs[node.name] = node
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        imported[alias.asname or alias.name] = (node.module, alias.name)
            self.modules[path] = (defs, imported)
        return self.modules[path]

    def helper(self, module: str) -> Path | None:
        path = self.folder / f"{module}.py"
        return path if path.exists() else None

    def uses_neighbours(self, path: Path, name: str) -> bool:
        key = (path, name)
        if key not in self.memo:
            self.memo[key] = False  # a recursion ends here
            self.memo[key] = self._walk(path, name)
        return self.memo[key]

    def _walk(self, path: Path, name: str) -> bool:
        defs, imported = self.parse(path)
        if name not in defs:
            return False
        for node in ast.walk(defs[name]):
            used = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else None)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("sqlite:"):
                return True
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] in NEIGHBOUR_MODULES or m == "http.server" for m in modules):
                    return True
                if isinstance(node, ast.ImportFrom) and NEIGHBOURS & {a.name for a in node.names}:
                    return True
                if isinstance(node, ast.ImportFrom) and node.module and self.helper(node.module):
                    if any(self.uses_neighbours(self.helper(node.module), a.name) for a in node.names):
                        return True
                continue
            if used is None:
                continue
            if used in NEIGHBOURS:
                return True
            if used != name and used in defs and self.uses_neighbours(path, used):
                return True
            if used in imported and (found := self.helper(imported[used][0])):
                if self.uses_neighbours(found, imported[used][1]):
                    return True
        return False


def tier_of(item: pytest.Item, refs: _Refs) -> str:
    explicit = {m.name for m in item.iter_markers() if m.name in TIERS}
    if len(explicit) > 1:
        raise pytest.UsageError(f"{item.nodeid}: more than one tier marker: {sorted(explicit)}")
    if explicit:
        return explicit.pop()
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & REALDATA_FIXTURES:
        return "realdata"
    module = Path(item.path)
    if (module.stem in E2E_MODULES or module.stem.endswith("_e2e") or fixtures & E2E_FIXTURES
            or item.get_closest_marker("slow")):
        return "e2e"
    function = getattr(item, "function", None)
    own = [(module, getattr(item, "cls", None).__name__ if getattr(item, "cls", None) else function.__name__)] \
        if function is not None else []
    infos = getattr(item, "_fixtureinfo", None)
    for name in fixtures - {"unit_tests_start_no_process", "progress_on_the_terminal"}:  # this file's own
        for fixturedef in (infos.name2fixturedefs.get(name, ()) if infos else ()):
            code = getattr(fixturedef.func, "__code__", None)
            if code is not None and Path(code.co_filename).parent == refs.folder:
                own.append((Path(code.co_filename), fixturedef.func.__name__))
    if any(refs.uses_neighbours(path, name) for path, name in own):
        return "integration"
    return "unit"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    refs = _Refs(Path(__file__).resolve().parent)
    for item in items:
        tier = tier_of(item, refs)
        if item.get_closest_marker("slow") and tier not in ("e2e", "realdata"):
            raise pytest.UsageError(f"{item.nodeid}: marked slow but of the {tier} tier (slow is e2e and realdata)")
        if tier not in {m.name for m in item.iter_markers()}:
            item.add_marker(tier)
        if tier in ("e2e", "realdata") and not item.get_closest_marker("slow"):
            item.add_marker("slow")
        item.stash[TIER] = tier
    group_for_workers(config, items)


# ---- the workers (pytest-xdist; pyproject.toml's addopts: -n 3 --dist loadgroup; -n 0 runs serially)

BASE_GROUP = "tiny_base"  # every test of the session's tiny run, on one worker: built once
GROUPS = "rankstudy_groups"  # a worker's input: the folder where it writes each test's group
GROUPS_DIR = pytest.StashKey[Path]()


def group_of(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return item.nodeid
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once for several tests of its module: one of module,
    class or package scope, or of session scope defined in the module itself."""
    infos = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (infos.name2fixturedefs.get(name, ()) if infos else ()):
            code = getattr(fixturedef.func, "__code__", None)
            if fixturedef.scope in ("class", "module", "package") or (
                    fixturedef.scope == "session" and code is not None and Path(code.co_filename) == Path(item.path)):
                return True
    return False


def group_for_workers(config, items) -> None:
    """Give a test an ``xdist_group`` where it must share a worker: ``BASE_GROUP`` when it uses the
    tiny run, its module's name when it shares a module's fixture (an explicit mark stays); any
    other test goes to whichever worker is free. On a worker, order the groups so that the long
    ones start first: the tiny run's, then those with an e2e or realdata test, then those with an
    integration test, then the rest."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if E2E_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group(BASE_GROUP))
        elif shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(Path(item.path).stem))
    if not hasattr(config, "workerinput"):  # a serial run keeps the order of the files
        return
    slow = {group_of(item) for item in items if item.stash[TIER] in ("e2e", "realdata")}
    # integration groups (a module's MLflow stores, servers) before the unit tests, which are short
    # and fill the end: one late group of them was the suite's last minute on one worker
    integration = {group_of(item) for item in items if item.stash[TIER] == "integration"}
    rank = {name: 0 if name == BASE_GROUP else 1 if name in slow else 2 if name in integration else 3
            for name in map(group_of, items)}
    # stable: a group's tests keep their order and stay together (a module's fixtures are built once)
    items.sort(key=lambda item: rank[group_of(item)])


# pytest-xdist 3.8's loadgroup tells the controller a test's group by renaming the test, which
# pytest 9.2 ignores (pytest-xdist issue 1386): the groups are scattered. Here the workers write
# {test: group} to a file after collection and the controller's scheduler (GroupScheduling, through
# xdist's public scheduler hook and protocol) reads it instead.

@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    if node.config.getvalue("dist") != "loadgroup":
        return
    if GROUPS_DIR not in node.config.stash:
        node.config.stash[GROUPS_DIR] = Path(tempfile.mkdtemp(prefix="rankstudy-xdist-groups-"))
    node.workerinput[GROUPS] = str(node.config.stash[GROUPS_DIR])


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own tells the controller the collection is done
def pytest_collection_finish(session):
    folder = getattr(session.config, "workerinput", {}).get(GROUPS)
    if folder:  # after every collection hook: the test names are the ones the controller gets
        mapping = {item.nodeid: group_of(item) for item in session.items}
        (Path(folder) / f"{session.config.workerinput['workerid']}.json").write_text(json.dumps(mapping))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if GROUPS_DIR not in config.stash:
        return None
    from xdist.workermanage import parse_tx_spec_config

    return GroupScheduling(config.stash[GROUPS_DIR], len(parse_tx_spec_config(config)))


class GroupScheduling:
    """A scheduler of pytest-xdist's ``Scheduling`` protocol (xdist/scheduler/protocol.py, the
    public interface of ``pytest_xdist_make_scheduler``): each group, in the collection's order,
    to the next worker short of work (at most one test left), as loadgroup would; a test's group
    as the workers wrote it after collection (no private part of xdist's schedulers)."""

    def __init__(self, folder: Path, n_nodes: int):
        self.folder, self.n_nodes = folder, n_nodes
        self.collections: dict = {}  # worker -> the test ids it collected
        self.pending: dict = {}  # worker -> the indices it was sent and has not reported
        self.queue: list[list[str]] = []  # groups not yet sent, each its test ids
        self.collection: list[str] | None = None

    @property
    def nodes(self) -> list:
        return list(self.pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.collections) >= self.n_nodes

    @property
    def tests_finished(self) -> bool:
        # a worker runs its last test only once told there is no more (it needs the next item)
        return self.collection_is_completed and not self.queue and all(len(p) < 2 for p in self.pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(self.pending.values())

    def add_node(self, node) -> None:
        self.pending[node] = []

    def add_node_collection(self, node, collection) -> None:
        if self.collection is not None and list(collection) != self.collection:
            raise pytest.UsageError(f"xdist worker {node.gateway.id} collected other tests than the first worker")
        self.collections[node] = list(collection)

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
        self.pending[node].remove(item_index)
        self._refill(node)

    def mark_test_pending(self, item: str):
        raise NotImplementedError("rankstudy's group scheduler does not re-run tests (--max-worker-restart)")

    def remove_pending_tests_from_node(self, node, indices) -> None:
        raise NotImplementedError("rankstudy's group scheduler does not steal work")

    def remove_node(self, node) -> str | None:
        left = self.pending.pop(node)  # its collection stays: the collection was complete
        if not left:
            return None
        crashed, rest = self.collection[left[0]], [self.collection[i] for i in left[1:]]
        if rest:  # the crashed worker's other tests go to another worker, together
            self.queue.insert(0, rest)
        for other in self.nodes:
            self._refill(other)
        return crashed

    def schedule(self) -> None:
        if self.collection is None:
            self.collection = next(iter(self.collections.values()))
            groups: dict[str, str] = {}
            for path in sorted(self.folder.glob("*.json")):  # every worker wrote its file before it reported
                groups.update(json.loads(path.read_text()))
            by_group: dict[str, list[str]] = {}
            for nodeid in self.collection:
                by_group.setdefault(groups.get(nodeid, nodeid), []).append(nodeid)
            self.queue = list(by_group.values())
        for node in self.nodes:
            self._refill(node)

    def _refill(self, node) -> None:
        if node.shutting_down:
            return
        # a worker holds its last test back until it is sent more or told to stop: keep two
        while self.queue and len(self.pending[node]) < 2:
            index = {nodeid: i for i, nodeid in enumerate(self.collections[node])}
            sent = [index[nodeid] for nodeid in self.queue.pop(0)]
            self.pending[node].extend(sent)
            node.send_runtest_some(sent)
        if not self.queue:
            node.shutdown()


def pytest_unconfigure(config):
    if GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[GROUPS_DIR], ignore_errors=True)


@pytest.fixture(autouse=True)
def unit_tests_start_no_process(request, monkeypatch):
    """The unit tier's promise, checked: its tests start no Snakemake, Python, MLflow or shell."""
    if request.node.stash.get(TIER, None) != "unit":
        return
    real = subprocess.Popen.__init__

    def refuse(self, args, *rest, **kwargs):
        program = Path(str(args if isinstance(args, (str, os.PathLike)) else args[0]).split()[0]).name
        if program in UNIT_FORBIDDEN or program.startswith("python") or program == Path(sys.executable).name:
            raise AssertionError(f"a unit-tier test starts `{program}`: it belongs to the integration tier "
                                 "(mark it @pytest.mark.integration, or see tests/conftest.py)")
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
