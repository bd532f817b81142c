"""Check the MLflow pages a researcher reads, in a real browser (headless Chromium via Playwright).

    python tests/mlflow_ui_check.py --results results --out results/mlflow-ui

serves ``<results>/mlflow.db`` with ``mlflow ui`` on 127.0.0.1 (or uses ``--ui-url``), opens the
address ``python3 workflow/bootstrap.py ui`` prints, and checks, saving a screenshot of each page
under ``--out``:

* the runs table opens with the saved view's test metrics as columns (``runs.png``), a parent's
  row holds its folds' mean in the same column as its fold rows (``runs-expanded.png``);
* the runs page is in model-training mode (no GenAI navigation: Judges, Evaluation runs);
* a run clicked in a browser that has never chosen a mode (``run-fresh.png``), and the compare
  view there: MLflow 3.17 opens every page without ``workflowType`` in the address in GenAI mode
  until the browser picks "Model training" once (it ignores the experiment's
  ``mlflow.experimentKind``), so these two print ``known`` rather than fail while that holds,
  and ``unexpected pass`` once a newer MLflow stays in model training;
* after one click on "Model training", a clicked parent run (``run-parent.png``) and the compare
  view of two fold runs (``compare.png``) stay in model-training mode;
* a fold run's page lists its training curves first, no "System metrics" block (``run-fold.png``);
* a parent run shows its parameters (the method's settings: "Parameters (N)", N > 0);
* the compare view shows a number, not NaN, for ``objective`` on a LambdaMART and a linear fold.

Prints one line per check (``pass``/``FAIL``/``known``/``unexpected pass``); exits 1 if a check
failed. Needs Chromium (Debian: ``apt-get install chromium``; ``--chromium`` names another
binary) and ``pip install playwright`` (its own browser download is not used). The store must hold
a finished pipeline run: a LambdaMART and a linear method, two folds each, and the tables job's
saved view (``tests/test_mlflow_ui_e2e.py`` runs this on the tiny study).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Chromium in a closed network: without the background-networking flags it refuses connections
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# what MLflow 3.17's side bar shows in GenAI mode and never in model-training mode
GENAI_NAVIGATION = ("Judges", "Evaluation runs")
TIMEOUT_MS = 90_000


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    known: bool = False  # a limitation of MLflow's UI that rankstudy cannot change (documented)

    @property
    def verdict(self) -> str:
        if self.known:
            return "unexpected pass" if self.ok else "known"
        return "pass" if self.ok else "FAIL"

    @property
    def failed(self) -> bool:
        return not self.ok and not self.known


def bootstrap():
    """setup/bootstrap.py, for the address it prints (a script, not a module of the package)."""
    spec = importlib.util.spec_from_file_location("bootstrap", REPO / "setup" / "bootstrap.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(db: Path, port: int, log: Path) -> subprocess.Popen:
    """``mlflow ui`` on the store, once it answers /health. One worker: seen once with MLflow 3.17's
    default four, two workers created the store's tables at once ("table
    sql_trace_metric_daily_rollups already exists", a 500) and the runs table stayed empty."""
    mlflow = Path(sys.executable).with_name("mlflow")
    with open(log, "w") as out:
        server = subprocess.Popen([str(mlflow), "ui", "--backend-store-uri", f"sqlite:///{db}", "--workers", "1",
                                   "--host", "127.0.0.1", "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"mlflow ui exited with {server.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(1)
    server.terminate()
    raise RuntimeError(f"mlflow ui did not answer on port {port} within 180 s; see {log}")


def pick_runs(db: Path, experiment: str) -> dict:
    """The runs the checks click: a LambdaMART parent with its folds, and a fold of a linear method."""
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise SystemExit(f"{db} has no experiment {experiment!r}: run the pipeline first")
    runs = client.search_runs([found.experiment_id], max_results=5000)
    level = lambda run: run.data.tags.get("rankstudy.level")  # noqa: E731
    parents = [r for r in runs if level(r) == "parent" and r.data.params.get("kind") == "lambdamart"]
    if not parents:
        raise SystemExit(f"{db}: no LambdaMART parent run with params (a run of this rankstudy version)")
    parent = parents[0]
    folds = [r for r in runs if level(r) == "fold" and r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    linear = [r for r in runs if level(r) == "fold" and r.data.tags.get("method") != "lambdamart"
              and r.data.tags.get("featureset") == parent.data.tags.get("featureset")]
    if len(folds) < 1 or not linear:
        raise SystemExit(f"{db}: needs folds of the LambdaMART parent and a fold of another method")
    return {"experiment_id": found.experiment_id, "view": found.tags, "parent": parent, "folds": folds,
            "other": linear[0]}


def genai_navigation(page) -> list[str]:
    """The GenAI side-bar entries on the page (none in model-training mode)."""
    return [label for label in GENAI_NAVIGATION if page.get_by_text(label, exact=True).count()]


def settle(page, text: str) -> None:
    page.get_by_text(text).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_timeout(1500)  # the cells fill in after the first rows appear


def row(page, run_id: str):
    return page.locator(f'.ag-row[row-id="{run_id}"]')


def open_runs(page, address: str, run_id: str, column: str | None = None) -> None:
    """The runs table, once the row of ``run_id`` (and the header of ``column``) is drawn; the
    table counts "0 matching runs" while it loads."""
    page.goto(address)
    row(page, run_id).first.wait_for()
    if column:
        try:
            page.locator(f'[role="columnheader"][col-id="{column}"]').first.wait_for()
        except Exception:  # Playwright's TimeoutError: the check below reports the missing column
            pass
    page.wait_for_timeout(1500)  # the cells fill in after the first rows appear


def cell_number(page, run_id: str, column: str) -> float | None:
    texts = row(page, run_id).locator(f'[col-id="{column}"]').all_inner_texts()
    try:
        return float(texts[0])
    except (IndexError, ValueError):
        return None


def compare_values(page, metric: str) -> list[str]:
    """The values of one metric's row in the compare view's metrics table (two virtualised grids,
    names and values, whose rows share their vertical offset)."""
    return page.evaluate("""metric => {
        const link = [...document.querySelectorAll('a[title="Plot chart"]')].find(a => a.textContent.trim() === metric);
        if (!link) return null;
        const nameCell = link.parentElement, top = nameCell.style.top;
        const nameGrid = nameCell.closest('.ReactVirtualized__Grid');
        const grids = [...document.querySelectorAll('.ReactVirtualized__Grid')];
        const values = grids[grids.indexOf(nameGrid) + 1];
        if (!values) return null;
        return [...values.querySelectorAll('[style]')].filter(c => c.style.top === top && c.style.left !== '')
            .map(c => c.textContent.trim());
    }""", metric)


def run_checks(address: str, picked: dict, out: Path, chromium: str) -> list[Check]:
    from playwright.sync_api import sync_playwright

    from rankstudy.tracking.views import decode_view, view_tag

    checks: list[Check] = []
    parent, folds, other = picked["parent"], picked["folds"], picked["other"]
    base = address.split("#", 1)[0]
    view = picked["view"].get(view_tag(parent.data.tags["study"]))  # the clicked parent's study's view
    columns = decode_view(view)["selectedColumns"] if view else []
    checks.append(Check("the printed address opens the saved view of the test metrics",
                        "viewStateShareKey=" in address and bool(columns), address))
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        # a fresh profile: a browser that never chose between GenAI and model training
        browser = p.chromium.launch_persistent_context(profile, executable_path=chromium, args=CHROMIUM_ARGS,
                                                       headless=True, viewport={"width": 1600, "height": 1000})
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)

        open_runs(page, address, parent.info.run_id, columns[0] if columns else None)
        page.screenshot(path=out / "runs.png")
        headers = set(page.locator('[role="columnheader"][col-id]').evaluate_all(
            "cells => cells.map(c => c.getAttribute('col-id'))"))
        missing = [c for c in columns if c not in headers]
        checks.append(Check("the runs table shows the test metrics as columns", bool(columns) and not missing,
                            f"columns {columns}" + (f"; missing {missing}" if missing else "")))
        checks.append(Check("the runs page is in model-training mode", not genai_navigation(page),
                            f"GenAI navigation: {genai_navigation(page)}"))
        metric = "metrics.`test.ndcg10`"
        row(page, parent.info.run_id).locator("button").first.click()  # expand the parent
        row(page, folds[0].info.run_id).first.wait_for()
        page.wait_for_timeout(1000)
        page.screenshot(path=out / "runs-expanded.png")
        shown = {r.info.run_id: cell_number(page, r.info.run_id, metric) for r in [parent, *folds]}
        mean = sum(r.data.metrics["test.ndcg10"] for r in folds) / len(folds)
        ok = (None not in shown.values() and math.isclose(shown[parent.info.run_id], mean, rel_tol=1e-6)
              and all(math.isclose(shown[r.info.run_id], r.data.metrics["test.ndcg10"], rel_tol=1e-6) for r in folds))
        checks.append(Check("a parent's row shows its folds' mean in the column of its fold rows (test.ndcg10)",
                            ok, f"shown {shown}; mean of folds {mean:.6g}"))

        # a click on a run, in a browser that never chose a mode
        row(page, parent.info.run_id).get_by_text(parent.info.run_name, exact=True).first.click()
        settle(page, "Parameters (")
        page.screenshot(path=out / "run-fresh.png")
        checks.append(Check("a run clicked in a fresh browser opens in model-training mode", not genai_navigation(page),
                            f"GenAI navigation: {genai_navigation(page)} ({page.url})", known=True))
        compare = (f"{base}#/compare-runs?runs=[\"{folds[0].info.run_id}\",\"{other.info.run_id}\"]"
                   f"&experiments=[\"{picked['experiment_id']}\"]")
        page.goto(compare)
        settle(page, "Run details")
        page.screenshot(path=out / "compare-fresh.png")
        checks.append(Check("the compare view in a fresh browser is in model-training mode", not genai_navigation(page),
                            f"GenAI navigation: {genai_navigation(page)}", known=True))

        # the user's one switch to model training, which MLflow keeps for the browser
        page.get_by_text("Model training", exact=True).first.click()
        open_runs(page, address, parent.info.run_id)
        row(page, parent.info.run_id).get_by_text(parent.info.run_name, exact=True).first.click()
        settle(page, "Parameters (")
        page.screenshot(path=out / "run-parent.png", full_page=True)
        checks.append(Check("after one switch to Model training, a clicked run stays in model-training mode",
                            not genai_navigation(page), f"GenAI navigation: {genai_navigation(page)} ({page.url})"))
        found = re.search(r"Parameters \((\d+)\)", page.inner_text("body"))
        checks.append(Check("a parent run shows the method's settings as parameters", bool(found and int(found[1]) > 0),
                            found[0] if found else "no 'Parameters (N)' on the page"))

        # a fold run's page opens on its training curves: no "System metrics" block first, and the
        # first metric listed is a curve (logged first), not a test score or a job's timing
        page.goto(f"{base}#/experiments/{picked['experiment_id']}/runs/{folds[0].info.run_id}")
        settle(page, "Metrics (")
        page.screenshot(path=out / "run-fold.png", full_page=True)
        listed = page.locator('a[href*="metric"]').all_inner_texts()
        first = listed[0].strip() if listed else ""
        step0 = ("test.", "vali.", "random.", "selection.", "std.", "system/", "candidate.")
        system_block = re.search(r"System metrics \(\d+\)", page.inner_text("body"))  # not the tab's label
        checks.append(Check("a fold run's page lists its training curves first",
                            bool(first) and not first.startswith(step0) and not system_block,
                            f"first metrics listed: {listed[:5]}"))

        open_runs(page, address, parent.info.run_id)
        row(page, parent.info.run_id).locator("button").first.click()
        for run in (folds[0], other):
            if not row(page, run.info.run_id).count():  # a fold of a collapsed parent: expand it
                row(page, run.data.tags["mlflow.parentRunId"]).locator("button").first.click()
                row(page, run.info.run_id).first.wait_for()
            row(page, run.info.run_id).locator(".ag-selection-checkbox").first.click()
        page.get_by_role("button", name="Compare").first.click()
        settle(page, "Run details")
        checks.append(Check("after one switch to Model training, the compare view stays in model-training mode",
                            "compare-runs" in page.url and not genai_navigation(page),
                            f"GenAI navigation: {genai_navigation(page)} ({page.url})"))
        objective = page.locator('a[title="Plot chart"]', has_text="objective").first
        try:
            objective.wait_for()
            objective.scroll_into_view_if_needed()  # the screenshot shows the metrics table's row
        except Exception:  # Playwright's TimeoutError: no objective row; the check reports it
            pass
        page.screenshot(path=out / "compare.png")
        values = compare_values(page, "objective")
        numbers = []
        for value in values or []:
            try:
                numbers.append(float(value))
            except ValueError:
                pass
        checks.append(Check("the compare view shows the objective of a LambdaMART and a linear fold",
                            values is not None and len(numbers) == 2 and not any(map(math.isnan, numbers)),
                            f"objective: {values} ({folds[0].info.run_name}, {other.info.run_name})"))
        browser.close()
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=REPO / "results", help="folder holding mlflow.db")
    parser.add_argument("--out", type=Path, required=True, help="folder for the screenshots")
    parser.add_argument("--experiment", default="rankstudy")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--ui-url", help="an MLflow UI already serving the store (else one is started)")
    args = parser.parse_args(argv)
    db = (args.results / "mlflow.db").resolve()
    if not db.exists():
        raise SystemExit(f"{db} does not exist: run the pipeline first")
    args.out.mkdir(parents=True, exist_ok=True)
    picked = pick_runs(db, args.experiment)
    server = None
    if args.ui_url:
        port = args.ui_url.rstrip("/").rsplit(":", 1)[1]
    else:
        port = str(free_port())
        server = serve(db, int(port), args.out / "mlflow-ui.log")
    try:
        boot = bootstrap()
        study = picked["parent"].data.tags.get("study")  # the view of the clicked parent's study
        checks = run_checks(boot.runs_url(db, port, args.experiment, study=study), picked, args.out, args.chromium)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    for check in checks:
        print(f"{check.verdict}: {check.name}" + (f" ({check.detail})" if check.detail else ""))
    print(f"screenshots: {args.out.resolve()}")
    return 1 if any(check.failed for check in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
