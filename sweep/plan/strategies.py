"""Search strategies over a finite list of valid parameter points: which to evaluate next.

A strategy sees the candidates (the valid points of one space on one workload or shape
bucket, in grid order) and is told the objective of each point evaluated (a latency: lower is
better; ``None`` for a failure). It is asked for a few points at a time (a round fills the
cluster's GPUs) and never proposes a point twice. Pure and seeded: the same candidates, seed
and answers give the same proposals. The driver (``sweep.launch.search``) runs the proposals
as ordinary tasks.

* ``grid``: every point in grid order.
* ``random``: a seeded permutation.
* ``forest``: Bayesian optimisation with a random-forest surrogate (scikit-learn's
  ``RandomForestRegressor``, the ``tune`` extra), the spread of its trees' predictions as the
  uncertainty and expected improvement over the unevaluated candidates as the acquisition,
  after ``initial`` random points (SMAC's recipe on a finite space).
* ``evolution``: a seeded evolutionary local search: parents drawn by tournament from the best
  points found, children one or two parameters away (the neighbouring value in its list, now
  and then any value), only valid unevaluated children kept.

Warm start: points known good from earlier searches (``first``) are proposed before anything
else, and their values, told with ``counted=False``, train the surrogate too.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from sweep.errors import PlanError
from sweep.schema.params import Point, params_json

__all__ = ["STRATEGIES", "Strategy", "make_strategy"]

#: The strategies a config may name.
STRATEGIES = ("grid", "random", "forest", "evolution")
#: Candidates the forest scores per round at most (a seeded sample of the rest).
_MAX_SCORED = 4096


class Strategy:
    """The common state: candidates, what was evaluated, what is proposed first, the rng."""

    def __init__(self, candidates: Sequence[Point], *, seed: int, first: Sequence[int] = ()) -> None:
        self.candidates = list(candidates)
        self.rng = random.Random(seed)
        self.values: dict[int, float | None] = {}  # every point told, counted or not
        self.proposed: set[int] = set()
        self.first = [i for i in dict.fromkeys(first) if 0 <= i < len(self.candidates)]
        self.index = {params_json(p): i for i, p in enumerate(self.candidates)}

    def tell(self, i: int, value: float | None, *, counted: bool = True) -> None:
        """The objective of candidate ``i`` (``None``: it failed). ``counted=False``: known from
        elsewhere (another hardware, an earlier space): it informs the model, and the point
        may still be proposed."""
        if counted:
            self.proposed.add(i)
            self.values[i] = value
        elif i not in self.values:
            self.values[i] = value

    def left(self) -> list[int]:
        """Candidates not yet proposed, in grid order."""
        return [i for i in range(len(self.candidates)) if i not in self.proposed]

    def ask(self, n: int) -> list[int]:
        """Up to ``n`` candidates to evaluate next (fewer when the space runs out)."""
        out: list[int] = []
        for i in self.first:
            if len(out) < n and i not in self.proposed:
                out.append(i)
        for i in out:
            self.proposed.add(i)
        if len(out) < n:
            more = self._ask(n - len(out))
            self.proposed.update(more)
            out.extend(more)
        return out

    def _ask(self, n: int) -> list[int]:
        return self.left()[:n]

    def _random(self, n: int) -> list[int]:
        rest = self.left()
        return self.rng.sample(rest, min(n, len(rest)))

    def _known(self) -> list[tuple[int, float]]:
        """Evaluated points that passed, best first."""
        return sorted(((i, v) for i, v in self.values.items() if v is not None), key=lambda t: (t[1], t[0]))


class _Random(Strategy):
    def _ask(self, n: int) -> list[int]:
        return self._random(n)


def _features(candidates: Sequence[Point]) -> list[list[float]]:
    """Each point as numbers: a positive number as its log2, another number as itself, a
    string or truth value as its position among the values the space lists."""
    names = list(candidates[0]) if candidates else []
    levels: dict[str, dict[str, int]] = {n: {} for n in names}
    for p in candidates:
        for n in names:
            levels[n].setdefault(repr(p[n]), len(levels[n]))
    rows = []
    for p in candidates:
        row = []
        for n in names:
            v = p[n]
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row.append(math.log2(v) if v > 0 else float(v))
            else:
                row.append(float(levels[n][repr(v)]))
        rows.append(row)
    return rows


class _Forest(Strategy):
    def __init__(self, candidates: Sequence[Point], *, seed: int, first: Sequence[int], initial: int) -> None:
        super().__init__(candidates, seed=seed, first=first)
        self.initial = initial
        self.seed = seed
        self.x = _features(self.candidates)
        try:
            from sklearn.ensemble import RandomForestRegressor  # noqa: F401
        except ImportError:
            raise PlanError(
                "solutions.search.strategy 'forest' needs scikit-learn: pip install 'kernel-sweep[tune]' "
                "(or choose random or evolution)"
            ) from None

    def _ask(self, n: int) -> list[int]:
        known = [(i, v) for i, v in self.values.items()]
        passed = [v for _, v in known if v is not None]
        if len(passed) < max(2, self.initial) or len(passed) < 2:
            return self._random(n)
        from sklearn.ensemble import RandomForestRegressor

        worst = max(math.log(v) for v in passed) + 1.0  # a failure: worse than anything seen
        xs = [self.x[i] for i, _ in known]
        ys = [math.log(v) if v is not None else worst for _, v in known]
        model = RandomForestRegressor(n_estimators=48, min_samples_leaf=1, random_state=self.seed % (2**32))
        model.fit(xs, ys)
        rest = self.left()
        if len(rest) > _MAX_SCORED:
            rest = self.rng.sample(rest, _MAX_SCORED)
        if not rest:
            return []
        per_tree = [tree.predict([self.x[i] for i in rest]) for tree in model.estimators_]
        best = min(math.log(v) for v in passed)
        scored = []
        for k, i in enumerate(rest):
            preds = [float(t[k]) for t in per_tree]
            mu = sum(preds) / len(preds)
            sigma = math.sqrt(sum((p - mu) ** 2 for p in preds) / len(preds))
            scored.append((-_expected_improvement(best, mu, sigma), mu, i))
        scored.sort()
        return [i for _, _, i in scored[:n]]


def _expected_improvement(best: float, mu: float, sigma: float) -> float:
    """Expected improvement below ``best`` of a normal prediction (minimising)."""
    if sigma <= 1e-12:
        return max(best - mu, 0.0)
    z = (best - mu) / sigma
    cdf = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    pdf = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return (best - mu) * cdf + sigma * pdf


class _Evolution(Strategy):
    def __init__(self, candidates: Sequence[Point], *, seed: int, first: Sequence[int], initial: int) -> None:
        super().__init__(candidates, seed=seed, first=first)
        self.initial = initial
        names = list(self.candidates[0]) if self.candidates else []
        self.lists: dict[str, list[bool | int | float | str]] = {n: [] for n in names}
        for p in self.candidates:
            for n in names:
                if p[n] not in self.lists[n] or not any(
                    type(v) is type(p[n]) and v == p[n] for v in self.lists[n]
                ):
                    self.lists[n].append(p[n])
        for n in names:  # numbers in order, so a neighbour is the next size
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.lists[n]):
                self.lists[n].sort(key=float)

    def _child(self, parent: Point) -> int | None:
        child = dict(parent)
        for name in self.rng.sample(list(child), min(len(child), self.rng.choice((1, 1, 2)))):
            values = self.lists[name]
            at = next(
                (k for k, v in enumerate(values) if type(v) is type(child[name]) and v == child[name]), 0
            )
            if self.rng.random() < 0.2:
                child[name] = self.rng.choice(values)
            else:
                child[name] = values[max(0, min(len(values) - 1, at + self.rng.choice((-1, 1))))]
        i = self.index.get(params_json(child))
        return i if i is not None and i not in self.proposed else None

    def _ask(self, n: int) -> list[int]:
        known = self._known()
        if len(known) < self.initial:
            return self._random(n)
        elite = [i for i, _ in known[: max(4, self.initial)]]
        out: list[int] = []
        for _ in range(n):
            child = None
            for _ in range(32):
                a, b = self.rng.choice(elite), self.rng.choice(elite)
                parent = self.candidates[min(a, b, key=lambda i: self.values[i] or math.inf)]
                child = self._child(parent)
                if child is not None and child not in out:
                    break
                child = None
            if child is None:  # a neighbourhood used up: a random point keeps the search going
                rest = [i for i in self.left() if i not in out]
                if not rest:
                    break
                child = self.rng.choice(rest)
            out.append(child)
        return out


def make_strategy(
    name: str, candidates: Sequence[Point], *, seed: int, first: Sequence[int] = (), initial: int = 8
) -> Strategy:
    """The strategy ``name`` (one of :data:`STRATEGIES`) over ``candidates``.

    Raises:
        PlanError: An unknown name; ``forest`` without scikit-learn installed.
    """
    if name == "grid":
        return Strategy(candidates, seed=seed, first=first)
    if name == "random":
        return _Random(candidates, seed=seed, first=first)
    if name == "forest":
        return _Forest(candidates, seed=seed, first=first, initial=initial)
    if name == "evolution":
        return _Evolution(candidates, seed=seed, first=first, initial=initial)
    raise PlanError(f"unknown search strategy {name!r}; one of {', '.join(STRATEGIES)}")


def index_of(candidates: Mapping[str, int], point: Point) -> int | None:
    """The candidate index of ``point`` (``None``: not a valid point of this space)."""
    return candidates.get(params_json(point))
