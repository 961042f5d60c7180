"""A Kubernetes API client built from a kubeconfig in memory: no key or token touches disk.
The one place the project and its sandbox build clients: api_client for a stack's kubeconfig
(the secret's text, or $KUBECONFIG when it is unset), file_client for a file the caller names.

The kubernetes package's own loader writes the client key and certificates of a kubeconfig's
`*-data` fields to temporary files and removes them only at interpreter exit, so a killed
`pulumi up` leaves the key behind. Here the CA goes to the TLS context as data, and the
client certificate and key reach OpenSSL through a pipe. A kubeconfig that cannot be used
is a KubeconfigError naming `gpu-queues:kubernetes` and what is wrong, never its content.

Supported, as kubectl resolves them: the selected or current context (several $KUBECONFIG
files merged, the first definition of a name winning), a cluster's server,
certificate-authority(-data), insecure-skip-tls-verify, tls-server-name and an http(s)
proxy-url; a user's client-certificate(-data) and client-key(-data), token or tokenFile,
or an exec credential plugin (client.authentication.k8s.io, as kubectl runs it). Refused
with an explanation: auth-provider (removed from kubectl in 1.26) and username/password
(removed from the API server in 1.19).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.exec_provider import ExecProvider
from kubernetes.config.kube_config import ConfigNode

from gpu_queues import keys, yamlio
from gpu_queues.files import NotReadable, read_bytes, read_text
from gpu_queues.kueue.fields import api_server_url_problem

KEY = f"{keys.PROJECT}:{keys.KEY_KUBERNETES}"
BASE = "\0base"  # marks, inside a merged entry, the directory of the file it came from


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message names the config key and the problem."""


@dataclass(frozen=True)
class Connection:
    """What one kubeconfig context says about reaching its API server."""

    server: str
    ca: bytes | None = None  # PEM
    insecure: bool = False
    tls_server_name: str | None = None
    proxy_url: str | None = None
    client_cert: bytes | None = None  # PEM
    client_key: bytes | None = None  # PEM
    token: str | None = None

    def __repr__(self) -> str:  # never show a key or token in a traceback
        return f"Connection(server={self.server!r})"


@dataclass(frozen=True)
class _Source:
    """Where the kubeconfig came from, for messages and relative file paths."""

    label: str  # names the config key, or $KUBECONFIG when the key is unset
    base: Path  # relative paths in the file are relative to this directory


def _problem(source: _Source, what: str) -> KubeconfigError:
    return KubeconfigError(f"{source.label}: {what}")


def _parse(text: str, source: _Source) -> dict[str, Any]:
    try:
        doc = yamlio.load(text, source.label)
    except yamlio.YamlRefused as exc:
        raise KubeconfigError(str(exc)) from None  # names the line and key, never a value
    except yaml.YAMLError as exc:
        # The parser's message quotes the offending line, which may hold a key: position only.
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise _problem(source, f"is not valid YAML{where}") from None
    if not isinstance(doc, dict):
        raise _problem(source, "is not a kubeconfig (expected a mapping with contexts)")
    return doc


def _named(doc: Mapping[str, Any], section: str, source: _Source) -> dict[str, dict[str, Any]]:
    """`clusters`, `users` or `contexts` as name -> body; the first definition wins."""
    entries = doc.get(section) or []
    if not isinstance(entries, list):
        raise _problem(source, f"`{section}` must be a list")
    found: dict[str, dict[str, Any]] = {}
    inner = section[:-1]  # clusters -> cluster
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _problem(source, f"every entry of `{section}` needs a name")
        body = entry.get(inner) or {}
        if not isinstance(body, dict):
            raise _problem(source, f"{inner} {entry['name']!r}: `{inner}` must be a mapping")
        found.setdefault(entry["name"], body)
    return found


def _merged(files: list[Path], named: bool = False) -> tuple[dict[str, Any], _Source]:
    """kubectl's merge of the $KUBECONFIG files: the first definition of a name wins, and the
    first current-context. Each entry keeps its file's directory for its relative paths.
    named: the files were named by the caller (file_client), not found through $KUBECONFIG."""
    shown = os.pathsep.join(map(str, files))
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    current = None
    for path in files:
        label = (
            f"kubeconfig {path}"
            if named
            else f"{KEY} is unset, so $KUBECONFIG's {path} is used; it"
        )
        source = _Source(label, path.parent)
        try:
            text = read_text(path)
        except NotReadable as exc:
            raise _problem(source, f"cannot be read ({exc.reason})") from None
        doc = _parse(text, source)
        for section in ("clusters", "users", "contexts"):
            for name, body in _named(doc, section, source).items():
                merged[section].append({"name": name, section[:-1]: {**body, BASE: path.parent}})
        current = current or doc.get("current-context")
    merged["current-context"] = current
    label = (
        f"kubeconfig {shown}" if named else f"{KEY} is unset, so $KUBECONFIG ({shown}) is used; it"
    )
    return merged, _Source(label, files[0].parent)


def _ambient_files() -> list[Path]:
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    if not paths:
        return [Path("~/.kube/config").expanduser()]
    existing = [p for p in paths if p.exists()]
    return existing or paths[:1]


def _file_or_data(
    body: Mapping[str, Any], key: str, base: Path, source: _Source, where: str
) -> bytes | None:
    """`<key>-data` (base64) or `<key>` (a file path), read into memory."""
    data = body.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError):
            raise _problem(source, f"{where}: `{key}-data` is not valid base64") from None
    path = body.get(key)
    if path:
        full = Path(str(path)).expanduser()
        full = full if full.is_absolute() else Path(body.get(BASE) or base) / full
        try:
            return read_bytes(full)
        except NotReadable as exc:
            raise _problem(
                source, f"{where}: `{key}` {full} cannot be read ({exc.reason})"
            ) from None
    return None


def validate(kubeconfig: str | None, context: str | None) -> None:
    """Raise KubeconfigError if the context cannot be used, without running an exec plugin
    (its command is only checked to be given): for checking config before anything runs."""
    resolve(kubeconfig, context, run_exec=False)


def resolve(
    kubeconfig: str | None,
    context: str | None,
    run_exec: bool = True,
    files: Sequence[Path] = (),
) -> Connection:
    """The connection a kubeconfig's context describes (runs its exec plugin, if any): the
    text `kubeconfig` (the stack's secret), else the named `files` (merged as kubectl merges
    $KUBECONFIG), else $KUBECONFIG's."""
    if kubeconfig:
        source = _Source(f"{KEY}.kubeconfig", Path.cwd())
        doc = _parse(kubeconfig, source)
    elif files:
        doc, source = _merged(list(files), named=True)
    else:
        doc, source = _merged(_ambient_files())
    contexts = _named(doc, "contexts", source)
    clusters = _named(doc, "clusters", source)
    users = _named(doc, "users", source)
    if not contexts:
        raise _problem(source, "has no contexts")
    name = context or doc.get("current-context")
    if not name:
        raise _problem(
            source,
            f"sets no current-context; set {KEY}.context to one of: {', '.join(sorted(contexts))}",
        )
    if name not in contexts:
        label = f"{KEY}.context" if context else f"{source.label} current-context"
        raise KubeconfigError(
            f"{label}: no context {name!r} in the kubeconfig "
            f"(it has: {', '.join(sorted(contexts))})"
        )
    ctx = contexts[name]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user")
    where = f"context {name!r}"
    if not cluster_name or cluster_name not in clusters:
        raise _problem(
            source, f"{where} names cluster {cluster_name!r}, which is not in `clusters`"
        )
    cluster = clusters[cluster_name]
    server = cluster.get("server")
    if not isinstance(server, str):
        raise _problem(source, f"cluster {cluster_name!r} needs a `server` URL (https://...)")
    bad_server = api_server_url_problem(server, plain_http=True)
    if bad_server:
        raise _problem(
            source,
            f"cluster {cluster_name!r} needs a `server` URL (https://...); "
            f"{server[:100]!r}: {bad_server}",
        )
    user: dict[str, Any] = {}
    if user_name:
        if user_name not in users:
            raise _problem(source, f"{where} names user {user_name!r}, which is not in `users`")
        user = users[user_name]
    base = Path(cluster.get(BASE) or source.base)
    proxy = cluster.get("proxy-url")
    if proxy and not str(proxy).startswith(("http://", "https://")):
        raise _problem(source, f"cluster {cluster_name!r}: only http(s) proxy-url is supported")
    conn = Connection(
        server=server.rstrip("/"),
        ca=_file_or_data(
            cluster, "certificate-authority", base, source, f"cluster {cluster_name!r}"
        ),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        proxy_url=proxy,
    )
    return _with_credentials(conn, user, str(user_name), cluster, source, run_exec)


def _with_credentials(
    conn: Connection,
    user: dict[str, Any],
    name: str,
    cluster: dict[str, Any],
    source: _Source,
    run_exec: bool,
) -> Connection:
    where = f"user {name!r}"
    base = Path(user.get(BASE) or source.base)
    if "auth-provider" in user:
        raise _problem(
            source,
            f"{where} uses an auth-provider, which kubectl dropped in 1.26: "
            "use the provider's exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)",
        )
    if "username" in user or "password" in user:
        raise _problem(
            source,
            f"{where} uses username/password, which the API server dropped in 1.19: "
            "use a client certificate, a token or an exec plugin",
        )
    cert = _file_or_data(user, "client-certificate", base, source, where)
    key = _file_or_data(user, "client-key", base, source, where)
    token: str | None = None
    if user.get("token"):
        token = str(user["token"])
    elif user.get("tokenFile"):
        token_file = Path(str(user["tokenFile"])).expanduser()
        token_file = token_file if token_file.is_absolute() else base / token_file
        try:
            token = read_text(token_file).strip()
        except NotReadable as exc:
            raise _problem(source, f"{where}: tokenFile {token_file} ({exc.reason})") from None
    elif user.get("exec"):
        spec = user["exec"]
        if not isinstance(spec, dict) or not spec.get("command") or not spec.get("apiVersion"):
            raise _problem(source, f"{where}: `exec` needs a command and an apiVersion")
        if run_exec:
            cert, key, token = _run_exec_plugin(spec, cluster, base, source, where)
    if (cert is None) != (key is None):
        raise _problem(source, f"{where}: a client certificate and a client key go together")
    return Connection(**{**conn.__dict__, "client_cert": cert, "client_key": key, "token": token})


def _run_exec_plugin(
    spec: dict[str, Any], cluster: dict[str, Any], base: Path, source: _Source, where: str
) -> tuple[bytes | None, bytes | None, str | None]:
    public = {k: v for k, v in cluster.items() if k != BASE}
    try:
        # The library's runner of credential plugins, as its own loader uses it (untyped).
        plugin = ExecProvider(  # type: ignore[no-untyped-call]
            ConfigNode("exec", spec),  # type: ignore[no-untyped-call]
            str(base),
            ConfigNode("cluster", public),  # type: ignore[no-untyped-call]
        )
        status: dict[str, Any] = plugin.run()  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as exc:
        raise _problem(source, f"{where}: the exec plugin failed: {exc}") from None
    if status.get("token"):
        return None, None, str(status["token"])
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if cert and key:
        return str(cert).encode(), str(key).encode(), None
    raise _problem(source, f"{where}: the exec plugin returned neither a token nor a certificate")


@contextmanager
def _memory_path(data: bytes) -> Iterator[str]:
    """A path OpenSSL can open to read `data`, the bytes only ever in memory: an anonymous
    memory file on Linux, else a pipe fed by a thread. Either vanishes with the process."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        fd = memfd_create("gpu-queues-kubeconfig", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        try:
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
        except BrokenPipeError:  # the reader gave up (a bad certificate): nothing to do
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield f"/dev/fd/{read_fd}"
    finally:
        os.close(read_fd)
        writer.join(timeout=5)


def _no_passphrase() -> bytes:
    # OpenSSL would otherwise prompt on the terminal, in the middle of `pulumi up`.
    raise KubeconfigError(f"{KEY}: the client key is encrypted; kubeconfig keys must not be")


def ssl_context(conn: Connection, source_label: str = KEY) -> ssl.SSLContext:
    """TLS to the API server from data in memory: the CA, the client certificate and key."""
    ctx = ssl.create_default_context(cadata=conn.ca.decode(errors="replace") if conn.ca else None)
    if conn.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if conn.client_cert is not None and conn.client_key is not None:
        try:
            with _memory_path(conn.client_cert) as cert, _memory_path(conn.client_key) as key:
                ctx.load_cert_chain(cert, key, password=_no_passphrase)
        except ssl.SSLError as exc:
            raise KubeconfigError(
                f"{source_label}: the client certificate or key cannot be used ({exc.reason})"
            ) from None
        except OSError:  # OpenSSL left errno set: the pair was refused all the same
            raise KubeconfigError(
                f"{source_label}: the client certificate or key cannot be used"
            ) from None
    return ctx


def api_client(kubeconfig: str | None, context: str | None) -> client.ApiClient:
    """An ApiClient for the context of the kubeconfig text (the stack's secret; None:
    $KUBECONFIG's files); the caller closes it."""
    return _client(lambda: resolve(kubeconfig, context), KEY)


def file_client(path: Path | str, context: str | None = None) -> client.ApiClient:
    """An ApiClient for a kubeconfig file named by the caller (a sandbox cluster's): the file
    is read into memory like the stack's secret, paths in it are relative to its directory,
    and a problem is named after the file. The caller closes it."""
    return _client(lambda: resolve(None, context, files=[Path(path)]), f"kubeconfig {path}")


def _client(connection: Callable[[], Connection], label: str) -> client.ApiClient:
    """The one construction of an ApiClient here: TLS from memory, the token as a header."""
    try:
        conn = connection()
        ctx = ssl_context(conn, label)
    except ssl.SSLError as exc:
        raise KubeconfigError(
            f"{label}: the certificate authority cannot be used ({exc.reason})"
        ) from None
    configuration = client.Configuration()
    configuration.host = conn.server
    if conn.token:
        configuration.api_key = {"BearerToken": f"Bearer {conn.token}"}
    api = client.ApiClient(configuration)
    # The generated client would hand file paths to urllib3; it gets the in-memory context.
    pool: dict[str, Any] = {"ssl_context": ctx, "maxsize": 4}
    if conn.tls_server_name:
        pool["server_hostname"] = conn.tls_server_name
    api.rest_client.pool_manager = (
        urllib3.ProxyManager(conn.proxy_url, **pool)
        if conn.proxy_url
        else urllib3.PoolManager(**pool)
    )
    return api
