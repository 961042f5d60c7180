"""What a real pod has of its own, given to the process that plays Kueue's controller pod in
the sandbox (sandbox/kueue_pod.py): its mount paths, in a root file system built in a private
mount namespace (`pod_root_script`, run by `in_pod_root`), and its IP, for every server
Kueue opens (`bind_to_pod_ip`). The training operator's process gets the same root
(sandbox/training_operator.py).
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any

import yaml

from gpu_queues import yamlio

POD_ROOT_SCRIPT = "pod-root.sh"  # under a process's folder: builds its root, then execs it


def private_dir(d: Path) -> Path:
    """A directory only its owner can enter, whatever the umask."""
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    d.chmod(0o700)
    return d


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner can read (tokens, keys), atomically, unless unchanged.
    A kubelet would write secret volumes 0644 inside the pod; here they are on the machine."""
    if path.exists() and path.read_bytes() == data:
        return
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)  # a leftover temporary file may have had other bits
        f.write(data)
    tmp.replace(path)


def in_pod_root(
    work: Path, mounts: list[tuple[Path, str]], workdir: Path, argv: list[str]
) -> list[str]:
    """The command that runs argv in a pod's root of its own: a mount namespace of its own,
    the root built at work/root (its mount point, made here) by the script work/pod-root.sh,
    which creates nothing outside it. Through a file, not `sh -c`: the script binds every
    entry of the directories on the way to a mount path (all of /tmp's), and one argument may
    not exceed 128 KiB. unshare and sh exec in turn, so the process's pid becomes argv's."""
    root = private_dir(work / "root")
    script = work / POD_ROOT_SCRIPT
    write_private(script, pod_root_script(root, mounts, workdir, argv).encode())
    return ["unshare", "--mount", "--propagation", "private", "sh", str(script)]


def pod_root_script(
    root: Path,
    mounts: list[tuple[Path, str]],
    workdir: Path,
    argv: list[str],
    host: Path = Path("/"),
) -> str:
    """A shell script, run in a private mount namespace, that builds the pod's root file system
    at `root` and execs argv there (its pid stays the runner's child's).

    The pod's mount paths (/visibility, /tmp/k8s-webhook-server/serving-certs, ...) do not
    exist on the machine, and creating them there would leave them behind. So the root is a
    tmpfs showing the machine's own entries through bind mounts, except along the path to a
    mount target: those directories are made in the tmpfs, their other entries bound one by
    one, and the targets created there. Nothing is created or changed outside `root`."""
    targets = [_resolve(host, t) for _, t in mounts]
    q = shlex.quote
    # Unbindable: binding the machine's /work (where the root lives) must not copy it into itself.
    lines = [
        "set -e",
        f"mount -t tmpfs -o mode=0755 gpuq-pod-root {q(str(root))}",
        f"mount --make-unbindable {q(str(root))}",
    ]

    def graft(rel: Path, top: bool) -> None:
        # rel: a directory on the path to a target, made in the tmpfs; show its other entries.
        for entry in sorted(os.scandir(host / rel), key=lambda e: e.name):
            sub = rel / entry.name
            new = q(str(root / sub))
            on_path = any(t == sub or sub in t.parents for t in targets)
            if on_path and entry.is_dir(follow_symlinks=False):
                # Made in the tmpfs with the machine's mode (/tmp stays 1777).
                mode = stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode)
                lines.append(f"mkdir -m {mode:o} {new}")
                if not any(t == sub for t in targets):
                    graft(sub, top=False)
                continue
            if entry.is_symlink():
                lines.append(f"ln -s {q(os.readlink(entry.path))} {new}")
                continue
            make = "mkdir" if entry.is_dir() else "touch"
            # Top-level entries carry their submounts (/proc, /sys, /dev); deeper ones are bound
            # alone, and may vanish meanwhile (a temporary file), which is harmless.
            bind = "--rbind" if top else "--bind"
            tolerate = "" if top else " 2>/dev/null || :"
            lines.append(f"{{ {make} {new} && mount {bind} {q(entry.path)} {new}; }}{tolerate}")

    graft(Path("."), top=True)
    for (src, _), target in zip(mounts, targets, strict=True):
        t = q(str(root / target))
        lines.append(f"mkdir -p {t}")
        lines.append(f"mount --bind {q(str(src))} {t}")
    run = f"cd {q(str(workdir))} && exec " + " ".join(q(a) for a in argv)
    lines.append(f"exec chroot {q(str(root))} /bin/sh -c {q(run)}")
    return "\n".join(lines) + "\n"


def _port(address: object, default: int) -> int:
    """The port of a Go listen address (":8081", "0.0.0.0:8443"), else `default`."""
    if isinstance(address, str) and ":" in address:
        tail = address.rsplit(":", 1)[1]
        if tail.isdigit():
            return int(tail)
    return default


def bind_to_pod_ip(text: str, pod_ip: str) -> str:
    """Kueue's Configuration with every server it opens bound to the pod's IP.

    In a real pod, ":9443" means the pod's own network namespace, so its IP. The sandbox runs
    every cluster's Kueue in one namespace, where ":9443" would be every address and the
    second Kueue could not start. Binding the webhook, health, metrics and visibility servers
    to the pod IP gives each Kueue what its pod would have; ports stay as configured, so the
    Services' targetPorts still reach them. Text that is not a Configuration is left alone.
    """
    try:
        config = yamlio.load(text, "the manager Configuration")
    except (yaml.YAMLError, yamlio.YamlRefused):
        return text
    if not isinstance(config, dict):
        return text

    def section(key: str) -> dict[str, Any]:
        value = config.get(key)
        if not isinstance(value, dict):
            value = config[key] = {}
        return value

    section("webhook")["host"] = pod_ip
    health = section("health")
    health["healthProbeBindAddress"] = (
        f"{pod_ip}:{_port(health.get('healthProbeBindAddress'), 8081)}"
    )
    metrics = section("metrics")
    if str(metrics.get("bindAddress")) != "0":  # "0" switches the metrics server off
        metrics["bindAddress"] = f"{pod_ip}:{_port(metrics.get('bindAddress'), 8443)}"
    section("visibilityServer")["bindAddress"] = pod_ip
    if str(config.get("pprofBindAddress") or "0") != "0":
        config["pprofBindAddress"] = f"{pod_ip}:{_port(config['pprofBindAddress'], 8083)}"
    return yaml.safe_dump(config, sort_keys=False)


def _resolve(host: Path, target: str) -> Path:
    """The mount target relative to the root, through the machine's symlinks (/var/run -> /run)."""
    real = Path(os.path.realpath(host / target.lstrip("/")))
    return real.relative_to(host.resolve())
