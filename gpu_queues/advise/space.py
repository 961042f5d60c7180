"""The settings the advisor searches, and the bounds no candidate crosses.

A knob is one GPU resource (gpu_queues.whatif.gpus.is_gpu: nvidia.com/gpu, amd.com/gpu, ...) of
one flavor of one team's resource group: its nominalQuota, borrowingLimit and lendingLimit.
cpu and memory are left as they are: they follow the GPUs only through borrowing, which the
committed stacks leave open for them. A candidate is every knob's three values plus each
team's cohort; the stack as it is, is the first one.

The bounds, by construction and checked again for every candidate:
- the hardware: per flavor and resource, the nominal quotas never sum above the capacity the
  flavor declares (moves only shift quota between teams, or hand out what no team holds);
- Kueue's rules: a lendingLimit never above the nominal quota, no limit without a cohort;
- the config validation (gpu_queues.config.model.load_config: every rule the program runs
  before it registers anything) and the policy pack on the objects the candidate renders
  (gpu_queues.advise.policy); a candidate failing either is never replayed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_queues import keys
from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.quantity import QuantityError, parse_quantity
from gpu_queues.whatif.gpus import is_gpu

Limit = int | None  # None: no limit (borrow from / lend to the cohort all there is)
Setting = tuple[int, Limit, Limit]  # nominalQuota, borrowingLimit, lendingLimit
FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


class SpaceError(ValueError):
    """The stack has nothing the advisor can search, or a value it cannot read."""


@dataclass(frozen=True)
class Knob:
    """Where one searched resource sits in the stack config."""

    team: int
    group: int
    flavor: int
    resource: str
    team_name: str
    flavor_name: str

    def path(self) -> tuple[str | int, ...]:
        """Its quota entry's path under `gpu-queues:teams` (yamledit form)."""
        return (self.team, "resourceGroups", self.group, "flavors", self.flavor, "resources")

    def label(self) -> str:
        return f"{self.team_name} {self.flavor_name} {self.resource}"


@dataclass(frozen=True)
class Candidate:
    settings: tuple[Setting, ...]
    cohorts: tuple[str | None, ...]


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

    @classmethod
    def of(cls, raw: Mapping[str, Any], config: StackConfig) -> Space:
        capacity: dict[tuple[str, str], int] = {}
        for f in config.flavors:
            for resource, amount in f.effective_capacity().items():
                if is_gpu(resource):
                    capacity[f.name, resource] = int(amount // 1)
        knobs, settings = [], []
        teams = raw.get(keys.KEY_TEAMS) or []
        for i, team in enumerate(teams):
            for g, group in enumerate(team.get("resourceGroups") or []):
                for j, flavor in enumerate(group.get("flavors") or []):
                    for resource, quota in (flavor.get("resources") or {}).items():
                        if not is_gpu(str(resource)) or (flavor["name"], resource) not in capacity:
                            continue
                        where = f"teams[{team['name']}] {flavor['name']} {resource}"
                        knobs.append(Knob(i, g, j, str(resource), team["name"], flavor["name"]))
                        settings.append(
                            (
                                _whole(quota.get("nominalQuota", 0), where),
                                _limit(quota.get("borrowingLimit"), where),
                                _limit(quota.get("lendingLimit"), where),
                            )
                        )
        if not knobs:
            raise SpaceError(
                "no team has a GPU quota (nvidia.com/gpu or another */gpu) in a flavor whose "
                "capacity the stack declares: nothing to advise on"
            )
        cohort = raw.get(keys.KEY_COHORT)
        name = cohort.get("name") if isinstance(cohort, Mapping) else None
        start = Candidate(tuple(settings), tuple(t.get("cohort") for t in teams))
        return cls(raw, tuple(knobs), capacity, name, start)

    # --- candidates ---------------------------------------------------------------------

    def config_of(self, candidate: Candidate) -> dict[str, Any]:
        """The stack config with the candidate's settings (a copy; `raw` stays as it is)."""
        raw = copy.deepcopy(dict(self.raw))
        teams = raw[keys.KEY_TEAMS]
        for knob, setting in zip(self.knobs, candidate.settings, strict=True):
            team = teams[knob.team]
            quota = team["resourceGroups"][knob.group]["flavors"][knob.flavor]["resources"]
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
        return raw

    def changes(self, candidate: Candidate) -> list[dict[str, Any]]:
        """What the candidate changes against the stack as it is: one entry per key."""
        out: list[dict[str, Any]] = []
        for knob, old, new in zip(self.knobs, self.start.settings, candidate.settings, strict=True):
            for name, a, b in zip(FIELDS, old, new, strict=True):
                if a != b:
                    out.append(
                        {
                            "team": knob.team_name,
                            "flavor": knob.flavor_name,
                            "resource": knob.resource,
                            "key": name,
                            "before": a,
                            "after": b,
                            "path": [keys.KEY_TEAMS, *knob.path(), knob.resource, name],
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
        """Every neighbour of `c` a step away (a transfer of nominal quota: a step or two),
        within the bounds, with what the move does. With `waiting` (the teams that wait in
        c's run, the longest-waiting first) only the moves that can shorten a wait: quota,
        borrowing or a lower lendingLimit for a team that waits, a higher lendingLimit or a
        lower borrowingLimit for a team beside one that waits; those for the team that waits
        longest first."""
        everyone = list(dict.fromkeys(k.team_name for k in self.knobs))
        order = list(waiting) if waiting is not None else everyone
        rank = {t: i for i, t in enumerate(order)}
        gains = sorted(
            (k for k in range(len(self.knobs)) if self.knobs[k].team_name in rank),
            key=lambda k: rank[self.knobs[k].team_name],
        )
        helped = bool(order)
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
                            f"{other.team_name} to {knob.team_name}",
                            self._nominal(c, {a: -size, b: size}),
                        )
            # A step from every other team at once: where each has one step to spare and
            # the team that waits needs more than one.
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
                    f"{', '.join(self.knobs[a].team_name for a in donors)} to {knob.team_name}",
                    self._nominal(c, {**{a: -step for a in donors}, b: step * len(donors)}),
                )
        for k in gains:
            knob = self.knobs[k]
            if c.cohorts[knob.team] is None:
                continue
            nominal, borrowing, lending = c.settings[k]
            room = self.capacity[knob.flavor_name, knob.resource] - nominal
            for label, value in _limit_moves(borrowing, room, step):
                if label == "raise":
                    yield f"raise {knob.label()} borrowingLimit", self._set(c, k, 1, value)
            for label, value in _limit_moves(lending, nominal, step):
                if label == "lower":
                    yield f"lower {knob.label()} lendingLimit", self._set(c, k, 2, value)
        for k, knob in enumerate(self.knobs):
            others = [t for t in order if t != knob.team_name]
            if c.cohorts[knob.team] is None or not others:
                continue
            nominal, borrowing, lending = c.settings[k]
            room = self.capacity[knob.flavor_name, knob.resource] - nominal
            for label, value in _limit_moves(lending, nominal, step):
                if label == "raise":
                    yield f"raise {knob.label()} lendingLimit", self._set(c, k, 2, value)
            for label, value in _limit_moves(borrowing, room, step):
                if label == "lower":
                    yield f"lower {knob.label()} borrowingLimit", self._set(c, k, 1, value)
        if self.cohort is not None and helped:
            for i, cohort in enumerate(c.cohorts):
                if cohort is None:
                    name = next(k.team_name for k in self.knobs if k.team == i)
                    cohorts = (*c.cohorts[:i], self.cohort, *c.cohorts[i + 1 :])
                    yield f"{name} joins cohort {self.cohort}", Candidate(c.settings, cohorts)

    def _nominal(self, c: Candidate, delta: Mapping[int, int]) -> Candidate:
        settings = list(c.settings)
        for k, d in delta.items():
            nominal, borrowing, lending = settings[k]
            nominal += d
            if lending is not None and lending > nominal:
                lending = nominal  # Kueue refuses a lendingLimit above the nominal quota
            settings[k] = (nominal, borrowing, lending)
        return Candidate(tuple(settings), c.cohorts)

    def _set(self, c: Candidate, k: int, field: int, value: Limit) -> Candidate:
        settings = list(c.settings)
        nominal, borrowing, lending = settings[k]
        if field == 1:
            borrowing = value
        else:
            lending = value
        settings[k] = (nominal, borrowing, lending)
        return Candidate(tuple(settings), c.cohorts)


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
