"""Feature sets: which features a method trains on, as data.

* ``first``: the normalised first-order features alone;
* ``rho``: first-order plus every product x_i * x_j (i <= j) whose |Pearson rho| with the
  label on the training split reaches ``threshold``, materialised as extra columns;
* ``quad``: the same selection, left to the quadratic functional of linear methods (computed
  in chunks from the selected pairs, so even rho = 0.00 fits in memory on wide data).

A feature set's name is its type followed by its threshold (``rho0.10``, ``quad0.00``;
``first`` alone), so names in paths and tables say what they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

FEATURESET_TYPES = ("first", "rho", "quad")


@dataclass(frozen=True)
class FeatureSet:
    type: str  # one of FEATURESET_TYPES
    threshold: float | None = None  # the rho threshold; None for "first"

    def __post_init__(self) -> None:
        if self.type not in FEATURESET_TYPES:
            raise ValueError(f"unknown feature set type {self.type!r}; valid types: {', '.join(FEATURESET_TYPES)}")
        if (self.type == "first") != (self.threshold is None):
            raise ValueError(f"feature set type {self.type!r} {'takes no' if self.type == 'first' else 'needs a'} "
                             f"rho threshold")

    @property
    def name(self) -> str:
        return self.type if self.threshold is None else f"{self.type}{float(self.threshold):.2f}"

    @property
    def second_order(self) -> bool:
        return self.type != "first"

    @property
    def materialised(self) -> bool:
        """Whether the selected products become columns of the saved splits."""
        return self.type == "rho"

    @property
    def quadratic(self) -> bool:
        """Whether the selected products are left to the quadratic functional."""
        return self.type == "quad"

    def to_dict(self) -> dict:
        return {"name": self.name, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> "FeatureSet":
        return cls(type=data["type"], threshold=data.get("threshold"))


def featuresets_from_config(features: dict) -> list[FeatureSet]:
    """``first`` (if ``first_order``), one ``rho`` set per threshold of ``rho`` and one ``quad``
    set per threshold of ``quadratic_rho``, in that order."""
    sets = [FeatureSet("first")] if features.get("first_order", True) else []
    sets += [FeatureSet("rho", float(t)) for t in features.get("rho", [])]
    sets += [FeatureSet("quad", float(t)) for t in features.get("quadratic_rho", [])]
    return sets
