"""Checks of a run configuration that need the package (names of losses, methods, metrics,
data sets), done once when the workflow starts so a typo fails before any job runs.

The JSON schema in workflow/schemas/ checks shapes and types; this module checks names,
and derives what the workflow needs: the feature sets and the baseline system.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from rankstudy.data import registry as datasets
from rankstudy.data import sources, splitfiles
from rankstudy.evaluation import metrics
from rankstudy.features.featuresets import FeatureSet, featuresets_from_config
from rankstudy.features.pairs import pair_correlations_bytes
from rankstudy.pipeline.configfiles import check_config_files  # noqa: F401 - part of this module's interface
from rankstudy.pipeline.errors import ConfigError
from rankstudy.pipeline.layout import path_name_problem, system_label
from rankstudy.reporting.paper_cells import paper_systems
from rankstudy.rankers.registry import ranker_class
from rankstudy.rankers.spec import SpecError, check_spec, read_spec_values


@dataclass(frozen=True)
class Settings:
    featuresets: dict[str, FeatureSet]  # by name, in config order
    baseline: str
    registry: dict
    registry_path: Path
    registry_extra: tuple[Path, ...] = ()  # the user's registry files merged over registry_path
    notes: tuple[str, ...] = ()  # what the run will leave out, said before any job (not errors)


FOLDS_FORM = ("a list of fold numbers, e.g. folds: [1, 2, 3] in a config file or --config 'folds=[1,2,3]' "
              "on the command line; fold k is one of 1..N, N the data set's folds in the registry")


def _folds_error(problem: str) -> ConfigError:
    return ConfigError(f"config key folds: {problem}; expected {FOLDS_FORM}")


def normalize_folds(folds) -> list[int]:
    """``folds`` as a list of distinct positive ints, or ConfigError naming the key and the form.

    A list's items may be numbers or digit strings (``--config 'folds=[3,4]'`` gives
    ['3', '4']). A bare number or string is refused: ``folds: 3`` reads as fold 3 to some and
    as three folds to others (the registry's ``folds`` is a count), and ``"12"`` as fold 12
    or folds 1 and 2."""
    if isinstance(folds, bool) or isinstance(folds, (int, float, str)):
        number = str(folds).strip()
        hint = f"; write a list: [{number}] for fold {number} alone" if number.isdigit() else ""
        if number.isdigit() and 1 < int(number) <= 10:
            hint += f", [{', '.join(str(k) for k in range(1, int(number) + 1))}] for the first {number} folds"
        raise _folds_error(f"got the bare value {folds!r}, which is ambiguous{hint}")
    if not isinstance(folds, list) or not folds:
        raise _folds_error(f"got {folds!r}")
    out = []
    for f in folds:
        text = str(f).strip() if isinstance(f, (int, str)) and not isinstance(f, bool) else ""
        if not text.isdigit():
            raise _folds_error(f"{f!r} in {folds!r} is not a fold number")
        if int(text) < 1:
            raise _folds_error(f"fold {int(text)} in {folds!r}: folds are numbered from 1")
        out.append(int(text))
    repeated = sorted({f for f in out if out.count(f) > 1})
    if repeated:
        raise _folds_error(f"fold {repeated[0]} is listed more than once in {folds!r} (its results would "
                           f"count twice in the fold means)")
    return out


def prepare_cli_values(config: dict, schema: dict | None = None) -> None:
    """Bring values set with ``snakemake --config`` to the schema's types, in place: ``folds``
    arrives as a list of strings (``folds=[3]``), ``datasets``, ``run_methods`` and
    ``registry_extra`` may be one bare name, and numbers inside a section arrive as strings
    (``report={n_resamples: 1000}`` gives ``'1000'``): where ``schema`` wants a number or a
    boolean, a string that reads as one becomes it. Folds that are not a list of distinct fold
    numbers fail here, naming the key and the working form (``normalize_folds``)."""
    config["folds"] = normalize_folds(config.get("folds"))
    for key in ("datasets", "run_methods", "registry_extra"):  # datasets=MQ2008 means [MQ2008]
        if isinstance(config.get(key), str):
            config[key] = [config[key]]
    if schema is not None:
        _coerce(config, schema)
    methods = config.get("methods")
    for spec in methods.values() if isinstance(methods, dict) else ():
        read_spec_values(spec)


_SCALARS = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool)}


def _coerce(value, schema: dict):
    """``value`` with the strings the schema wants as numbers or booleans read as YAML."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                value[key] = _coerce(item, sub)
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(item, schema["items"]) for item in value]
    types = schema.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    wanted = [_SCALARS[t] for t in types if t in _SCALARS]
    if isinstance(value, str) and wanted:
        try:
            read = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if any(check(read) for check in wanted):
            return read
    return value


def schema_problem(config: dict, schema: dict) -> str | None:
    """The config's first departure from the schema as one line naming the key (Snakemake's own
    message is followed by the whole schema, hundreds of lines)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(config))
    if error is None:
        return None
    key = ".".join(str(part) for part in error.absolute_path)
    return f"config key {key or '(top level)'}: {error.message}"


def own_methods(config: dict, given: dict) -> None:
    """A study owns its methods, in place: when the ``--configfile`` files and ``--config`` values
    (``given``, as Snakemake merged them) define ``methods``, the run trains those alone, as
    given; ``config/config.yaml``'s methods are the default study's, used only when nothing else
    defines any. Snakemake's deep merge would otherwise add the six default methods to every study
    (and merge a study's ``ranknet`` into the default one). The default ``report.baseline`` goes
    with them unless ``given`` sets one: the first method run is then the baseline."""
    methods = given.get("methods")
    if not isinstance(methods, dict) or not methods:
        return
    config["methods"] = copy.deepcopy(dict(methods))
    if "baseline" not in (given.get("report") or {}):
        config.get("report", {}).pop("baseline", None)


def apply_defaults(config: dict) -> None:
    """Defaults that depend on other keys, in place (the schema's own defaults are set when
    Snakemake validates the config): report.metrics defaults to evaluation.metrics as written;
    then evaluation.extra_metrics (checked here, so a bad one is named under its own key) join
    evaluation.metrics, which from here on is every metric the evaluate job computes."""
    evaluation = config["evaluation"]
    config["report"].setdefault("metrics", list(evaluation["metrics"]))
    for name in evaluation["extra_metrics"]:
        check_metric("evaluation.extra_metrics", name)
    evaluation["metrics"] = list(dict.fromkeys([*evaluation["metrics"], *evaluation["extra_metrics"]]))


def evaluate_params(evaluation: dict, saved: dict | None = None) -> dict:
    """The evaluate job's params (Snakemake reruns the job when they change): the evaluation
    section as apply_defaults left it, with ``extra_metrics`` only when there are some, so a
    config without them keeps the params it had before the key existed.

    ``saved``: the evaluation a fold's outputs were made with (its config.resolved.json). When
    they hold every metric asked for, differ only by extra metrics since dropped and agree on
    the rest, ``saved`` is returned: the params look unchanged, and dropping an extra metric
    re-evaluates nothing (the fold keeps its columns, also when it is evaluated again)."""
    extras = list(evaluation["extra_metrics"])
    wanted = {k: v for k, v in evaluation.items() if k != "extra_metrics"}
    params = {**wanted, **({"extra_metrics": extras} if extras else {})}
    if not saved or not all(k in saved for k in wanted):
        return params
    same_settings = all(saved[k] == v for k, v in wanted.items() if k != "metrics")
    held, asked = set(saved["metrics"]), set(wanted["metrics"])
    only_dropped_extras = asked <= held and held - asked <= set(saved.get("extra_metrics") or [])
    if not (same_settings and only_dropped_extras):
        return params
    kept_extras = list(saved.get("extra_metrics") or [])
    return {**{k: saved[k] for k in wanted}, **({"extra_metrics": kept_extras} if kept_extras else {})}


def run_methods(config: dict) -> list[str]:
    """The methods this run trains: `run_methods` if given, else every entry of `methods`."""
    return list(config.get("run_methods") or config["methods"])


def resolve_path(path: str | Path, basedir: Path) -> Path:
    """Relative paths are taken from the working directory, else from the workflow's folder."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    return basedir / path


def check_method(name: str, spec: dict, seed: int = 0, rel_threshold: float = 1.0) -> None:
    """ConfigError naming the key (``methods.NAME.params.l2``) of a method spec's first problem
    (:func:`rankstudy.rankers.spec.check_spec`, the train job's own rules)."""
    try:
        check_spec(spec, seed, rel_threshold)
    except SpecError as exc:
        key = f"methods.{name}.{exc.key}" if exc.key else f"methods.{name}"
        raise ConfigError(f"config key {key}: {exc.problem}") from None


def check_metric(key: str, name: str) -> None:
    try:
        metrics.parse_metric(name)
    except ValueError as exc:
        raise ConfigError(f"config key {key}: {exc}") from None


def registry_files(config: dict, workdir: Path) -> tuple[Path, list[Path]]:
    """The shipped registry (``registry``) and the user's own files merged over it
    (``registry_extra``: one path or a list), resolved as ``resolve_path`` does."""
    registry_path = resolve_path(config.get("registry", "config/datasets.yaml"), workdir)
    extra = config.get("registry_extra") or []
    if isinstance(extra, str):
        extra = [extra]
    if not isinstance(extra, list) or not all(isinstance(e, str) and e for e in extra):
        raise ConfigError(f"config key registry_extra: expected a registry file (or a list of them), got {extra!r}")
    return registry_path, [resolve_path(e, workdir) for e in extra]


def check_config(config: dict, workdir: Path) -> Settings:
    registry_path, extra = registry_files(config, workdir)
    registry = datasets.load_registries([registry_path, *extra])
    config_folds = normalize_folds(config["folds"])
    check_path_names(config)
    for name in config["datasets"]:
        if name not in registry:
            raise ConfigError(f"config key datasets: unknown data set {name!r}; "
                              f"valid: {', '.join(sorted(registry))} "
                              f"(see {', '.join(str(p) for p in [registry_path, *extra])})")
        n_folds = registry[name].get("folds", 5)
        bad = [f for f in config_folds if f > n_folds]
        if bad:
            raise ConfigError(f"config key folds: {bad} out of range for {name!r}, which has {n_folds} fold(s); "
                              f"expected a list of fold numbers within 1..{n_folds}, e.g. "
                              f"folds: {list(range(1, n_folds + 1))}")
    for name, spec in config["methods"].items():
        check_method(name, spec, config.get("seed", 0), config["evaluation"].get("rel_threshold", 1))
    if config.get("run_methods") == []:
        raise ConfigError("config key run_methods: empty; name the methods to run (e.g. run_methods=[ranknet]), "
                          "or leave the key out to run every method defined under methods")
    for name in config.get("run_methods") or []:
        if name not in config["methods"]:
            raise ConfigError(f"config key run_methods: {name!r} is not defined under methods "
                              f"({', '.join(config['methods'])})")
    evaluation = config["evaluation"]
    for m in evaluation["metrics"]:
        check_metric("evaluation.metrics", m)
    check_metric("evaluation.selection_metric", evaluation.get("selection_metric", "ndcg@10"))
    for m in config["report"].get("metrics", []):
        check_metric("report.metrics", m)
    check_reported_metrics_are_computed(config)
    check_leaderboard(config["report"])
    sets = featuresets_from_config(config["features"])
    names = [f.name for f in sets]
    if not sets:
        raise ConfigError("config key features: no feature set (first_order is false and rho is empty)")
    if len(set(names)) != len(names):
        raise ConfigError(f"config key features.rho: thresholds give duplicate feature sets {names}")
    methods = run_methods(config)
    for featureset in sets:
        for name in methods:
            kind = config["methods"][name]["kind"]
            if featureset.type not in ranker_class(kind).featureset_types:
                raise ConfigError(f"config key features: feature set {featureset.name} (type {featureset.type!r}) "
                                  f"cannot be used by method {name!r} of kind {kind!r}, which takes feature sets "
                                  f"of type {', '.join(ranker_class(kind).featureset_types)}"
                                  + ("; use features.rho for it" if featureset.type == "quad" else ""))
    check_data_kinds(config, registry, methods, names)
    if any(f.second_order for f in sets):
        check_rho_memory(config, registry)
    check_local_files(config, registry, config_folds)
    baseline = check_baseline(config["report"].get("baseline", methods[0]), methods, names)
    systems = {system_label(m, f) for m in methods for f in names}
    empty = [s for s in paper_systems(config.get("paper") or {}) if s not in systems]
    notes = tuple([f"paper table: rows of {', '.join(empty)} will show 'not run' (not among the methods or "
                   f"feature sets this run trains)"] if empty else [])
    return Settings(featuresets={f.name: f for f in sets}, baseline=baseline, registry=registry,
                    registry_path=registry_path, registry_extra=tuple(extra), notes=notes)


def check_baseline(baseline: str, methods: list[str], featuresets: list[str]) -> str:
    """The baseline system (``method [featureset]``) of the tables: a method run (its first
    feature set) or a system named with its feature set, both among those this run trains."""
    fix = (f"set report.baseline to one of them (--config 'report={{baseline: {methods[0]}}}') or leave it out "
           f"to compare against the first method run")
    method, _, featureset = baseline.partition(" [")
    if method not in methods:
        raise ConfigError(f"config key report.baseline: {method!r} is not among the methods run "
                          f"({', '.join(methods)}); {fix}")
    if not featureset:
        return system_label(baseline, featuresets[0])
    if featureset.rstrip("]") not in featuresets:
        raise ConfigError(f"config key report.baseline: feature set {featureset.rstrip(']')!r} of {baseline!r} is not "
                          f"among the feature sets this run builds ({', '.join(featuresets)})")
    return baseline


def check_path_names(config: dict) -> None:
    """Every name that becomes a folder or file under results/ (rankstudy.pipeline.layout):
    the study, the data sets, the methods."""
    named = [("study", config.get("study")), *(("datasets", d) for d in config["datasets"]),
             *(("methods", m) for m in config["methods"])]
    for key, name in named:
        if problem := path_name_problem(name):
            raise ConfigError(f"config key {key}: {problem}")


def check_leaderboard(report: dict) -> None:
    """report.leaderboard ranks the tables' systems by one of report.metrics and groups them by
    the all-pairs test: both must be there, or its job would fail at the end of a whole run."""
    board = report.get("leaderboard")
    if not board:
        return
    metric = board["metric"]
    if metric not in report.get("metrics", []):
        raise ConfigError(f"config key report.leaderboard.metric: {metric!r} is not among report.metrics "
                          f"({', '.join(report.get('metrics', []))}); the leaderboard ranks by a metric the tables report")
    if report.get("compare", "baseline") != "all_pairs":
        raise ConfigError("config key report.leaderboard: needs report.compare: all_pairs (its top group is the "
                          "systems the all-pairs test cannot tell from the best); set --config "
                          "'report={compare: all_pairs}' or drop report.leaderboard")


def check_local_files(config: dict, registry: dict, folds: list[int]) -> None:
    """Every data set's folder and files (those there now) resolve inside data_root, and one that
    is never downloaded (``local``, ``manual``) must have its files there before any job runs:
    fail naming the folder looked in and what to do."""
    data_root = Path(config.get("data_root", "data"))
    for name in config["datasets"]:
        entry = registry[name]
        try:  # every file inside data_root, for every source (rankstudy.data.splitfiles.inside_data)
            sources.source_of(entry).check_paths(name, entry, data_root, folds)
        except splitfiles.DataPathError as exc:
            raise ConfigError(f"config key datasets: {exc}") from None
        if not sources.source_of(entry).present_before_run:
            continue
        missing = splitfiles.missing_splits(name, entry, data_root, folds)
        if missing:
            folder = splitfiles.dataset_dir(name, entry, data_root)
            fold, split = missing[0]
            raise ConfigError(
                f"config key data_root: data set {name!r} has no {split} file for fold {fold} in "
                f"{folder.resolve()} (layout {entry['layout']!r}; {len(missing)} file(s) missing); set data_root to the "
                f"folder that holds {entry.get('folder') or name}/, or put the files there"
                + (f". {' '.join(str(entry['instructions']).split())}".replace("{data_root}", str(data_root))
                   if entry.get("instructions") else ""))


# the evaluate job computes these whatever evaluation.metrics says (the NDCG@k and P@k plots)
ALWAYS_COMPUTED = [f"{m}@{k}" for m in ("ndcg", "p") for k in range(1, 11)]


def check_reported_metrics_are_computed(config: dict) -> None:
    """A metric a report reads (report.metrics, report.sweep.metrics, the paper table's) must be
    one the evaluate job computes, or the last job of a whole run fails on it."""
    computed = set(config["evaluation"]["metrics"]) | set(ALWAYS_COMPUTED)
    wanted = {"report.metrics": config["report"].get("metrics", []),
              "report.sweep.metrics": (config["report"].get("sweep") or {}).get("metrics", [])}
    paper = config.get("paper") or {}
    if paper.get("columns"):
        wanted["paper.metric"] = [paper.get("metric", "{column}").format(row=row, column=column)
                                  for row in paper.get("rows", {}).values() for column in paper["columns"].values()]
    for key, names in wanted.items():
        missing = sorted({m for m in names if m not in computed and m != "n_features"})
        if missing:
            raise ConfigError(f"config key {key}: {', '.join(missing)} not computed by the evaluate job; add "
                              f"{'it' if len(missing) == 1 else 'them'} to evaluation.metrics or evaluation.extra_metrics (computed: "
                              f"{', '.join(config['evaluation']['metrics'])}, and ndcg@1..10, p@1..10)")


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_rho_memory(config: dict, registry: dict) -> None:
    """Second-order feature sets need the rho of every feature pair: m^2 memory. Where a data
    set's width is known before any job (the registry's n_features, a generator's setting),
    refuse a width whose pair correlations would not fit in this machine's memory."""
    chunk_rows = config["features"].get("chunk_rows", 65536)
    for name in config["datasets"]:
        entry = registry[name]
        m = sources.source_of(entry).width(entry, config)
        if not m:
            continue
        need = pair_correlations_bytes(m, chunk_rows)
        if need > machine_memory_bytes():
            raise ConfigError(f"config key features.rho: data set {name!r} has {m} features, whose "
                              f"{m * (m + 1) // 2:,} pair correlations need about {need / 2**30:,.0f} GiB, more than "
                              f"this machine's {machine_memory_bytes() / 2**30:,.0f} GiB; set features.rho: [] (and "
                              f"quadratic_rho: []) for it")


def check_data_kinds(config: dict, registry: dict, methods: list[str], featuresets: list[str]) -> None:
    """Every method must rank the kind of data (rankstudy.data.kinds) of every data set."""
    kinds = {d: sources.data_kind(registry[d]) for d in config["datasets"]}
    for name in methods:
        ranker_kind = config["methods"][name]["kind"]
        wanted = ranker_class(ranker_kind).data_kind
        wrong = [d for d, k in kinds.items() if k != wanted]
        if wrong:
            raise ConfigError(f"config key run_methods: {name!r} (kind {ranker_kind!r}) ranks {wanted!r} data, but "
                              f"data set(s) {wrong} hold {kinds[wrong[0]]!r} data; run them in separate studies "
                              f"(question-answer data takes methods of kind 'separate')")
    qa = [d for d, k in kinds.items() if k == "qa"]
    if qa and featuresets != ["first"]:
        raise ConfigError(f"config key features: question-answer data sets {qa} take no second-order "
                          f"feature sets; set rho and quadratic_rho to [] (got {featuresets})")
