"""The smallest effect of interest (SESOI, the "margin" δ) of each quantity a claim compares, with its reason.

A claim "A is better than B" asserts a gain the paper thinks worth reporting; a gain smaller than δ is not that
gain. So a comparison is *equivalent* when its interval lies inside (−δ, δ), a "better" claim is refuted only when
the evidence excludes a gain of δ, and a "no gain" claim is confirmed only by two one-sided tests at δ
(docs/claims.md, "The decision rule"). δ is never finer than what the measurement resolves: rounds are whole, an
accuracy moves by one test image at a time.

`margin_for(metric, a_mean=..., b_mean=..., test_images=...)` gives the default δ of a metric (in its own units) from
its name; a claim that needs another value passes `margin=` to `paired` / `compare_values` / `compare_costs` and
says why in its design. An unknown metric without a margin is an error that names the metric.
Torch-free and numpy-free: the report helpers import it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Sesoi:
    """A default margin: `absolute` in the metric's units, or `relative` × the larger |mean| of the two sides
    (symmetric, so that swapping the sides of a comparison keeps δ), never below `floor`."""
    kind: str
    reason: str
    absolute: float | None = None
    relative: float | None = None
    floor: float = 0.0

    def value(self, a_mean: float | None = None, b_mean: float | None = None,
              reference: float | None = None) -> float:
        if self.absolute is not None:
            return self.absolute
        means = [abs(m) for m in ((reference,) if reference is not None else (a_mean, b_mean))
                 if m is not None and math.isfinite(m)]
        if not means:
            raise ValueError(f"a relative margin ({self.kind}) needs the sides' means")
        return max(self.relative * max(means), self.floor)


#: the default margin of each kind of quantity, with its reason (docs/claims.md lists them)
SESOI: dict[str, Sesoi] = {
    "rounds": Sesoi("rounds", "rounds are whole: a difference under one round is below what the count resolves",
                    absolute=1.0),
    "accuracy": Sesoi("accuracy", "1 percentage point: what the convergence indicator tolerates of an accuracy "
                      "curve it calls flat; at least 3 test images on the smallest embedded test set (360 images, "
                      "one image = 0.28 pp), so never finer than one image", absolute=1.0),
    "communication": Sesoi("communication", "5 % of the larger mean: half the smallest saving the papers claim "
                           "(1.10×); communication to a target moves in steps of one round's bits, a few % of it",
                           relative=0.05),
    "loss": Sesoi("loss", "1 % of the larger mean: what the convergence indicator tolerates of a loss curve it calls "
                  "flat (fedlib/reporting/convergence.py); a smaller gap is inside a converged curve's wobble",
                  relative=0.01),
    "consistency": Sesoi("consistency", "10 % of the larger mean (or of the reference method's level, "
                         "`reference=`): the papers' consistency figures separate methods by factors, not by "
                         "percents", relative=0.10),
    "fluctuation": Sesoi("fluctuation", "10 % of the larger mean (a sum of upward loss moves: a smaller change of "
                         "this sum is not a visibly smoother curve)", relative=0.10),
    "skewness": Sesoi("skewness", "0.1: skewness is unitless; |skew| < 0.1 is what a symmetric sample of this size "
                      "shows by chance", absolute=0.1),
    "log10": Sesoi("log10", "0.1 decade (a factor 1.26): the papers' figures read update magnitudes on a log axis",
                   absolute=0.1),
}

#: (substring of the lower-cased metric name, kind), first match wins: a quantity before the window it is read
#: over ("consistency, mean of the last half of rounds", "accuracy ... of the common communication budget")
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("consistency", "consistency"), ("fluctuation", "fluctuation"), ("skewness", "skewness"), ("log10", "log10"),
    ("accuracy", "accuracy"), ("rounds to", "rounds"), ("comm", "communication"), ("mbit", "communication"),
    ("d-vectors", "communication"), ("loss", "loss"), ("rounds", "rounds"))


def kind_of(metric: str) -> str | None:
    """The SESOI kind of a metric name ("rounds to target" → "rounds"), None when none matches."""
    low = metric.lower()
    return next((kind for pattern, kind in _PATTERNS if pattern in low), None)


def one_image_pp(test_images: int) -> float:
    """One test image of a test set of `test_images`, in percentage points: the resolution of an accuracy."""
    if test_images <= 0:
        raise ValueError(f"test_images={test_images}: a test set has at least one image")
    return 100.0 / test_images


def margin_for(metric: str, *, a_mean: float | None = None, b_mean: float | None = None,
               test_images: int | None = None, reference: float | None = None) -> float:
    """The default δ of `metric` (its units). A relative margin is read off the larger |mean| of the two sides, or
    off `reference` when given (the level that sets the metric's scale, e.g. FedAvg's consistency when two methods
    near 0 are compared). For an accuracy, `test_images` raises δ to one test image when that is coarser than the
    default. ValueError naming the metric when its kind is unknown."""
    kind = kind_of(metric)
    if kind is None:
        raise ValueError(f"no default margin for metric {metric!r}: pass margin= (its smallest effect of interest, "
                         f"in its units) or name a kind of fedlib.reporting.effects.SESOI in the metric")
    delta = SESOI[kind].value(a_mean, b_mean, reference)
    if kind == "accuracy" and test_images is not None:
        delta = max(delta, one_image_pp(test_images))
    return delta


#: the resolution of a quantity that its name alone fixes: a count of rounds moves by whole rounds. Other
#: resolutions depend on the data (one test image, one round's bits of the cheaper method): the caller passes them
RESOLUTION = {"rounds": 1.0}


def resolution_for(metric: str) -> float | None:
    """The finest difference a metric resolves when its name fixes it (one round for a round count), else None."""
    return RESOLUTION.get(kind_of(metric))


def reason_for(metric: str) -> str:
    kind = kind_of(metric)
    return SESOI[kind].reason if kind else ""


def check_margin(margin: float, metric: str, *, resolution: float | None = None) -> float:
    """`margin` validated: > 0 and finite, and not finer than `resolution` (one round, one test image) when known."""
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin for {metric!r} must be a positive number in the metric's units, got {margin!r}")
    if resolution is not None and margin < resolution:
        raise ValueError(f"margin {margin:g} for {metric!r} is finer than the measurement resolves "
                         f"({resolution:g}): no interval can fit inside it")
    return float(margin)
