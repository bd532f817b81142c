"""The views of the runs table MLflow's UI opens on: one per study, its runs only, the evaluation
metrics as columns.

MLflow's UI chooses its runs table's columns per browser (local storage) and opens on Run Name,
Created, Dataset, Duration, Source and Models, with every metric behind "Columns". A view saved
in the UI ("Views" > "Save as new view") is an experiment tag ``mlflow.sharedViewState.<key>``
that any browser opens through the address parameter ``viewStateShareKey=<key>``; rankstudy
writes one such view per study (key ``rankstudy-<study>``, :func:`view_key`) the way the UI of
MLflow 3.17 writes it (a JSON record whose ``state`` is ``deflate;`` and the base64 of the
zlib-compressed table state): the filter ``tags.study = '<study>'`` (every study shares the
experiment) and the study's test metrics as columns. ``workflow/bootstrap.py ui`` prints the
address of each. ``tests/mlflow_ui_check.py`` checks in a browser that a view opens with
these columns.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable

from rankstudy.tracking import store
from rankstudy.tracking.runs import mlflow_key

VIEW_PREFIX = "rankstudy"
SHARED_VIEW_TAG = "mlflow.sharedViewState."
# the one view of rankstudy before views were per study: it showed whichever study logged last
LEGACY_VIEW_TAG = f"{SHARED_VIEW_TAG}{VIEW_PREFIX}"


def view_key(study: str) -> str:
    """The address parameter ``viewStateShareKey`` of ``study``'s view."""
    return f"{VIEW_PREFIX}-{study}"


def view_tag(study: str) -> str:
    return f"{SHARED_VIEW_TAG}{view_key(study)}"


def study_filter(study: str) -> str:
    """The runs table's search filter for one study's runs (its parents, folds, nested and study runs)."""
    if "'" in study:
        raise ValueError(f"study name {study!r} must not contain a single quote")
    return f"tags.study = '{study}'"


# The UI's column ids (MLflow 3.17) and the widths (px) a view gives them: its defaults (190 and
# 100) cut "default: lambdamart [rho0.10] synthetic fold1" after the method and a metric's value
# after 8 digits
RUN_NAME_COLUMN, RUN_NAME_WIDTH, METRIC_WIDTH = "attributes.`Run Name`", 380, 130


def table_state(metrics: Iterable[str], study: str | None = None) -> dict:
    """The runs table's state: ``study``'s runs (all with None), ``metrics`` (names as the pipeline
    writes them, ``test.ndcg@10``) as its columns, newest runs first, the run names and the
    metrics' columns wide enough to read, every other setting the UI's default."""
    columns = [f"metrics.`{mlflow_key(name)}`" for name in metrics]
    return {"searchFilter": study_filter(study) if study else "", "orderByKey": "attributes.start_time",
            "orderByAsc": False, "startTime": "ALL",
            "lifecycleFilter": "Active", "datasetsFilter": [], "modelVersionFilter": "All Runs",
            "selectedColumns": columns,
            # the UI applies a width only to the columns columnOrder lists
            "columnOrder": [RUN_NAME_COLUMN, *columns],
            "columnWidths": {RUN_NAME_COLUMN: RUN_NAME_WIDTH, **dict.fromkeys(columns, METRIC_WIDTH)},
            "runsHiddenMode": "FIRST_10_RUNS", "viewMaximized": False,
            "runListHidden": False, "isAccordionReordered": False, "useGroupedValuesInCharts": True,
            "hideEmptyCharts": True, "groupBy": None, "groupsExpanded": {},
            "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""}}


def view_tag_value(metrics: Iterable[str], now_ms: int, study: str | None = None) -> str:
    state = json.dumps(table_state(metrics, study), separators=(",", ":")).encode()
    return json.dumps({"name": f"rankstudy {study}: test metrics" if study else "rankstudy: test metrics",
                       "createdAt": now_ms, "updatedAt": now_ms,
                       "state": "deflate;" + base64.b64encode(zlib.compress(state)).decode()})


def decode_view(value: str) -> dict:
    """The table state of a saved view's tag value (the inverse of :func:`view_tag_value`)."""
    state = json.loads(value)["state"]
    kind, _, data = state.partition(";")
    if kind != "deflate":
        raise ValueError(f"saved view state of kind {kind!r}, expected 'deflate'")
    return json.loads(zlib.decompress(base64.b64decode(data)))


@store.fails_clearly_without_server
def save_runs_view(uri: str, experiment: str, metrics: Iterable[str], study: str) -> str:
    """Write (or rewrite) ``study``'s saved view of ``experiment``'s runs table: its runs, with
    ``metrics`` as columns; returns its key, for the address parameter ``viewStateShareKey``.
    An unchanged view is not written again; the one view of earlier versions is removed."""
    metrics = list(metrics)
    with store.tracking_lock(uri):
        client = store.client(uri)
        experiment_id = store.experiment_id(client, uri, experiment)
        tags = client.get_experiment(experiment_id).tags
        old = tags.get(view_tag(study))
        try:
            unchanged = old is not None and decode_view(old) == table_state(metrics, study)
        except (ValueError, KeyError, zlib.error):  # a view the UI rewrote in another form
            unchanged = False
        if not unchanged:
            client.set_experiment_tag(experiment_id, view_tag(study), view_tag_value(metrics, store.now_ms(), study))
        if LEGACY_VIEW_TAG in tags:
            client.delete_experiment_tag(experiment_id, LEGACY_VIEW_TAG)
    return view_key(study)


__all__ = ["VIEW_PREFIX", "decode_view", "save_runs_view", "study_filter", "table_state", "view_key", "view_tag",
           "view_tag_value"]
