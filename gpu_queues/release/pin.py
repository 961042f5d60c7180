"""`make pin-kueue`: pin the Kueue release manifest (path or url, and sha256) in every stack.

    python -m gpu_queues.release.pin [--version vX.Y.Z] [--file manifests.yaml] [--check]
                                   [--no-build]

Default: render the release manifest of the pinned version from the Kueue module with the
pinned kubectl (gpu_queues.release.module, the same render the sandbox uses) into
.kueue/<version>/manifests.yaml and pin that path with its sha256. With --file: hash a
release file the user downloaded and pin the official release URL of the version with its
sha256 (a stack that reads a mirror URL keeps its mirror). Either way the manifest must pass
the release allowlist first (gpu_queues.release.allowlist), so a bad file is never pinned.

Every Pulumi.<stack>.yaml that installs Kueue at that version gets the pin in its
`gpu-queues:kueue.manifest` block; nothing else changes: the keys are edited with
gpu_queues.config.yamledit (the stack-file editor promote uses: only the edited entries are spliced
into
the file, comments, secure values and layout kept), the result is parsed back and compared
with the intended change, and only then are the files replaced, each in one rename. --check
writes nothing and fails when a stack is not pinned to the manifest.

Another VERSION moves the pin (docs/upgrading.md): the release gets a wrapper module
(toolchain/go/kueue/<version>/, generated when new) and recorded facts
(gpu_queues/kueue/releases.json) if it has none, its controller is built (or linked from the
cache: every supported release stays cached, so going back is a relink), the manifest is
rendered and checked, and then KUEUE_VERSION in toolchain/pins.env and the manifest pin of
every stack that follows it move together. A downgrade across a CRD storage-version change
is refused. It prints what each stack's owners must change for the new version (config the
new release would refuse: exit status 3) and what behaves differently (review).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from gpu_queues import keys, yamlio
from gpu_queues.config import yamledit
from gpu_queues.config.model import KueueConfig
from gpu_queues.config.stackfile import STACK_BOUNDS
from gpu_queues.files import NotReadable, OutsideProject, inside, read_text
from gpu_queues.invoked import prog
from gpu_queues.kueue.versions import (
    Advice,
    DeriveError,
    advice,
    derive,
    parse_version,
    release,
    write_release,
)
from gpu_queues.release import digests
from gpu_queues.release.allowlist import check_release
from gpu_queues.release.catalogue import expected_image
from gpu_queues.release.manifest import ManifestError, parse_documents, parse_manifest
from gpu_queues.release.module import (
    ROOT,
    RenderError,
    module_dir,
    pinned_version,
    render_release,
    rendered_relpath,
    wrapper_dir,
)
from gpu_queues.release.upgrade import LiveCrd, LiveKueue, target_crds, upgrade_problems


class PinError(Exception):
    """The pin cannot be made; nothing was written."""


def release_url(version: str) -> str:
    """The official release manifest of `version` (what kueue.manifest_url defaults to)."""
    return KueueConfig.model_validate({"version": version}).manifest_url


@dataclass
class StackPin:
    stack: str
    path: Path
    old_text: str
    new_text: str
    notes: list[str] = field(default_factory=list)
    advice: list[Advice] = field(default_factory=list)
    """What moving this stack to another Kueue version changes for its owners."""

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.old_text.splitlines(keepends=True),
                self.new_text.splitlines(keepends=True),
                f"a/{self.path.name}",
                f"b/{self.path.name}",
            )
        )


# --- editing one stack file -----------------------------------------------------------------


def _scalar(value: str) -> str:
    """`value` as a YAML scalar that every reader (PyYAML's 1.1 rules too) reads as a string:
    a checksum of digits only, say, must not come back as a number."""
    try:
        plain = yamlio.load(value, "the pinned value") if value else None
    except yamlio.YamlRefused:  # a number too long to read is no string either
        plain = None
    return value if isinstance(plain, str) and plain == value else DoubleQuotedScalarString(value)


def pin_text(text: str, source: dict[str, str], digest: str, where: str) -> str:
    """`text` with gpu-queues:kueue.manifest set to `source` (path or url) and `digest`.

    The edit is gpu_queues.config.yamledit's (the one stack-file editor, promote's too): only the
    edited
    entries are spliced in, every other byte (comments, secure values, layout) is kept. The
    result is parsed back and must be exactly the intended change."""
    try:
        expected = yamlio.load(text, where)
    except yamlio.YamlRefused as exc:
        raise PinError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise PinError(f"{where} is not valid YAML: {exc}") from None
    if not isinstance(expected, dict) or not isinstance(expected.get("config"), dict):
        raise PinError(f"{where} has no `config:` mapping")
    kueue_key = keys.stack_file_key(expected["config"], keys.KEY_KUEUE)
    kueue_now = expected["config"].get(kueue_key) or {}
    if not isinstance(kueue_now, dict) or not isinstance(kueue_now.get("manifest", {}), dict):
        raise PinError(f"{where}: gpu-queues:kueue and its manifest must be mappings")
    manifest_now = dict(kueue_now.get("manifest") or {})
    for key in ("path", "url"):
        if key not in source:
            manifest_now.pop(key, None)
    manifest_now.update(source)
    manifest_now["sha256"] = digest
    expected["config"][kueue_key] = {**kueue_now, "manifest": manifest_now}
    try:
        KueueConfig.model_validate(expected["config"][kueue_key])
    except ValidationError as exc:
        raise PinError(f"{where}: gpu-queues:kueue would not be valid: {exc}") from None

    at = ("config", kueue_key, "manifest")
    edits: dict[tuple[str, ...], Any] = {
        (*at, key): _scalar(source[key]) if key in source else yamledit.REMOVE
        for key in ("path", "url")
    }
    edits[(*at, "sha256")] = _scalar(digest)
    try:
        new_text = yamledit.edit(text, edits, keep=1)
    except yamledit.EditError as exc:
        raise PinError(f"{where} cannot be edited safely: {exc}") from None
    try:
        if yamlio.load(new_text, where) == expected:
            return new_text
    except (yaml.YAMLError, yamlio.YamlRefused):
        pass
    raise PinError(
        f"{where}: the edited file does not read back as the intended change; nothing was "
        "written. Set gpu-queues:kueue.manifest by hand (docs/kueue-manifest.md)"
    )


# --- the whole pin --------------------------------------------------------------------------


def _stack_files(root: Path) -> list[tuple[str, Path]]:
    found = []
    for path in sorted(root.glob("Pulumi.*.yaml")):
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        if stack:
            found.append((stack, path))
    return found


def check_manifest(data: bytes, version: str, source: str) -> str:
    """The manifest's sha256, after it passed the release allowlist for `version`."""
    try:
        docs = parse_documents(data, source)
    except ManifestError as error:
        raise PinError(str(error)) from None
    refusals = check_release(docs, version)
    if refusals:
        lines = "\n".join(f"  - {r}" for r in refusals)
        raise PinError(f"{source} is not a Kueue {version} release; not pinning it:\n{lines}")
    return hashlib.sha256(data).hexdigest()


def plan(
    version: str, data: bytes, source: dict[str, str], label: str, root: Path = ROOT
) -> list[StackPin]:
    """What pinning `data` (found at `source`) changes in each stack file; writes nothing.

    `version` becomes the pin: a stack without its own kueue.version follows it."""
    digest = check_manifest(data, version, label)
    pinned = pinned_version(root)
    old, new = release(pinned), release(version)
    pins = []
    for stack, path in _stack_files(root):
        where = path.name
        try:  # a folder or a dangling link can be named like a stack file
            text = read_text(path, where, STACK_BOUNDS.max_bytes)
        except NotReadable as exc:
            raise PinError(f"{exc}; every Pulumi.<stack>.yaml is pinned, so nothing was") from None
        try:
            doc = yamlio.load(text, where) or {}
        except yamlio.YamlRefused as exc:
            raise PinError(str(exc)) from None
        except yaml.YAMLError as exc:
            raise PinError(f"{where} is not valid YAML: {exc}") from None
        config = doc.get("config") if isinstance(doc, dict) else None
        kueue = (config or {}).get(keys.stack_file_key(config, keys.KEY_KUEUE)) or {}
        pin = StackPin(stack, path, text, text)
        pins.append(pin)
        if not isinstance(kueue, dict):
            raise PinError(f"{where}: gpu-queues:kueue is not a mapping")
        if kueue.get("install") is False:
            pin.notes.append("does not install Kueue: left as it is")
            continue
        if kueue.get("version", version) != version:
            pin.notes.append(
                f"runs Kueue {kueue.get('version')} (kueue.version), not {version}: left as it is"
            )
            continue
        if "version" not in kueue and pinned != version and old is not None and new is not None:
            pin.advice = advice(kueue, old, new)
        stack_source = dict(source)
        manifest = kueue.get("manifest") or {}
        if not isinstance(manifest, dict):
            raise PinError(f"{where}: gpu-queues:kueue.manifest is not a mapping")
        mirror = manifest.get("url")
        if "url" in source and isinstance(mirror, str) and mirror != source["url"]:
            stack_source["url"] = mirror
            pin.notes.append(f"keeps its mirror {mirror}, which must serve the same bytes")
        pin.new_text = pin_text(text, stack_source, digest, where)
    return pins


def _write_all(
    pins: Sequence[StackPin], extra: Sequence[tuple[Path, str]] = (), root: Path = ROOT
) -> None:
    """Each changed file replaced in one rename, after every new text was written aside; a
    file linked from outside the project is refused before anything is written."""
    staged: list[tuple[str, Path]] = []
    try:
        changes = [(inside(p.path, root), p.new_text) for p in pins if p.changed]
        changes += [(inside(path, root), text) for path, text in extra]
    except OutsideProject as error:
        raise PinError(str(error)) from None
    try:
        for path, text in changes:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o777)
            staged.append((tmp, path))
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)


def set_pinned_version(text: str, version: str) -> str:
    """pins.env `text` with KUEUE_VERSION=`version`; nothing else changes (comments stay)."""
    lines = text.splitlines(keepends=True)
    found = [i for i, line in enumerate(lines) if line.startswith("KUEUE_VERSION=")]
    if len(found) != 1:
        raise PinError("toolchain/pins.env must have exactly one KUEUE_VERSION= line")
    end = "\n" if lines[found[0]].endswith("\n") else ""
    lines[found[0]] = f"KUEUE_VERSION={version}{end}"
    return "".join(lines)


Builder = Callable[[str, Path], None]


def build_kueue(version: str, root: Path) -> None:
    """Build (or link from the cache) the controller of `version`, as make toolchain does."""
    env = {**os.environ, "KUEUE_VERSIONS": version}
    done = subprocess.run(
        ["bash", str(root / "toolchain" / "build.sh"), "kueue"], cwd=root, env=env, check=False
    )
    if done.returncode != 0:
        raise PinError(f"building Kueue {version} failed (toolchain/build.sh kueue); nothing moved")


def add_release(version: str, root: Path) -> list[str]:
    """Make `version` a supported release: its wrapper module, its facts and its digests
    (gpu_queues.release.digests). Returns what was
    added (new files to review and commit); nothing when it is already supported."""
    added = []
    wrapper = wrapper_dir(version, root)
    if not (wrapper / "go.sum").is_file():
        gen = root / "toolchain" / "gen-wrappers.sh"
        if subprocess.run(["bash", str(gen), "kueue", version], cwd=root).returncode != 0:
            raise PinError(f"cannot make the wrapper module of Kueue {version} (gen-wrappers.sh)")
        added.append(str(wrapper.relative_to(root)) + "/")
    if release(version) is None:
        try:
            write_release(derive(version, module_dir(version, root)))
        except (RenderError, DeriveError, OSError) as error:
            raise PinError(f"cannot record the facts of Kueue {version}: {error}") from None
        added.append("gpu_queues/kueue/releases.json")
    if digests.load(version) is None:
        try:
            digests.write(digests.rendered_digest(version, root))
        except (RenderError, OSError, ValueError) as error:
            raise PinError(f"cannot record the digests of Kueue {version}: {error}") from None
        added.append(f"gpu_queues/release/digests/{version}.json")
    return added


def storage_refusals(old: str, old_data: bytes, new: str, new_data: bytes) -> list[str]:
    """The program's upgrade rule (gpu_queues.release.upgrade) on a cluster freshly at `old`."""
    crds = target_crds(parse_manifest(old_data, old))
    live = LiveKueue(
        expected_image(old),
        {n: LiveCrd(n, c.storage, (c.storage,) if c.storage else ()) for n, c in crds.items()},
    )
    return upgrade_problems(live, new, parse_manifest(new_data, new))


@dataclass
class PinResult:
    pins: list[StackPin]
    moved_from: str | None = None
    """The previous pin when the version moved."""
    added: list[str] = field(default_factory=list)
    """Files made for a newly supported release."""
    not_the_release: str | None = None
    """For a file (--file): how it differs from the release's digests, when it does; the
    stacks then refuse it unless they mark it custom (docs/kueue-manifest.md)."""


def pin(
    version: str | None = None,
    file: Path | None = None,
    root: Path = ROOT,
    check: bool = False,
    kubectl: Path | None = None,
    build: Builder | None = build_kueue,
) -> list[StackPin]:
    return pin_release(version, file, root, check, kubectl, build).pins


def pin_release(
    version: str | None = None,
    file: Path | None = None,
    root: Path = ROOT,
    check: bool = False,
    kubectl: Path | None = None,
    build: Builder | None = build_kueue,
) -> PinResult:
    """Pin the manifest of `version` (default: the pin) in every stack; another version moves
    the pin too. Nothing is written with check, or when anything fails."""
    pinned = pinned_version(root)
    version = version or pinned
    try:
        parse_version(version)
    except ValueError as error:
        raise PinError(str(error)) from None
    moving = version != pinned
    result = PinResult([], pinned if moving else None)
    if moving:
        if check:
            raise PinError(
                f"--check verifies the pinned version ({pinned}); moving to {version} writes"
            )
        result.added = add_release(version, root)
        if build is not None:
            build(version, root)
    data, source, label = _manifest(version, file, root, kubectl)
    if moving:
        _check_storage_move(pinned, version, data, root, kubectl)
    result.pins = plan(version, data, source, label, root)
    if file is not None:
        objects = [d.obj for d in parse_documents(data, label)]  # plan parsed it already
        verdict = digests.compare(objects, version)
        if not verdict.genuine:
            result.not_the_release = verdict.summary(label)
    if not check:
        extra: list[tuple[Path, str]] = []
        if moving:
            pins_env = root / "toolchain" / "pins.env"
            extra.append((pins_env, set_pinned_version(pins_env.read_text(), version)))
        _write_all(result.pins, extra, root)
        if moving and build is not None:
            build(version, root)  # relink .toolchain/bin/kueue to the new pin
    return result


def _manifest(
    version: str, file: Path | None, root: Path, kubectl: Path | None
) -> tuple[bytes, dict[str, str], str]:
    """The manifest to pin, where stacks will read it from, and how to name it: rendered from
    the pinned module (a path), or a downloaded release file (the official URL)."""
    if file is None:
        try:
            rendered = render_release(version, root, kubectl)
        except RenderError as error:
            raise PinError(str(error)) from None
        source = {"path": rendered_relpath(version)}
        return rendered.read_bytes(), source, source["path"]
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PinError(f"cannot read {file}: {exc.strerror or exc}") from None
    return data, {"url": release_url(version)}, str(file)


def _check_storage_move(
    pinned: str, version: str, data: bytes, root: Path, kubectl: Path | None
) -> None:
    """Refuse a move the upgrade rule refuses on a cluster at the pinned version."""
    try:
        old_data = render_release(pinned, root, kubectl).read_bytes()
    except RenderError as error:
        raise PinError(f"cannot render the current pin to compare: {error}") from None
    refused = storage_refusals(pinned, old_data, version, data)
    if refused:
        lines = "\n".join(f"  - {r}" for r in refused)
        raise PinError(f"moving the pin {pinned} -> {version} is refused:\n{lines}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.release.pin"),
        description="Pin the Kueue release manifest (path or url, and sha256) in every stack "
        "file that installs Kueue.",
    )
    parser.add_argument("--version", help="Kueue release vX.Y.Z (default: toolchain/pins.env)")
    parser.add_argument(
        "--file",
        type=Path,
        help="a release manifests.yaml you downloaded: pin the official URL with its sha256",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail if a stack is not pinned"
    )
    parser.add_argument(
        "--no-build", action="store_true", help="moving the pin: do not build the controller"
    )
    args = parser.parse_args(argv)
    try:
        result = pin_release(
            args.version or None,
            args.file,
            check=args.check,
            build=None if args.no_build else build_kueue,
        )
    except PinError as error:
        print(f"pin-kueue: {error}", file=sys.stderr)
        return 1
    pins = result.pins
    stale = [p for p in pins if p.changed]
    if result.moved_from:
        print(f"toolchain/pins.env: KUEUE_VERSION {result.moved_from} -> {args.version}")
    for added in result.added:
        print(f"{added}: new supported release {args.version}: review and commit it")
    if result.not_the_release:
        print(
            f"pin-kueue: warning: {result.not_the_release}. Pinned, but every stack refuses it "
            "unless it sets gpu-queues:kueue.manifest.custom: true with a reason "
            "(docs/kueue-manifest.md)",
            file=sys.stderr,
        )
    for p in pins:
        state = "would change" if args.check and p.changed else "changed" if p.changed else "ok"
        print(f"{p.path.name}: {state}" + "".join(f"; {n}" for n in p.notes))
    for p in stale:
        print(p.diff(), end="")
    required = 0
    for p in pins:
        if p.advice:
            print(f"\n{p.path.name}: moving from {result.moved_from} to {args.version}")
        for item in p.advice:
            print(f"  {item}")
            required += item.required
    if args.check and stale:
        print("pin-kueue: stacks not pinned to the manifest; run `make pin-kueue`", file=sys.stderr)
        return 1
    if required:
        print(
            f"pin-kueue: the pin moved, but {required} setting(s) above must change before "
            f"those stacks can deploy Kueue {args.version}",
            file=sys.stderr,
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
