"""Promotion on generated stack files in many layouts (issue 10 A2): indentation of every
width, compact and indented sequences, flow collections, quoted keys and values, comments at
any column and after values, blank lines, CRLF, no final newline, tabs in comments, anchors
and aliases, secure values, a salt before or after `config:`, no config at all.

Each example renders a source and a target document with a layout of its own, checks that the
rendering parses back to the intended document, and promotes. Either the promotion refuses
(the file untouched, the reason one of the known classes) or the result obeys the rules:
every key outside the travelling ones is unchanged, travelling keys hold FROM's value, the
text parses and validates, and every comment outside a rewritten entry is still there.

GPUQ_FUZZ_EXAMPLES=N runs N examples (default: 25 in the everyday suites, 250 under the deep
hypothesis profile, tests/properties.py). The outcomes are counted, and the test fails unless
a real share of the examples were promoted (a promoter refusing everything would otherwise
pass), each promotion listing only travelling keys as changed.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from gpu_queues import keys
from gpu_queues.config import yamledit
from gpu_queues.config.secure import Secure, load_stack_config
from gpu_queues.config.stackfile import config_of, parse_document
from gpu_queues.pins import kueue_version
from gpu_queues.tools import promote, promotion_rules
from tests.builders import Flavor, Stack, Team
from tests.properties import examples

pytestmark = pytest.mark.unit

EXAMPLES = int(os.environ.get("GPUQ_FUZZ_EXAMPLES", 0)) or examples(25)
KUEUE = f"{keys.PROJECT}:{keys.KEY_KUEUE}"
PIN = kueue_version()
VERSIONS = [PIN, "v0.17.0", "v0.19.1"]
SHAS = ["a" * 64, "b" * 64, "c" * 64]
TEAMS = (
    Stack()
    .flavor(Flavor("f1").capacity(cpu=8, gpu=2))
    .team(Team("t1").local_queue("q").quota("f1", cpu=8, memory="64Gi", gpu=2))
    .config()
)

# --- documents ----------------------------------------------------------------------------

manifests = st.one_of(
    st.just({}),
    st.builds(lambda s: {"sha256": s}, st.sampled_from(SHAS)),
    st.builds(
        lambda v, s: {"path": f".kueue/{v}/manifests.yaml", "sha256": s},
        st.sampled_from(VERSIONS),
        st.sampled_from(SHAS),
    ),
    st.builds(
        lambda s: {"url": "https://mirror.example.invalid/k.yaml", "sha256": s},
        st.sampled_from(SHAS),
    ),
    st.builds(lambda: {"path": "vendor/kueue.yaml"}),
)
managers = st.fixed_dictionaries(
    {},
    optional={
        "integrations": st.builds(
            lambda f: {"frameworks": f},
            st.lists(
                st.sampled_from(["batch/job", "pod", "jobset.x-k8s.io/jobset"]),
                min_size=1,
                max_size=3,
                unique=True,
            ),
        ),
        "waitForPodsReady": st.builds(
            lambda t, b: {"timeout": t, "blockAdmission": b},
            st.sampled_from(["5m", "10m"]),
            st.booleans(),
        ),
        "fairSharing": st.sampled_from([{}, {"preemptionStrategies": ["LessThanInitialShare"]}]),
        "featureGates": st.dictionaries(
            st.sampled_from(["GateA", "GateB"]), st.booleans(), min_size=1
        ),
        "managedJobsNamespaceSelector": st.builds(
            lambda v: {"matchLabels": {"env": v}}, st.sampled_from(["dev", "prod"])
        ),
        "manageJobsWithoutQueueName": st.booleans(),
    },
)
kueues = st.fixed_dictionaries(
    {},
    optional={
        "version": st.sampled_from(VERSIONS),
        "install": st.booleans(),
        "manifest": manifests,
        "readinessTimeoutSeconds": st.sampled_from([60, 300]),
        "controller": st.builds(
            lambda r, t: {"replicas": r, "tolerations": [{"key": t, "operator": "Exists"}]},
            st.integers(1, 3),
            st.sampled_from(["CriticalAddonsOnly", "dedicated"]),
        ),
        "manager": managers,
    },
).map(lambda k: {key: v for key, v in k.items() if v != {} or key == "manager"})


@st.composite
def documents(draw: st.DrawFn, source: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = {}
    kueue = draw(kueues)
    if source:  # something to promote, most of the time
        kueue["manager"] = {**draw(managers), **kueue.get("manager", {})}
    extras = draw(
        st.lists(
            st.sampled_from(["kubeconfig", "provider", "other", "notes"]), unique=True, max_size=4
        )
    )
    if source or draw(st.booleans()):
        config[KUEUE] = kueue
    config.update(TEAMS)
    if "kubeconfig" in extras:
        config["gpu-queues:kubernetes"] = {"kubeconfig": Secure("v1:c2FsdA==:Y2lwaGVy")}
    if "provider" in extras:
        config["kubernetes:kubeconfig"] = Secure("v1:cHJvdg==:eA==")
    if "other" in extras:
        config["other-project:list"] = [1, "two", {"three": 3}]
    if "notes" in extras:
        config["other-project:notes"] = "line one\n# not a comment\nline three\n"
    if draw(st.booleans()):
        config = {KUEUE: config.pop(KUEUE), **config} if KUEUE in config else config
    doc: dict[str, Any] = {}
    salt = draw(st.sampled_from(["none", "before", "after"]))
    if salt == "before":
        doc["encryptionsalt"] = "v1:c2FsdA==:v1:aXY=:Y3Q="
    if source or draw(st.integers(0, 9)) > 0:
        doc["config"] = config
    if salt == "after":
        doc["encryptionsalt"] = "v1:c2FsdA==:v1:aXY=:Y3Q="
    return doc


# --- rendering ----------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_./][A-Za-z0-9_./:=+-]*$")
_NOT_STR = re.compile(r"^(true|false|null|~|[-+]?[0-9].*|\.inf|\.nan)$", re.I)


@dataclass
class Layout:
    rng: random.Random
    kept_comments: list[str] = field(default_factory=list)
    anchored: str = ""

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


def _scalar(value: Any, lay: Layout, flow: bool = False) -> str:
    if value is None:
        return lay.rng.choice(["~", "null"])
    if isinstance(value, bool):
        return lay.rng.choice(["true", "True"]) if value else lay.rng.choice(["false", "False"])
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN.match(text) and not _NOT_STR.match(text) and ": " not in text and lay.chance(0.7):
        return text
    if "\n" not in text and lay.chance(0.5):
        return "'" + text.replace("'", "''") + "'"
    return json.dumps(text)


def _key(key: str, lay: Layout) -> str:
    if lay.chance(0.15):
        return json.dumps(key) if lay.chance(0.5) else f"'{key}'"
    return key


def _flow(value: Any, lay: Layout) -> str:
    if isinstance(value, Secure):
        return "{secure: " + value.ciphertext + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k, lay)}: {_flow(v, lay)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v, lay) for v in value) + "]"
    return _scalar(value, lay, flow=True)


def _flowable(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" not in value
    if isinstance(value, dict):
        return all(_flowable(v) for v in value.values())
    if isinstance(value, list):
        return all(_flowable(v) for v in value)
    return True


def _comment(lay: Layout, indent: int, tag: str, deep: bool = True) -> str:
    text = f"# {tag}{lay.rng.randrange(10**6)}" + ("\tand a tab" if lay.chance(0.2) else "")
    if tag == "K":
        lay.kept_comments.append(text.strip())
    columns = [0, indent, max(0, indent - 1)] + ([indent + 3] if deep else [])
    return " " * lay.rng.choice(columns) + text


def _block(value: Any, indent: int, lay: Layout, tag: str, path: tuple[str, ...]) -> list[str]:
    """Lines of a block mapping or sequence at `indent`."""
    lines: list[str] = []
    step = lay.rng.choice([2, 3, 4])
    scalar = False
    if isinstance(value, dict):
        for key, item in value.items():
            here = (*path, str(key))
            item_tag = tag
            if len(here) >= 3 and here[:2] == ("config", KUEUE):
                rule = promotion_rules.rule_for(here[2:])
                travels = rule is not None and rule.rule is not promotion_rules.Rule.STAYS
                item_tag = "T" if travels else tag
            if lay.chance(0.15):
                # never deeper than this level right after a block scalar: it would be text
                deep = not (lines and lines[-1].startswith(" " * (indent + 1)) and scalar)
                lines.append(_comment(lay, indent, tag, deep))
            if lay.chance(0.08):
                lines.append("")
            lines += _entry(_key(str(key), lay), item, indent, step, lay, item_tag, here)
            scalar = isinstance(item, str) and "\n" in item
    else:
        for item in value:
            lines += _item(item, indent, step, lay, tag, path)
    return lines


def _entry(
    key: str, item: Any, indent: int, step: int, lay: Layout, tag: str, path: tuple[str, ...]
) -> list[str]:
    pad = " " * indent
    eol = f"  {_comment(lay, 0, tag).strip()}" if lay.chance(0.1) else ""
    if isinstance(item, Secure):
        if lay.chance(0.5):
            return [f"{pad}{key}: {{secure: {item.ciphertext}}}{eol}"]
        return [f"{pad}{key}:{eol}", f"{pad}{' ' * step}secure: {item.ciphertext}"]
    if isinstance(item, str) and "\n" in item:
        body = [f"{pad}{' ' * step}{line}" for line in item.splitlines()]
        return [f"{pad}{key}: |{eol}", *body]
    if isinstance(item, dict | list) and item:
        if _flowable(item) and lay.chance(0.25):
            return [f"{pad}{key}: {_flow(item, lay)}{eol}"]
        anchor = ""
        anchorable = isinstance(item, dict) and path[-1:] in (("controller",), ("manager",))
        if anchorable and not lay.anchored and lay.chance(0.5):
            anchor, lay.anchored = f" &{path[-1]}", path[-1]
        inner = indent if isinstance(item, list) and lay.chance(0.4) else indent + step
        return [f"{pad}{key}:{anchor}{eol}", *_block(item, inner, lay, tag, path)]
    if isinstance(item, dict | list):
        return [f"{pad}{key}: {'{}' if isinstance(item, dict) else '[]'}{eol}"]
    return [f"{pad}{key}: {_scalar(item, lay)}{eol}"]


def _item(
    item: Any, indent: int, step: int, lay: Layout, tag: str, path: tuple[str, ...]
) -> list[str]:
    pad = " " * indent
    if isinstance(item, dict) and item and not (_flowable(item) and lay.chance(0.3)):
        inner = _block(item, indent + 2, lay, tag, path)
        first = next(
            i for i, line in enumerate(inner) if line.strip() and not line.strip().startswith("#")
        )
        inner[first] = pad + "- " + inner[first][indent + 2 :]
        return inner
    if isinstance(item, dict | list):
        return [f"{pad}- {_flow(item, lay)}"]
    return [f"{pad}- {_scalar(item, lay)}"]


def render(doc: dict[str, Any], seed: int) -> tuple[str, Layout]:
    lay = Layout(random.Random(seed))
    lines: list[str] = []
    if lay.chance(0.5):
        lines.append(_comment(lay, 0, "K"))
    doc = dict(doc)
    alias = lay.chance(0.5)
    lines += _block(doc, 0, lay, "K", ())
    if alias and lay.anchored:
        # an alias to TO's controller, later in the file (another project's key)
        at = next((i for i, line in enumerate(lines) if line.startswith("config:")), None)
        if at is not None:
            indent = next(
                len(line) - len(line.lstrip())
                for line in lines[at + 1 :]
                if line.strip() and not line.lstrip().startswith("#")
            )
            end = next(
                (
                    i
                    for i in range(at + 1, len(lines))
                    if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#")
                ),
                len(lines),
            )
            lines.insert(end, " " * indent + f"other-project:alias: *{lay.anchored}")
    nl = "\r\n" if lay.chance(0.2) else "\n"
    text = nl.join(lines)
    # no final newline, unless a block scalar ends the file (its text would lose it)
    if lay.chance(0.8) or (lines and lines[-1].endswith("line three")):
        text += nl
    return text, lay


def expected_doc(doc: dict[str, Any], text: str) -> dict[str, Any]:
    out = json.loads(json.dumps(doc, default=lambda s: {"secure": s.ciphertext}))
    for name in ("controller", "manager"):
        if f"other-project:alias: *{name}" in text:
            out["config"]["other-project:alias"] = out["config"][KUEUE][name]
    return out


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda s: {"secure": s.ciphertext}))


# --- the property -------------------------------------------------------------------------

OUTCOMES: Counter[str] = Counter()
REFUSALS = {
    "invalid config": "is not a valid stack config",
    "invalid after promotion": "would not be a valid stack config",
    "stale own manifest key": "names v",
    "stale checksum": "verifies the v",
    "no checksum for the new version": "pins none for",
    "would change other keys": "would also change or miss",
    "layout not editable in place": "cannot edit",
    "not deployed": "has deployed",
}


def refusal_class(message: str) -> str:
    for name, needle in REFUSALS.items():
        if needle in message:
            return name
    raise AssertionError(f"promotion refused for an unknown reason: {message}")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    source=documents(source=True),
    target=documents(),
    seeds=st.tuples(st.integers(0, 2**32), st.integers(0, 2**32)),
)
def promotion_is_all_or_nothing(
    tmp_path_factory: pytest.TempPathFactory,
    source: dict[str, Any],
    target: dict[str, Any],
    seeds: tuple[int, int],
) -> None:
    project = tmp_path_factory.mktemp("fuzz")
    source.setdefault("config", {}).update({k: v for k, v in TEAMS.items()})
    src_text, _ = render(source, seeds[0])
    dst_text, lay = render(target, seeds[1])
    # the renderer is honest: the text is the intended document
    assert _plain(parse_document(src_text, "src")) == expected_doc(source, src_text)
    assert _plain(parse_document(dst_text, "dst")) == expected_doc(target, dst_text)
    (project / "Pulumi.src.yaml").write_bytes(src_text.encode())
    (project / "Pulumi.dst.yaml").write_bytes(dst_text.encode())
    version = (source["config"].get(KUEUE) or {}).get("version", PIN)
    try:
        result = promote.promote("src", "dst", {"kueueVersion": version}, project)
    except promote.PromotionError as error:
        name = refusal_class(str(error))
        OUTCOMES[f"refused: {name}"] += 1
        event(f"refused: {name}")
        assert (project / "Pulumi.dst.yaml").read_bytes() == dst_text.encode()
        if name == "would change other keys":
            # only when a changed key sits in an anchored mapping that an alias repeats
            assert "other-project:alias: *manager" in dst_text, str(error)
        return
    OUTCOMES["noop" if result.noop else "promoted"] += 1
    event("noop" if result.noop else "promoted")
    new_text = (project / "Pulumi.dst.yaml").read_bytes().decode()
    # what was written is the plan, and a promotion changes the Kueue block only through
    # the travelling keys it lists
    assert new_text == result.new_text
    if not result.noop:
        assert new_text != dst_text
        assert result.changes, "a promotion that changes the file names what it changed"
        travelling = {
            r.dotted for r in promotion_rules.RULES if r.rule is not promotion_rules.Rule.STAYS
        }
        for line in result.changes:
            assert line.split(": ", 1)[0] in travelling, line
    new = _plain(parse_document(new_text, "dst"))
    old = expected_doc(target, dst_text)
    load_stack_config(config_of(parse_document(new_text, "dst")))
    src_kueue = _plain((source["config"] or {}).get(KUEUE) or {})
    old_kueue = (old.get("config") or {}).get(KUEUE) or {}
    new_kueue = (new.get("config") or {}).get(KUEUE) or {}
    for rule in promotion_rules.RULES:
        s = yamledit.get(src_kueue, rule.path)
        o, n = yamledit.get(old_kueue, rule.path), yamledit.get(new_kueue, rule.path)
        if rule.rule is promotion_rules.Rule.STAYS:
            assert n == o, rule.dotted
        elif rule.rule is promotion_rules.Rule.VERSION:
            assert n == s, rule.dotted
        elif rule.rule is promotion_rules.Rule.TRAVELS:
            assert n == (s if s is not yamledit.REMOVE else o), rule.dotted
        else:  # the manifest's place and checksum: FROM's, or TO's own
            assert n in (s, o), rule.dotted
    strip = lambda d: {k: v for k, v in d.items() if k != "config"}  # noqa: E731
    assert strip(new) == strip(old)
    others = lambda d: {k: v for k, v in (d.get("config") or {}).items() if k != KUEUE}  # noqa: E731
    assert others(new) == others(old)
    for comment in lay.kept_comments:
        assert comment in new_text, comment
    assert ("\r\n" in new_text) == ("\r\n" in dst_text)
    if not result.noop:
        assert new_text.endswith("\n") == dst_text.endswith("\n") or not dst_text.strip()


# A promoter that refused everything, or promoted nothing, would pass every check above:
# the property must also see real promotions, in a share near what these generators give
# (about half of the examples with the everyday and the deep counts; every refusal class
# and "noop" take the rest).
PROMOTED_AT_LEAST = 0.3


def test_promotion_is_all_or_nothing_in_any_layout(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    OUTCOMES.clear()
    promotion_is_all_or_nothing(tmp_path_factory)
    total = sum(OUTCOMES.values())
    assert total >= EXAMPLES, OUTCOMES
    assert OUTCOMES["promoted"] >= 1, OUTCOMES
    if total >= 20:  # a share means something from there (GPUQ_FUZZ_EXAMPLES may be fewer)
        assert OUTCOMES["promoted"] >= PROMOTED_AT_LEAST * total, OUTCOMES
