"""Checks of a run configuration that need the package (names of losses, methods, metrics,
data sets), done once when the workflow starts so a typo fails before any job runs.

The JSON schema in workflow/schemas/ checks shapes and types; this module checks names,
and derives what the workflow needs: the feature sets and the baseline system.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from rankstudy.data import registry as datasets
from rankstudy.data import sources, splitfiles
from rankstudy.data.rankdata import REL_THRESHOLD
from rankstudy.evaluation import metrics
from rankstudy.features.featuresets import FeatureSet, featuresets_from_config
from rankstudy.features.pairs import pair_correlations_bytes
from rankstudy.pipeline.configfiles import check_cli_values, read_config_files, yaml12_scalar, yaml_values
from rankstudy.pipeline.errors import ConfigError
from rankstudy.pipeline.layout import path_name_problem, system_label
from rankstudy.reporting.paper_cells import paper_systems
from rankstudy.rankers.registry import ranker_class
from rankstudy.pipeline.tuned import tuned_from, with_tuned_methods
from rankstudy.rankers.footprint import FOOTPRINTS, held_bytes, load_footprints, node_overrun, node_problem
from rankstudy.selection.spec import SpecError, canonical_spec, check_names_and_values, check_spec, read_spec_values
from rankstudy.selection.settings import TuningError, tune_schema
from rankstudy.selection.tuning import check_tuned_spec
from rankstudy.util import yamlfile


@dataclass(frozen=True)
class Settings:
    featuresets: dict[str, FeatureSet]  # by name, in config order
    baseline: str
    registry: dict
    registry_path: Path
    registry_extra: tuple[Path, ...] = ()  # the user's registry files merged over registry_path
    notes: tuple[str, ...] = ()  # what the run will leave out, said before any job (not errors)
    config: dict | None = None  # the resolved config (resolve_config), what rules and jobs read


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


def read_cli_values(config: dict, schema: dict | None = None) -> dict:
    """``config`` with values set through ``snakemake --config`` brought to the schema's types (a
    new mapping; ``config`` is left as it is): ``folds`` arrives as a list of strings
    (``folds=[3]``), ``datasets``, ``run_methods`` and ``registry_extra`` may be one bare name, and
    numbers inside a section arrive as strings (``report={n_resamples: 1000}`` gives ``'1000'``):
    where ``schema`` wants a number or a boolean, a string that reads as one becomes it. Folds that
    are not a list of distinct fold numbers fail here, naming the key and the working form
    (``normalize_folds``)."""
    out = {**config, "folds": normalize_folds(config.get("folds"))}
    for key in ("datasets", "run_methods", "registry_extra"):  # datasets=MQ2008 means [MQ2008]
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    if schema is not None:
        out = _coerce(out, schema)
    methods, shared = out.get("methods"), out.get("method_defaults")
    if isinstance(methods, dict):
        out["methods"] = {name: read_spec_values(spec) for name, spec in methods.items()}
    if isinstance(shared, dict):
        out["method_defaults"] = {kind: _read_block(kind, block) for kind, block in shared.items()}
    return out


def _read_block(kind: str, block):
    """A ``method_defaults`` block's values read as its kind's parameters want them."""
    if not isinstance(block, dict):
        return block  # the schema names it
    read = read_spec_values({**block, "kind": kind})
    return {**block, **{section: read[section] for section in ("params", "grid") if section in read}}


_SCALARS = {"integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool)}


def _coerce(value, schema: dict):
    """``value`` with the strings the schema wants as numbers, booleans or null read as YAML 1.2
    does (``1.0e300`` a number, ``null`` a null: :func:`yaml12_scalar`), as new mappings and lists."""
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        subs = {key: properties.get(key, extra if isinstance(extra, dict) else None) for key in value}
        return {key: item if subs[key] is None else _coerce(item, subs[key]) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(item, schema["items"]) for item in value]
    types = schema.get("type")
    types = [types] if isinstance(types, str) else (types or [])
    wanted = [_SCALARS[t] for t in types if t in _SCALARS]
    if isinstance(value, str) and wanted:
        read = yaml12_scalar(value)
        if any(check(read) for check in wanted) or (read is None and "null" in types):
            return read
    return value


def load_schema(basedir: Path) -> dict:
    """The config schema: workflow/schemas/config.schema.yaml, with the tune block's declared
    settings (:data:`rankstudy.selection.settings.TUNE_PARAMS`) at the study's ``tune`` (with their
    defaults) and at a method's own ``tune``, so each setting's default and bounds live in one place."""
    schema = yamlfile.safe_load((basedir / SCHEMA).read_text())
    schema["properties"]["tune"]["properties"].update(tune_schema())
    method_tune = schema["properties"]["methods"]["additionalProperties"]["properties"]["tune"]["oneOf"][1]
    method_tune["properties"].update(tune_schema(method=True))
    return schema


def schema_problem(config: dict, schema: dict) -> str | None:
    """The config's first departure from the schema as one line naming the key (a validator's
    own message is followed by the whole schema, hundreds of lines)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    return None if error is None else _schema_line(error)


def _schema_line(error) -> str:
    key = ".".join(str(part) for part in error.absolute_path)
    return f"config key {key or '(top level)'}: {error.message}"


def with_schema_defaults(config: dict, schema: dict) -> dict:
    """``config`` checked against ``schema`` in one pass that also sets the schema's defaults where
    a mapping leaves the key out, as Snakemake's ``validate(set_default=True)`` does (which reads a
    schema file only): a new mapping, or ConfigError naming the key of the first departure."""
    from jsonschema import Draft202012Validator, exceptions, validators

    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for name, entry in properties.items():
                if "default" in entry:
                    instance.setdefault(name, copy.deepcopy(entry["default"]))
        yield from check_properties(validator, properties, instance, subschema)

    out = copy.deepcopy(config)  # the defaults go into this copy only
    error = exceptions.best_match(validators.extend(Draft202012Validator, {"properties": set_defaults})(schema)
                                  .iter_errors(out))
    if error is not None:
        raise ConfigError(_schema_line(error))
    return out


def own_methods(config: dict, given: dict, cli: dict | None = None, defaults: dict | None = None) -> dict:
    """``config`` with the run's methods (a new mapping; ``config`` is left as it is). A study owns
    its methods: when the ``--configfile`` files (``given``) define ``methods``, the run trains
    those, as given; ``defaults`` (``config/config.yaml``'s, the default study's; None: the config's
    methods as they are) are used when no file defines any.
    Snakemake's deep merge would otherwise add the six default methods to every study (and merge a
    study's ``ranknet`` into the default one).

    The ``--config`` values (``cli``) then act on the study's methods as Snakemake's merge does: an
    entry without ``kind`` changes the study's method of its name (its values merged in), one with
    ``kind`` replaces that method whole, or adds one. A ``--config`` naming only new methods defines
    the run's methods, as a study file does. When the study's methods are replaced so, the default
    ``report.baseline`` goes with them unless the files or ``--config`` set one: the first method
    run is then the baseline."""
    study = given.get("methods")
    owned = isinstance(study, dict) and bool(study)
    changes = (cli or {}).get("methods")
    changes = changes if isinstance(changes, dict) else {}
    if ("methods" in given and not isinstance(study, dict)) or not isinstance(config.get("methods"), dict):
        return config  # not a mapping: the schema names it
    if not owned and not changes and defaults is None:
        return config
    methods = copy.deepcopy(dict(study if owned else config["methods"] if defaults is None else defaults))
    study_names = list(methods)
    if changes and not any(name in methods for name in changes):
        methods, owned = {}, True  # only new methods: they are the run's
    for name, entry in changes.items():
        if isinstance(entry, dict) and "kind" not in entry:
            if name not in methods:
                raise ConfigError(f"config key methods.{name}: no kind, and the study has no method {name!r} to "
                                  f"change (its methods: {', '.join(study_names) or 'none'}); give kind: KIND to "
                                  f"add one")
            methods[name] = merged(methods[name], entry)
        else:
            methods[name] = copy.deepcopy(entry)
    out = {**config, "methods": methods}
    named = [section.get("baseline") for section in (given.get("report"), (cli or {}).get("report"))
             if isinstance(section, dict)]
    if owned and not any(named) and isinstance(config.get("report"), dict):
        out["report"] = {key: value for key, value in config["report"].items() if key != "baseline"}
    return out


def merged(base: dict, over: dict) -> dict:
    """``over`` merged over ``base`` as Snakemake merges config files, mappings key by key: a new
    mapping, sharing no mapping or list with either."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = merged(out[key], value) if both else copy.deepcopy(value)
    return out


def with_method_defaults(config: dict) -> dict:
    """``config`` with ``method_defaults`` (kind -> {params, grid, threads}), a family's shared
    settings said once, merged under each method of that kind (a new mapping). A parameter the
    method sets itself, in ``params`` or ``grid``, keeps the method's value (a method's
    ``loss_params`` replaces the default's whole: options belong to one loss); so does its
    ``threads``. An unknown kind, name or value is named under ``method_defaults``; a combination
    is checked on each method, as before."""
    defaults = config.get("method_defaults") or {}
    for kind, block in defaults.items():
        try:
            check_names_and_values({"kind": kind, **block})
        except SpecError as exc:
            raise ConfigError(f"config key method_defaults.{kind}{'.' + exc.key if exc.key != 'kind' else ''}: "
                              f"{exc.problem}") from None
    return {**config, "methods": {name: _with_family_defaults(spec, defaults)
                                  for name, spec in config["methods"].items()}}


def _with_family_defaults(spec: dict, defaults: dict) -> dict:
    block = defaults.get(spec.get("kind")) if isinstance(spec, dict) else None
    if not block:
        return spec
    own = {*(spec.get("params") or {}), *(spec.get("grid") or {})}
    out = dict(spec)
    for section in ("params", "grid"):
        shared = {k: copy.deepcopy(v) for k, v in (block.get(section) or {}).items() if k not in own}
        if shared:
            out[section] = {**shared, **(spec.get(section) or {})}
    if "threads" in block:
        out.setdefault("threads", block["threads"])
    return out


def baseline_fallback(config: dict, named: bool) -> tuple[dict, str | None]:
    """When ``run_methods`` leaves out the study's ``report.baseline`` and the user did not name it
    on the command line (``named``), the tables compare against the first method run: ``config``
    without the baseline, and the line that says so; else ``config`` and None. A baseline named on
    the command line stays, for check_baseline to refuse."""
    baseline = config["report"].get("baseline")
    methods = run_methods(config)
    if named or not baseline or not methods or baseline.partition(" [")[0] in methods:
        return config, None
    report = {key: value for key, value in config["report"].items() if key != "baseline"}
    return {**config, "report": report}, (
        f"report.baseline {baseline!r} is not among the methods run; the tables compare against "
        f"{methods[0]!r}, the first method run (set report.baseline to choose another)")


SCHEMA = "workflow/schemas/config.schema.yaml"
DEFAULT_CONFIG = "config/config.yaml"


def load_config(workflow) -> Settings:
    """The run's config, from the files and the command line to what the jobs read, in one call
    (the Snakefile's): every config file is read once, strictly (file and line of an error), and
    every ``--config`` value checked as YAML, before Snakemake reads ``config/config.yaml`` under
    the study's files and ``--config`` values (as ``configfile:`` would); then
    :func:`resolve_config`, whose value replaces Snakemake's ``config`` in one step. ``workflow``
    is Snakemake's. Every problem is a ConfigError, one line naming the key."""
    basedir, given = Path(workflow.basedir), workflow.config_settings
    default_file = Path(DEFAULT_CONFIG)  # Snakemake's configfile reads it from the working directory
    shipped, *studies = read_config_files([basedir / DEFAULT_CONFIG, *given.configfiles])
    check_cli_values(given.config)
    workflow.configfile(DEFAULT_CONFIG)
    files: dict = {}
    for values in studies:
        files = merged(files, values)
    defaults = None
    if not given.replace_workflow_config and default_file.is_file():
        same = default_file.resolve() == (basedir / DEFAULT_CONFIG).resolve()
        defaults = ((shipped if same else read_config_files([default_file])[0]).get("methods") or {})
    try:
        settings = resolve_config(workflow.config, basedir, files, dict(given.config), defaults)
    except datasets.RegistryError as exc:  # a registry file's mistake, named with its file and key
        raise ConfigError(str(exc)) from None
    workflow.config.clear()
    workflow.config.update(settings.config)
    return settings


def resolve_config(config: dict, basedir: Path, files: dict | None = None, cli: dict | None = None,
                   defaults: dict | None = None) -> Settings:
    """What the workflow runs, from ``config`` as Snakemake merged config/config.yaml, the
    ``--configfile`` files and the ``--config`` values (left as it is): ``Settings.config``, the
    resolved config the rules and jobs read, and what the workflow derives from it. Each step
    gives a new value: the run's methods (:func:`own_methods`; ``files``: the files' values
    merged, ``cli``: the ``--config`` values as Snakemake read them, ``defaults``:
    config/config.yaml's methods); ``--config`` values brought to their types; the schema, once
    (one line naming the key), with its defaults; ``method_defaults`` merged; defaults that
    depend on other keys, and one spelling per method; the baseline when ``run_methods`` leaves
    it out; then the names and values are checked (:func:`check_config`)."""
    files, cli = files or {}, cli or {}
    # Snakemake reads a --config value's scalars as strings: hidden: [64, 32] as ['64', '32']
    # (the schema cannot type what its free mappings hold: parameters, a pruner's settings, a space)
    typed = {key: yaml_values(cli[key]) for key in ("methods", "method_defaults", "tune")
             if isinstance(cli.get(key), dict)}
    resolved = own_methods(config, files, {**cli, **typed}, defaults)
    for key in ("method_defaults", "tune"):
        if key in typed and isinstance(resolved.get(key), dict):
            resolved = {**resolved, key: merged(resolved[key], typed[key])}
    schema = load_schema(basedir)
    resolved = with_schema_defaults(read_cli_values(resolved, schema), schema)
    resolved = with_derived_defaults(with_method_defaults(resolved))
    report = cli.get("report")
    resolved, note = baseline_fallback(resolved, isinstance(report, dict) and "baseline" in report)
    settings = check_config(resolved, basedir)
    return dataclasses.replace(settings, config=resolved, notes=(note, *settings.notes) if note else settings.notes)


def with_derived_defaults(config: dict) -> dict:
    """``config`` with the defaults that depend on other keys (the schema's own are set by
    :func:`with_schema_defaults`), a new mapping: report.metrics defaults to evaluation.metrics as
    written; evaluation.extra_metrics (checked here, so a bad one is named under its own key) join
    evaluation.metrics, which from here on is every metric the evaluate job computes;
    ``evaluation.rel_threshold`` written ``1.0`` is the ``1`` of config/config.yaml (the clean,
    train and evaluate jobs take it as a param, and Snakemake compares params as text); a tune
    block's tuned methods (and untuned twins) join the methods; and every method has one spelling
    (the train job's params are compared as text)."""
    evaluation = dict(config["evaluation"])
    if isinstance(evaluation.get("rel_threshold"), float) and evaluation["rel_threshold"].is_integer():
        evaluation["rel_threshold"] = int(evaluation["rel_threshold"])
    report = dict(config["report"])
    report.setdefault("metrics", list(evaluation["metrics"]))
    for name in evaluation["extra_metrics"]:
        check_metric("evaluation.extra_metrics", name)
    evaluation["metrics"] = list(dict.fromkeys([*evaluation["metrics"], *evaluation["extra_metrics"]]))
    tuned = with_tuned_methods({**config, "evaluation": evaluation, "report": report})
    return {**tuned, "methods": {name: canonical_spec(spec) for name, spec in tuned["methods"].items()}}


EVALUATION_ORDER = ("metrics", "selection_metric", "rel_threshold", "no_relevant")


def evaluate_params(evaluation: dict, saved: dict | None = None) -> dict:
    """The evaluate job's params (Snakemake reruns the job when they change): the evaluation
    section as with_derived_defaults left it, with ``extra_metrics`` only when there are some, so a
    config without them keeps the params it had before the key existed.

    ``saved``: the evaluation a fold's outputs were made with (its config.resolved.json). When
    they hold every metric asked for, differ only by extra metrics since dropped and agree on
    the rest, ``saved`` is returned: the params look unchanged, and dropping an extra metric
    re-evaluates nothing (the fold keeps its columns, also when it is evaluated again).

    The keys come in one order (config/config.yaml's), whatever order the config files gave
    them in: Snakemake compares params as text."""
    extras = list(evaluation["extra_metrics"])
    keys = [*(k for k in EVALUATION_ORDER if k in evaluation), *(k for k in evaluation if k not in EVALUATION_ORDER)]
    wanted = {k: evaluation[k] for k in keys if k != "extra_metrics"}
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


def check_method(name: str, spec: dict, seed: int = 0, rel_threshold: float = REL_THRESHOLD,
                 written_under: str | None = None) -> None:
    """ConfigError naming the key (``methods.NAME.params.l2``) of a method spec's first problem
    (:func:`rankstudy.selection.spec.check_spec`, the train job's own rules). ``written_under``:
    the method whose ``tune`` mapping a ``NAME-tuned`` twin was made from, where the user wrote
    its tune settings, and which a problem in them is named under."""
    try:
        check_spec(spec, seed, rel_threshold)
        if spec.get("tune"):
            check_tuned_spec(spec)
    except (SpecError, TuningError) as exc:
        owner = written_under if written_under and (exc.key or "").partition(".")[0] == "tune" else name
        key = f"methods.{owner}.{exc.key}" if exc.key else f"methods.{name}"
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
        check_method(name, spec, config.get("seed", 0), config["evaluation"].get("rel_threshold", 1),
                     tuned_from(name, config["methods"]))
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
    check_metric("evaluation.selection_metric", evaluation.get("selection_metric", metrics.SELECTION_METRIC))
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
    node_notes = check_node_fits(config, registry, methods, workdir)
    check_local_files(config, registry, config_folds)
    baseline = check_baseline(config["report"].get("baseline", methods[0]), methods, names)
    systems = {system_label(m, f) for m in methods for f in names}
    empty = [s for s in paper_systems(config.get("paper") or {}) if s not in systems]
    notes = tuple([f"paper table: rows of {', '.join(empty)} will show 'not run' (not among the methods or "
                   f"feature sets this run trains)"] if empty else []) + node_notes
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
    chunk_rows = config["features"]["chunk_rows"]  # the schema sets its default
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


def check_node_fits(config: dict, registry: dict, methods: list[str], workdir: Path) -> tuple[str, ...]:
    """ConfigError naming the first method run that one node cannot hold at a data set's size (the
    registry's train_documents), from its measured footprint (:mod:`rankstudy.rankers.footprint`),
    with the prediction, the limit and the size where it stops fitting; the features count at the
    bytes ``features.dtype`` stores them in (and a float64 copy where the ranker makes one). Returns
    a note for each data set with methods run that have no footprint of its shape (not checked:
    said, not silent)."""
    sized = [d for d in config["datasets"] if registry[d].get("train_documents")]
    if not sized:
        return ()
    notes = []
    node = config.get("node") or {}
    memory_gb, cpu_hours = node.get("memory_gb", 16), node.get("fit_cpu_hours", 2)
    dtype = (config.get("features") or {}).get("dtype", "float64")
    prints = load_footprints(resolve_path(FOOTPRINTS, workdir))
    for dataset in sized:
        entry = registry[dataset]
        shape = entry.get("footprint_shape", "mslr30k")
        problems, unchecked = {}, []  # method -> (its full problem, its overrun in short); no footprint
        for name in methods:
            spec = config["methods"][name]
            found = next((f for f in prints if f.shape == shape and f.matches(spec)), None)
            if found is None:
                unchecked.append(name)
                continue
            size = (found, entry["train_documents"], entry.get("n_features") or 136, memory_gb, cpu_hours,
                    held_bytes(dtype))
            problem = node_problem(*size)
            if problem:
                problems[name] = (problem, node_overrun(*size))
        if problems:
            (name, (problem, _)), *others = problems.items()
            # the others in short, so that one run names every method to leave out
            also = "".join(f"; also too large: methods.{other} ({short})" for other, (_, short) in others)
            raise ConfigError(f"config key methods.{name}: does not fit one node on {dataset}: {problem}; leave "
                              f"it out (run_methods) or raise the node's limit (--config 'node={{...}}'){also}")
        if unchecked:
            notes.append(f"node check on {dataset}: {', '.join(unchecked)} not checked (no footprint measured on "
                         f"{shape}-shaped folds with these parameters in {FOOTPRINTS}): "
                         f"{'they' if len(unchecked) > 1 else 'it'} may not fit one node")
    return tuple(notes)


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
