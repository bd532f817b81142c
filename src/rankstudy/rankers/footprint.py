"""Whether a method fits one node at a data set's size, known before any job: its CPU-seconds and
peak memory for one fit, predicted from fits measured on synthetic folds shaped like the large
benchmarks (``benchmarks/bench_board_cost.py --write-footprints``, kept in
``config/footprints.yaml``) as t = a n^b over the training documents n. A fit stopped at a cap
gives a floor (it took at least that, and grows at least linearly); CPU grows at least linearly
past the sizes measured, memory at least along the line through the two largest. A method the node
cannot hold (``node.memory_gb``, ``node.fit_cpu_hours``) is refused by the config check with the
prediction, the limit and the size where it stops fitting, instead of failing (or running for days)
in a job.

Only methods whose kind and parameters are those measured (the leaderboard's) have a footprint;
others are not checked. A footprint ``borrowed_from`` another shape holds that shape's fits as a
lower bound, where the method's own fit could not be measured (StructRank on Istella), and the
refusal says so. Pure arithmetic: nothing is imported or fitted here."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from rankstudy.util import yamlfile

FOOTPRINTS = "config/footprints.yaml"
BYTES_PER_VALUE = 8  # the features as float64, as the train job holds them by default (features.dtype)
VALI_SHARE = 1 / 3  # a LETOR fold's validation split beside its training split (3:1:1 parts)


@dataclass(frozen=True)
class Growth:
    """y = a n^b (b None: linear through the point), and at least ``floor_y`` (n / ``floor_n``)
    ^ ``floor_b`` (a fit stopped at a cap: a lower bound, growing linearly unless the method's
    cost is known to grow faster). With ``secant`` (two sizes measured), past the larger one at
    least the line through the law's values at both: a memory growth is a fixed part plus a part
    per document, and a power law through two such sizes bends below the line (LightGBM's 584 and
    637 MB at Istella 1/32 and 1/16 say 0.9 GB at full size as a power, 2.2 GB as a line)."""

    a: float | None
    b: float | None
    floor_n: float | None = None
    floor_y: float | None = None
    # beyond this size at least linear from the law's value there (None: the law as fitted)
    linear_beyond: float | None = None
    floor_b: float = 1.0
    secant: tuple[float, float] | None = None

    def at(self, n: float) -> float:
        law = (lambda m: 0.0 if self.a is None else self.a * m ** (1.0 if self.b is None else self.b))
        value = law(n)
        if self.secant and n > self.secant[1] > self.secant[0]:
            (n1, n2), (y1, y2) = self.secant, (law(self.secant[0]), law(self.secant[1]))
            value = max(value, y2 + (y2 - y1) / (n2 - n1) * (n - n2))
        if self.linear_beyond and n > self.linear_beyond:
            value = max(value, law(self.linear_beyond) * n / self.linear_beyond)
        if self.floor_n:
            value = max(value, self.floor_y * (n / self.floor_n) ** self.floor_b)
        return value

    @property
    def bound(self) -> bool:
        """Whether a prediction is a lower bound (a fit was stopped, or one point only)."""
        return self.floor_n is not None or self.b is None

    @classmethod
    def from_data(cls, data: dict | None, linear_beyond: float | None = None,
                  secant: tuple[float, float] | None = None) -> "Growth | None":
        if not data:
            return None
        return cls(data.get("a"), data.get("b"), data.get("floor_n"), data.get("floor_y"), linear_beyond,
                   data.get("floor_b", 1.0), secant)


@dataclass(frozen=True)
class Footprint:
    method: str
    kind: str
    params: dict
    shape: str  # the benchmark's shape it was measured on (mslr30k, yahoo, istella)
    cpu_seconds: Growth
    rss_growth_mb: Growth | None  # above the splits in memory
    measured: str  # when and with which code
    # the shape whose fits stand in for this one's, as a lower bound (its own could not be measured)
    borrowed_from: str | None = None

    def matches(self, spec: dict) -> bool:
        return spec.get("kind") == self.kind and (spec.get("params") or {}) == self.params


def largest_two(sizes: list | None) -> tuple[float, float] | None:
    """The two largest sizes measured, for a growth's :attr:`Growth.secant` (None with fewer)."""
    distinct = sorted(set(sizes or []))
    return (float(distinct[-2]), float(distinct[-1])) if len(distinct) >= 2 else None


def load_footprints(path: str | Path) -> list[Footprint]:
    path = Path(path)
    if not path.exists():
        return []
    data = yamlfile.safe_load(path.read_text()) or {}
    return [Footprint(method=name.split("@")[0], kind=entry["kind"], params=entry.get("params") or {}, shape=entry["shape"],
                      # a fit's CPU per document does not fall with more documents (every pass reads
                      # each one): two early-stopped fits may say b < 1, so at least linear past them
                      cpu_seconds=Growth.from_data(entry["cpu_seconds"], max(entry.get("sizes") or [0]) or None),
                      rss_growth_mb=Growth.from_data(entry.get("rss_growth_mb"),
                                                     secant=largest_two(entry.get("sizes"))),
                      measured=entry.get("measured", ""),
                      borrowed_from=entry.get("borrowed_from"))
            for name, entry in (data.get("methods") or {}).items()]


def features_gb(train_documents: float, n_features: int, held_bytes: float = BYTES_PER_VALUE) -> float:
    """The training and validation features a fit holds, in GB, at ``held_bytes`` a value (8 for
    float64 features, 4 for float32: :func:`held_bytes`)."""
    return train_documents * (1 + VALI_SHARE) * n_features * held_bytes / 2**30


def held_bytes(dtype: str) -> float:
    """Bytes a fit holds per feature value: the stored ``features.dtype``'s. No ranker copies float32
    features to float64 whole (a computation in float64 casts a batch or a chunk of rows:
    rankstudy.util.rowchunks), and the footprints' growth, measured with float64 features, is the
    same with float32 ones (Istella-shaped, 1/64, 2026-11-29: the methods measured in
    docs/scale-out.md)."""
    return 4 if dtype == "float32" else BYTES_PER_VALUE


def peak_gb(footprint: Footprint, train_documents: float, n_features: int,
            held: float = BYTES_PER_VALUE) -> float | None:
    """A fit's peak resident memory: the training and validation features, and the fit's growth."""
    if footprint.rss_growth_mb is None:
        return None
    return features_gb(train_documents, n_features, held) + footprint.rss_growth_mb.at(train_documents) / 1024


def largest_documents(fits, low: float = 1e3, high: float = 1e9) -> float:
    """The most training documents for which ``fits(n)`` holds (predictions grow with n)."""
    if not fits(low):
        return 0.0
    if fits(high):
        return math.inf
    for _ in range(60):  # bisection on log n
        middle = math.sqrt(low * high)
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def node_overrun(footprint: Footprint, train_documents: float, n_features: int, memory_gb: float,
                 fit_cpu_hours: float, held: float = BYTES_PER_VALUE) -> str | None:
    """What one fit is predicted to exceed at this size, in short ("predicted 7.8 h of CPU a fit
    (node.fit_cpu_hours: 2)"), None when it fits."""
    cpu = footprint.cpu_seconds.at(train_documents)
    memory = peak_gb(footprint, train_documents, n_features, held)
    over = []
    if cpu > fit_cpu_hours * 3600:
        over.append(f"{'at least ' if footprint.cpu_seconds.bound else ''}{cpu / 3600:.1f} h of CPU a fit "
                    f"(node.fit_cpu_hours: {fit_cpu_hours:g})")
    if memory is not None and memory > memory_gb:
        data = features_gb(train_documents, n_features, held)
        # a node that cannot even hold the data refuses every method: say so, or each looks too large
        alone = f", the features alone {data:.1f} GB" if data > memory_gb else ""
        over.append(f"{'at least ' if footprint.rss_growth_mb.bound else ''}{memory:.1f} GB of memory "
                    f"(node.memory_gb: {memory_gb:g}{alone})")
    return f"predicted {' and '.join(over)}" if over else None


def node_problem(footprint: Footprint, train_documents: float, n_features: int, memory_gb: float,
                 fit_cpu_hours: float, held: float = BYTES_PER_VALUE) -> str | None:
    """Why one fit of the method does not fit the node at this size (None when it does)."""
    overrun = node_overrun(footprint, train_documents, n_features, memory_gb, fit_cpu_hours, held)
    if overrun is None:
        return None

    def fits(n: float) -> bool:
        peak = peak_gb(footprint, n, n_features, held)
        return footprint.cpu_seconds.at(n) <= fit_cpu_hours * 3600 and (peak is None or peak <= memory_gb)

    stops = largest_documents(fits)
    source = (f"a lower bound from {footprint.borrowed_from}-shaped folds" if footprint.borrowed_from
              else f"measured on {footprint.shape}-shaped folds")
    return (f"{overrun} at {train_documents:,.0f} training documents ({source}, {footprint.measured}); it "
            f"fits the node up to about {stops:,.0f} training documents")
