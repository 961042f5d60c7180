"""The settings the advisor searches, and the bounds no candidate crosses.

A knob is one GPU resource (gpu_queues.whatif.gpus.is_gpu: nvidia.com/gpu, amd.com/gpu, ...) of
one flavor of one team's resource group, or of a cohort's own resource group (the quota a
cohort of `gpu-queues:cohorts` holds for its subtree): its nominalQuota, borrowingLimit and
lendingLimit. cpu and memory are left as they are: they follow the GPUs only through
borrowing, which the committed stacks leave open for them. A weight knob is the
`fairSharing.weight` of a team in a cohort or of a cohort with a parent, searched only when the
manager's fair sharing is on (without it Kueue reads no weight) and only on a ladder of values
(WEIGHTS). A candidate is every knob's three values, each team's cohort and every weight; the
stack as it is, is the first one.

The bounds, by construction and checked again for every candidate:
- the hardware: per flavor and resource, the nominal quotas of the teams and of the cohorts
  together never sum above the capacity the flavor declares (moves only shift quota between
  teams and cohorts, or hand out what none holds);
- Kueue's rules: a team's lendingLimit never above its nominal quota, no limit without a
  cohort (a cohort's: without a parent);
- the config validation (gpu_queues.config.model.load_config: every rule the program runs
  before it registers anything) and the policy pack on the objects the candidate renders
  (gpu_queues.advise.policy); a candidate failing either is never replayed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from gpu_queues import keys
from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.whatif.gpus import is_gpu

Limit = int | None  # None: no limit (borrow from / lend to the cohort all there is)
Setting = tuple[int, Limit, Limit]  # nominalQuota, borrowingLimit, lendingLimit
Weight = Fraction | None  # None: the key not written (Kueue's default, 1)
FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")
WEIGHT_KEY = "fairSharing.weight"
WEIGHTS = tuple(Fraction(w) for w in ("0", "1/4", "1/2", "1", "2", "4", "8"))
"""The weights a move goes to: the next rung up or down from where a weight is. Weights
only compare with their siblings', so doubling and halving is the scale that matters; 0 is
Kueue's 'borrows only what no one else wants'."""


class SpaceError(ValueError):
    """The stack has nothing the advisor can search, or a value it cannot read."""


@dataclass(frozen=True)
class Knob:
    """Where one searched resource sits in the stack config: a team's quota (`team` its index
    in `gpu-queues:teams`) or, with `kind` "cohort", a cohort's own (`team` its index in
    `gpu-queues:cohorts`, `team_name` the cohort's name)."""

    team: int
    group: int
    flavor: int
    resource: str
    team_name: str
    flavor_name: str
    kind: str = "team"
    serves: frozenset[str] = frozenset()
    """The teams whose workloads can use this quota: the team, or every team under the cohort."""
    limits: bool = False
    """A cohort's may have borrowing and lending limits (it has a parent to lend to)."""

    def path(self) -> tuple[str | int, ...]:
        """Its quota entry's path under `gpu-queues:teams` or `gpu-queues:cohorts`."""
        return (self.team, "resourceGroups", self.group, "flavors", self.flavor, "resources")

    def root(self) -> str:
        return keys.KEY_COHORTS if self.kind == "cohort" else keys.KEY_TEAMS

    def label(self) -> str:
        owner = f"cohort {self.team_name}" if self.kind == "cohort" else self.team_name
        return f"{owner} {self.flavor_name} {self.resource}"


@dataclass(frozen=True)
class WeightKnob:
    """A `fairSharing.weight`: of a team (kind "team", `index` in `gpu-queues:teams`) in a
    cohort, or of a cohort with a parent (`index` in `gpu-queues:cohorts`)."""

    kind: str
    index: int
    name: str
    serves: frozenset[str]

    def root(self) -> str:
        return keys.KEY_COHORTS if self.kind == "cohort" else keys.KEY_TEAMS

    def label(self) -> str:
        return f"cohort {self.name}" if self.kind == "cohort" else self.name


@dataclass(frozen=True)
class Candidate:
    settings: tuple[Setting, ...]
    cohorts: tuple[str | None, ...]
    weights: tuple[Weight, ...] = ()


def _whole(value: Any, where: str) -> int:
    try:
        amount = parse_quantity(value)
    except QuantityError:
        raise SpaceError(f"{where}: {value!r} is not a quantity") from None
    if amount.denominator != 1:
        raise SpaceError(f"{where}: {value!r} is not a whole number of GPUs")
    return int(amount)


@dataclass(frozen=True)
class Space:
    raw: Mapping[str, Any]
    """The stack config the candidates are laid over (keys without the project prefix)."""
    knobs: tuple[Knob, ...]
    capacity: Mapping[tuple[str, str], int]
    """GPUs per (flavor, resource) the stack declares."""
    cohort: str | None
    """The stack's cohort (`gpu-queues:cohort`), which a team outside it may join."""
    start: Candidate

    weights: tuple[WeightKnob, ...] = ()
    """The fair-sharing weights searched (none while the manager's fair sharing is off)."""

    @classmethod
    def of(cls, raw: Mapping[str, Any], config: StackConfig) -> Space:
        capacity: dict[tuple[str, str], int] = {}
        for f in config.flavors:
            for resource, amount in f.effective_capacity().items():
                if is_gpu(resource):
                    capacity[f.name, resource] = int(amount // 1)
        teams = raw.get(keys.KEY_TEAMS) or []
        nodes = raw.get(keys.KEY_COHORTS) or []
        parents = {n["name"]: n.get("parent") for n in nodes}
        under = {
            n["name"]: frozenset(
                t["name"] for t in teams if n["name"] in _ancestors(t.get("cohort"), parents)
            )
            for n in nodes
        }
        knobs: list[Knob] = []
        settings: list[Setting] = []
        for i, team in enumerate(teams):
            serves = frozenset([team["name"]])
            _knobs_of(team, i, "team", serves, False, capacity, knobs, settings)
        for i, node in enumerate(nodes):
            limits = bool(node.get("parent"))
            _knobs_of(node, i, "cohort", under[node["name"]], limits, capacity, knobs, settings)
        if not knobs:
            raise SpaceError(
                "no team has a GPU quota (nvidia.com/gpu or another */gpu) in a flavor whose "
                "capacity the stack declares: nothing to advise on"
            )
        weights: list[WeightKnob] = []
        if config.kueue.manager.fair_sharing is not None:
            weights += [
                WeightKnob("team", i, t["name"], frozenset([t["name"]]))
                for i, t in enumerate(teams)
                if t.get("cohort")
            ]
            weights += [
                WeightKnob("cohort", i, n["name"], under[n["name"]])
                for i, n in enumerate(nodes)
                if n.get("parent")
            ]
        cohort = raw.get(keys.KEY_COHORT)
        name = cohort.get("name") if isinstance(cohort, Mapping) else None
        start = Candidate(
            tuple(settings),
            tuple(t.get("cohort") for t in teams),
            tuple(_weight(_owner(raw, w), w.label()) for w in weights),
        )
        return cls(raw, tuple(knobs), capacity, name, start, tuple(weights))

    # --- candidates ---------------------------------------------------------------------

    def config_of(self, candidate: Candidate) -> dict[str, Any]:
        """The stack config with the candidate's settings (a copy; `raw` stays as it is)."""
        raw = copy.deepcopy(dict(self.raw))
        teams = raw[keys.KEY_TEAMS]
        for knob, setting in zip(self.knobs, candidate.settings, strict=True):
            owner = raw[knob.root()][knob.team]
            quota = owner["resourceGroups"][knob.group]["flavors"][knob.flavor]["resources"]
            entry = quota[knob.resource]
            for name, value in zip(FIELDS, setting, strict=True):
                if value is None:
                    entry.pop(name, None)
                else:
                    entry[name] = value
        for team, cohort in zip(teams, candidate.cohorts, strict=True):
            if cohort is None:
                team.pop("cohort", None)
            else:
                team["cohort"] = cohort
        for w, weight in zip(self.weights, candidate.weights, strict=True):
            owner = raw[w.root()][w.index]
            if weight is None:
                if isinstance(owner.get("fairSharing"), dict):
                    owner["fairSharing"].pop("weight", None)
            else:
                owner["fairSharing"] = {**(owner.get("fairSharing") or {})}
                owner["fairSharing"]["weight"] = weight_value(weight)
        return raw

    def changes(self, candidate: Candidate) -> list[dict[str, Any]]:
        """What the candidate changes against the stack as it is: one entry per key."""
        out: list[dict[str, Any]] = []
        for knob, old, new in zip(self.knobs, self.start.settings, candidate.settings, strict=True):
            for name, a, b in zip(FIELDS, old, new, strict=True):
                if a != b:
                    out.append(
                        {
                            knob.kind: knob.team_name,
                            "flavor": knob.flavor_name,
                            "resource": knob.resource,
                            "key": name,
                            "before": a,
                            "after": b,
                            "path": [knob.root(), *knob.path(), knob.resource, name],
                        }
                    )
        teams = self.raw.get(keys.KEY_TEAMS) or []
        for team, was, now in zip(teams, self.start.cohorts, candidate.cohorts, strict=True):
            if was != now:
                out.append(
                    {
                        "team": team["name"],
                        "key": "cohort",
                        "before": was,
                        "after": now,
                        "path": [keys.KEY_TEAMS, teams.index(team), "cohort"],
                    }
                )
        old_weights, new_weights = self.start.weights, candidate.weights
        for w, before, after in zip(self.weights, old_weights, new_weights, strict=True):
            if before != after:
                out.append(
                    {
                        w.kind: w.name,
                        "key": WEIGHT_KEY,
                        "before": weight_value(before),
                        "after": weight_value(after),
                        "path": [w.root(), w.index, "fairSharing", "weight"],
                    }
                )
        return out

    def nominal_sums(self, candidate: Candidate) -> dict[tuple[str, str], int]:
        sums: dict[tuple[str, str], int] = dict.fromkeys(self.capacity, 0)
        for knob, (nominal, _, _) in zip(self.knobs, candidate.settings, strict=True):
            sums[knob.flavor_name, knob.resource] += nominal
        return sums

    def within_hardware(self, candidate: Candidate) -> bool:
        """No flavor's nominal quotas sum above its capacity (the hardware bound)."""
        return all(self.capacity[k] >= s for k, s in self.nominal_sums(candidate).items())

    # --- moves --------------------------------------------------------------------------

    def steps(self) -> list[int]:
        """Step sizes, largest first: halves of the largest flavor's capacity down to 1."""
        top = max(self.capacity.values(), default=1)
        out, step = [], max(1, top // 4)
        while step >= 1:
            out.append(step)
            step //= 2
        return out

    def moves(
        self, c: Candidate, step: int, waiting: Sequence[str] | None = None
    ) -> Iterator[tuple[str, Candidate]]:
        """Every neighbour of `c` a step away (a transfer of nominal quota: a step or two;
        a weight: a rung of WEIGHTS), within the bounds, with what the move does. With
        `waiting` (the teams that wait in c's run, the longest-waiting first) only the moves
        that can shorten a wait: quota, borrowing, a lower lendingLimit or a higher weight for
        a team that waits or a cohort above it, a higher lendingLimit, a lower borrowingLimit
        or a lower weight for one beside; those for the team that waits longest first."""
        everyone = [t["name"] for t in self.raw.get(keys.KEY_TEAMS) or []]
        order = list(waiting) if waiting is not None else everyone
        rank = {t: i for i, t in enumerate(order)}

        def first(serves: frozenset[str]) -> int:
            return min((rank[t] for t in serves if t in rank), default=len(rank))

        gains = sorted(
            (k for k in range(len(self.knobs)) if self.knobs[k].serves & rank.keys()),
            key=lambda k: first(self.knobs[k].serves),
        )
        yield from self._transfers(c, step, gains)
        for k in gains:
            knob = self.knobs[k]
            if not self._limited(c, knob):
                continue
            nominal, borrowing, lending = c.settings[k]
            room = self.capacity[knob.flavor_name, knob.resource] - nominal
            for label, value in _limit_moves(borrowing, room, step):
                if label == "raise":
                    yield f"raise {knob.label()} borrowingLimit", self._set(c, k, 1, value)
            for label, value in _limit_moves(lending, self._lend_top(c, k), step):
                if label == "lower":
                    yield f"lower {knob.label()} lendingLimit", self._set(c, k, 2, value)
        for k, knob in enumerate(self.knobs):
            if not self._limited(c, knob) or not set(order) - knob.serves:
                continue
            nominal, borrowing, lending = c.settings[k]
            room = self.capacity[knob.flavor_name, knob.resource] - nominal
            for label, value in _limit_moves(lending, self._lend_top(c, k), step):
                if label == "raise":
                    yield f"raise {knob.label()} lendingLimit", self._set(c, k, 2, value)
            for label, value in _limit_moves(borrowing, room, step):
                if label == "lower":
                    yield f"lower {knob.label()} borrowingLimit", self._set(c, k, 1, value)
        yield from self._weight_moves(c, order, first)
        if self.cohort is not None and order:
            for i, cohort in enumerate(c.cohorts):
                if cohort is None:
                    name = everyone[i]
                    cohorts = (*c.cohorts[:i], self.cohort, *c.cohorts[i + 1 :])
                    yield f"{name} joins cohort {self.cohort}", replace(c, cohorts=cohorts)

    def _transfers(
        self, c: Candidate, step: int, gains: Sequence[int]
    ) -> Iterator[tuple[str, Candidate]]:
        """Nominal quota to each knob of `gains`: a step no one holds, a step or two from
        another team or cohort, a step from every other at once."""
        sums = self.nominal_sums(c)
        for b in gains:
            knob = self.knobs[b]
            key = (knob.flavor_name, knob.resource)
            if self.capacity[key] - sums[key] >= step:
                yield (
                    f"give {knob.label()} {step} more nominal (unassigned)",
                    self._nominal(c, {b: step}),
                )
            for a, other in enumerate(self.knobs):
                if a == b or (other.flavor_name, other.resource) != key:
                    continue
                # A step and two: a team that needs two steps more crosses the plateau
                # where one step alone changes nothing.
                for size in (step, 2 * step):
                    if c.settings[a][0] >= size:
                        yield (
                            f"move {size} {key[0]} {key[1]} nominal from "
                            f"{_who(other)} to {_who(knob)}",
                            self._nominal(c, {a: -size, b: size}),
                        )
            # A step from every other at once: where each has one step to spare and the
            # team that waits needs more than one.
            donors = [
                a
                for a, other in enumerate(self.knobs)
                if a != b
                and (other.flavor_name, other.resource) == key
                and c.settings[a][0] >= step
            ]
            if len(donors) > 1:
                yield (
                    f"move {step} {key[0]} {key[1]} nominal from each of "
                    f"{', '.join(_who(self.knobs[a]) for a in donors)} to {_who(knob)}",
                    self._nominal(c, {**{a: -step for a in donors}, b: step * len(donors)}),
                )

    def _weight_moves(
        self, c: Candidate, order: Sequence[str], first: Any
    ) -> Iterator[tuple[str, Candidate]]:
        """A rung up for a weight over a team that waits, the one that waits longest first;
        a rung down for one beside a team that waits (a weight over none of them)."""
        ups, downs = [], []
        for w, knob in enumerate(self.weights):
            for label, value in _rungs(c.weights[w]):
                # Back at Kueue's 1 where the stack writes no weight: the key stays unwritten,
                # so the candidate is the stack as it is there (no change, no key to review).
                now: Weight = None if value == 1 and self.start.weights[w] is None else value
                weights = (*c.weights[:w], now, *c.weights[w + 1 :])
                move = (
                    f"{label} {knob.label()} fairSharing.weight to {weight_value(value)}",
                    replace(c, weights=weights),
                )
                if label == "raise" and knob.serves & set(order):
                    ups.append((first(knob.serves), w, move))
                elif label == "lower" and set(order) - knob.serves:
                    downs.append((w, move))
        yield from (move for _, _, move in sorted(ups, key=lambda x: x[:2]))
        yield from (move for _, move in downs)

    def _limited(self, c: Candidate, knob: Knob) -> bool:
        """Whether the knob may have limits: a team in a cohort, a cohort with a parent."""
        return knob.limits if knob.kind == "cohort" else c.cohorts[knob.team] is not None

    def _lend_top(self, c: Candidate, k: int) -> int:
        """Above this a lendingLimit is none: a team's nominal quota; for a cohort, whose
        lendingLimit counts its subtree's quota and may pass its own, the flavor's GPUs."""
        knob = self.knobs[k]
        if knob.kind == "cohort":
            return self.capacity[knob.flavor_name, knob.resource]
        return c.settings[k][0]

    def _nominal(self, c: Candidate, delta: Mapping[int, int]) -> Candidate:
        settings = list(c.settings)
        for k, d in delta.items():
            nominal, borrowing, lending = settings[k]
            nominal += d
            if self.knobs[k].kind == "team" and lending is not None and lending > nominal:
                lending = nominal  # Kueue refuses a team's lendingLimit above its nominal
            settings[k] = (nominal, borrowing, lending)
        return replace(c, settings=tuple(settings))

    def _set(self, c: Candidate, k: int, field: int, value: Limit) -> Candidate:
        settings = list(c.settings)
        nominal, borrowing, lending = settings[k]
        if field == 1:
            borrowing = value
        else:
            lending = value
        settings[k] = (nominal, borrowing, lending)
        return replace(c, settings=tuple(settings))


def _who(knob: Knob) -> str:
    return f"cohort {knob.team_name}" if knob.kind == "cohort" else knob.team_name


def _ancestors(cohort: Any, parents: Mapping[str, Any]) -> list[str]:
    """The cohort and every cohort above it (the tree has no cycle: the validation refuses
    one before the advisor reads the stack)."""
    out: list[str] = []
    while isinstance(cohort, str) and cohort not in out:
        out.append(cohort)
        cohort = parents.get(cohort)
    return out


def _knobs_of(
    owner: Mapping[str, Any],
    index: int,
    kind: str,
    serves: frozenset[str],
    limits: bool,
    capacity: Mapping[tuple[str, str], int],
    knobs: list[Knob],
    settings: list[Setting],
) -> None:
    """The knobs of a team's or a cohort's GPU quotas, in the order the stack writes them."""
    for g, group in enumerate(owner.get("resourceGroups") or []):
        for j, flavor in enumerate(group.get("flavors") or []):
            for resource, quota in (flavor.get("resources") or {}).items():
                if not is_gpu(str(resource)) or (flavor["name"], resource) not in capacity:
                    continue
                where = f"{kind}s[{owner['name']}] {flavor['name']} {resource}"
                knobs.append(
                    Knob(
                        index,
                        g,
                        j,
                        str(resource),
                        owner["name"],
                        flavor["name"],
                        kind,
                        serves,
                        limits,
                    )
                )
                settings.append(
                    (
                        _whole(quota.get("nominalQuota", 0), where),
                        _limit(quota.get("borrowingLimit"), where),
                        _limit(quota.get("lendingLimit"), where),
                    )
                )


def _owner(raw: Mapping[str, Any], knob: WeightKnob) -> Mapping[str, Any]:
    return raw[knob.root()][knob.index]  # type: ignore[no-any-return]


def _weight(owner: Mapping[str, Any], where: str) -> Weight:
    given = (owner.get("fairSharing") or {}).get("weight")
    if given is None:
        return None
    try:
        return parse_quantity(given)
    except QuantityError:
        raise SpaceError(f"{where}: fairSharing.weight {given!r} is not a quantity") from None


def weight_value(weight: Weight) -> int | float | None:
    """A weight as the stack file and advice.json write it: a whole number, else a decimal
    (the ladder's rungs are exact in binary)."""
    if weight is None:
        return None
    return int(weight) if weight.denominator == 1 else float(weight)


def _rungs(weight: Weight) -> Iterator[tuple[str, Fraction]]:
    """The next rung of WEIGHTS up and down from a weight (unset reads as Kueue's 1)."""
    current = Fraction(1) if weight is None else weight
    up = [w for w in WEIGHTS if w > current]
    down = [w for w in WEIGHTS if w < current]
    if up:
        yield "raise", up[0]
    if down:
        yield "lower", down[-1]


def _limit(value: Any, where: str) -> Limit:
    return None if value is None else _whole(value, where)


def _limit_moves(value: Limit, top: int, step: int) -> Iterator[tuple[str, Limit]]:
    """A limit a step lower and a step higher, within [0, top]; at `top` or above it is no
    limit at all (None: the cohort holds no more than that)."""
    current = top if value is None else value
    if current > 0:
        yield "lower", max(0, min(current, top) - step)
    if value is not None:
        yield "raise", None if value + step >= top else value + step
