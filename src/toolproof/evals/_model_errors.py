"""When a model's errors make a score meaningless: the tally, the threshold, and the error that stops a run.

A run where the endpoint refused every request scores 0%, which reads like a result; it is not one. Every
eval counts the requests its model could not answer; more than `max_model_errors` of them (a share of the
run's requests) stops the run with `TooManyModelErrors`, and once a run is over that budget the remaining
requests are not sent at all (an unreachable model fails in seconds, not after every case). A report that
holds any model error is marked partial.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ._models import ModelError

#: The share of a run's model requests that may fail before the run is an error (the CLI's default too).
DEFAULT_MAX_MODEL_ERRORS: Final = 0.05

#: The reason recorded for requests left unsent once a run is over its error budget.
NOT_ASKED: Final = "not asked: the model had already failed more often than allowed"


class NotAsked(ModelError):
    """A request left unsent because the run had already used up its model-error budget."""

    def __init__(self) -> None:
        super().__init__(NOT_ASKED)


def allowed_errors(total: int, max_rate: float) -> int:
    """How many of `total` requests may fail at `max_rate` (a share between 0 and 1)."""
    return math.floor(total * max_rate + 1e-9)


@dataclass(frozen=True, slots=True)
class ModelErrorTally:
    """Requests without an answer out of all requests, and the distinct reasons, most frequent first."""

    errors: int
    total: int
    reasons: tuple[tuple[str, int], ...] = ()
    not_asked: int = 0

    @classmethod
    def of(cls, outcomes: Iterable[str | None]) -> ModelErrorTally:
        """One entry per request: None when the model answered, else its error message."""
        items = list(outcomes)
        failed = [m for m in items if m is not None]
        reasons = Counter(m for m in failed if m != NOT_ASKED)
        return cls(len(failed), len(items), tuple(reasons.most_common()), len(failed) - sum(reasons.values()))

    @property
    def rate(self) -> float:
        return self.errors / self.total if self.total else 0.0

    def over(self, max_rate: float) -> bool:
        return self.errors > allowed_errors(self.total, max_rate)

    def describe(self) -> str:
        """`6 of 6 model requests got no answer (openai:m: Connection error. x6)`."""
        shown = "; ".join(f"{m} x{n}" for m, n in self.reasons[:3])
        skipped = f"; {self.not_asked} not sent after that" if self.not_asked else ""
        return f"{self.errors} of {self.total} model requests got no answer ({shown}{skipped})"

    def to_dict(self) -> dict[str, Any]:
        return {"errors": self.errors, "total": self.total, "not_asked": self.not_asked,
                "reasons": [{"message": m, "count": n} for m, n in self.reasons]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelErrorTally:
        reasons = tuple((str(r["message"]), int(r["count"])) for r in data.get("reasons") or ())
        return cls(int(data["errors"]), int(data["total"]), reasons, int(data.get("not_asked", 0)))


class TooManyModelErrors(ModelError):
    """The model failed on more requests than the run allows: its scores would measure the outage."""

    def __init__(self, tally: ModelErrorTally, max_rate: float) -> None:
        self.tally = tally
        self.max_rate = max_rate
        super().__init__(f"{tally.describe()}; at most {max_rate:.0%} may fail, so nothing was scored")
