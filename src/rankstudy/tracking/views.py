"""The view of the runs table MLflow's UI opens on: the evaluation metrics as columns.

MLflow's UI chooses its runs table's columns per browser (local storage) and opens on Run Name,
Created, Dataset, Duration, Source and Models, with every metric behind "Columns". A view saved
in the UI ("Views" > "Save as new view") is an experiment tag ``mlflow.sharedViewState.<key>``
that any browser opens through the address parameter ``viewStateShareKey=<key>``; rankstudy
writes one such view (key :data:`VIEW_KEY`) the way the UI of MLflow 3.17 writes it (a JSON
record whose ``state`` is ``deflate;`` and the base64 of the zlib-compressed table state), and
``workflow/bootstrap.py ui`` prints the address that opens it. ``benchmarks/check_mlflow_ui.py``
checks in a browser that the view opens with these columns.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable

from rankstudy.tracking import store
from rankstudy.tracking.runs import mlflow_key

VIEW_KEY = "rankstudy"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
VIEW_NAME = "rankstudy: test metrics"


def table_state(metrics: Iterable[str]) -> dict:
    """The runs table's state: ``metrics`` (names as the pipeline writes them, ``test.ndcg@10``)
    as its columns, newest runs first, every other setting the UI's default."""
    return {"searchFilter": "", "orderByKey": "attributes.start_time", "orderByAsc": False, "startTime": "ALL",
            "lifecycleFilter": "Active", "datasetsFilter": [], "modelVersionFilter": "All Runs",
            "selectedColumns": [f"metrics.`{mlflow_key(name)}`" for name in metrics],
            "columnOrder": [], "columnWidths": {}, "runsHiddenMode": "FIRST_10_RUNS", "viewMaximized": False,
            "runListHidden": False, "isAccordionReordered": False, "useGroupedValuesInCharts": True,
            "hideEmptyCharts": True, "groupBy": None, "groupsExpanded": {},
            "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""}}


def view_tag_value(metrics: Iterable[str], now_ms: int) -> str:
    state = json.dumps(table_state(metrics), separators=(",", ":")).encode()
    return json.dumps({"name": VIEW_NAME, "createdAt": now_ms, "updatedAt": now_ms,
                       "state": "deflate;" + base64.b64encode(zlib.compress(state)).decode()})


def decode_view(value: str) -> dict:
    """The table state of a saved view's tag value (the inverse of :func:`view_tag_value`)."""
    state = json.loads(value)["state"]
    kind, _, data = state.partition(";")
    if kind != "deflate":
        raise ValueError(f"saved view state of kind {kind!r}, expected 'deflate'")
    return json.loads(zlib.decompress(base64.b64decode(data)))


@store.fails_clearly_without_server
def save_runs_view(uri: str, experiment: str, metrics: Iterable[str]) -> str:
    """Write (or rewrite) the saved view of ``experiment``'s runs table with ``metrics`` as its
    columns; returns its key, for the address parameter ``viewStateShareKey``. Unchanged columns
    are not written again."""
    metrics = list(metrics)
    with store.tracking_lock(uri):
        client = store.client(uri)
        experiment_id = store.experiment_id(client, uri, experiment)
        old = client.get_experiment(experiment_id).tags.get(VIEW_TAG)
        try:
            unchanged = old is not None and decode_view(old) == table_state(metrics)
        except (ValueError, KeyError, zlib.error):  # a view the UI rewrote in another form
            unchanged = False
        if not unchanged:
            client.set_experiment_tag(experiment_id, VIEW_TAG, view_tag_value(metrics, store.now_ms()))
    return VIEW_KEY


__all__ = ["VIEW_KEY", "VIEW_TAG", "decode_view", "save_runs_view", "table_state", "view_tag_value"]
