"""The readiness probe's Kubernetes client, built in memory from a kubeconfig: against a real
TLS server on loopback (client certificates, tokens, an exec plugin), no key or token is ever
written to disk, and an unusable kubeconfig is refused naming gpu-queues:kubernetes.

(The kubernetes package's own loader writes a kubeconfig's key data to temporary files that
only a normal interpreter exit removes; the no-write tests fail with it.)"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from gpu_queues.components.readiness import probe_webhooks
from gpu_queues.kueue.client import KubeconfigError, api_client, file_client, resolve, validate

pytestmark = pytest.mark.unit

FLAVORS = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"


# --- a CA, a server certificate and a client certificate, made with openssl ------------------


@dataclass
class Pki:
    dir: Path

    def pem(self, name: str) -> bytes:
        return (self.dir / name).read_bytes()

    def b64(self, name: str) -> str:
        return base64.b64encode(self.pem(name)).decode()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _rsa_keys(d: Path, *names: str) -> None:
    """RSA 2048 keys, as kubeadm makes them, generated side by side (each takes 0.1-0.2 s)."""
    runs = [
        subprocess.Popen(
            ["openssl", "genrsa", "-out", str(d / f"{name}.key"), "2048"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for name in names
    ]
    for run in runs:
        _, err = run.communicate()
        assert run.returncode == 0, err


def _signed(d: Path, name: str, subject: str, ca: str, ext: str) -> None:
    if not (d / f"{name}.key").exists():
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", str(d / f"{name}.key"))  # fmt: skip
    _openssl("req", "-new", "-key", str(d / f"{name}.key"), "-subj", subject, "-out", str(d / "r"))
    (d / "ext").write_text(ext)
    _openssl(
        "x509", "-req", "-in", str(d / "r"), "-CA", str(d / f"{ca}.crt"),
        "-CAkey", str(d / f"{ca}.key"), "-CAcreateserial", "-days", "2",
        "-extfile", str(d / "ext"), "-out", str(d / f"{name}.crt"),
    )  # fmt: skip


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """The keys a client presents (the probe's, and one that does not match its certificate)
    are RSA; the stand-in's own CAs and server use P-256 keys, which take no time to make."""
    d = tmp_path_factory.mktemp("pki")
    _rsa_keys(d, "client", "stranger")
    for ca in ("ca", "other-ca"):
        _openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(d / f"{ca}.key"),
            "-subj", f"/CN={ca}", "-days", "2", "-out", str(d / f"{ca}.crt"),
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        )  # fmt: skip
    _signed(
        d,
        "server",
        "/CN=kube-apiserver",
        "ca",
        "subjectAltName=IP:127.0.0.1,DNS:api.cluster.example\nextendedKeyUsage=serverAuth\n",
    )
    _signed(d, "client", "/O=teams/CN=probe-user", "ca", "extendedKeyUsage=clientAuth\n")
    _signed(d, "stranger", "/CN=stranger", "other-ca", "extendedKeyUsage=clientAuth\n")
    return Pki(d)


# --- an API server stand-in: TLS with client certificates, answers the dry-run create --------


@dataclass
class Seen:
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def api_server(pki: Pki) -> Iterator[tuple[str, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            subject = dict(x[0] for x in peer["subject"]) if peer else {}
            seen.requests.append(
                {
                    "path": self.path,
                    "user": subject.get("commonName"),
                    "authorization": self.headers.get("Authorization"),
                    "kind": body.get("kind"),
                }
            )
            out = json.dumps({**body, "metadata": {"name": "gpu-queues-readiness-x"}}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: object) -> None:
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.dir / "server.crt", pki.dir / "server.key")
    ctx.load_verify_locations(pki.dir / "ca.crt")
    ctx.verify_mode = ssl.CERT_OPTIONAL  # token users come without a certificate
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    # shutdown() waits for the loop's next poll: half a second at the default interval
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def kubeconfig(
    server: str,
    user: dict[str, Any],
    cluster: dict[str, Any] | None = None,
    context: str = "ctx",
    **top: Any,
) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": context,
            "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
            **top,
        }
    )


def cert_user(pki: Pki, name: str = "client") -> dict[str, str]:
    return {
        "client-certificate-data": pki.b64(f"{name}.crt"),
        "client-key-data": pki.b64(f"{name}.key"),
    }


def dry_run(api: client.ApiClient) -> None:
    client.CustomObjectsApi(api).create_cluster_custom_object(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {}},
        dry_run="All",
        _request_timeout=5,
    )


# --- no key on disk ---------------------------------------------------------------------


class Writes:
    """Every file the process opens for writing or creates, seen through audit hooks."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.on = False
        sys.addaudithook(self.hook)

    @contextmanager
    def recording(self) -> Iterator[list[str]]:
        self.paths, self.on = [], True
        try:
            yield self.paths
        finally:
            self.on = False

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.on:
            return
        if event == "open" and not isinstance(args[0], int):
            path, mode, flags = args
            writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT
            if (mode and any(c in mode for c in "wax+")) or (flags or 0) & writes:
                self.add(str(path))
        elif event in ("tempfile.mkstemp", "tempfile.mkdtemp", "os.mkdir", "os.rename"):
            self.add(f"{event} {args[0]}")

    def add(self, what: str) -> None:
        # The import system caching a module's bytecode (a lazy import inside the recorded
        # code, when bytecode writing is on) is not the code under test writing a file.
        if not _BYTECODE.search(what):
            self.paths.append(what)


_PREFIX = sys.pycache_prefix and f"|^(os\\.mkdir |os\\.rename )?{re.escape(sys.pycache_prefix)}"
_BYTECODE = re.compile(r"__pycache__|\.pyc(\.\d+)?$" + (_PREFIX or ""))


_WRITES = Writes()


@pytest.fixture(params=["memfd", "pipe"])
def memory(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways the key reaches OpenSSL: a memory file (Linux), a pipe (elsewhere)."""
    if request.param == "pipe":
        monkeypatch.delattr(os, "memfd_create")
    return str(request.param)


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty temporary directory for the duration of the test."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_the_probe_writes_no_file_and_authenticates_with_the_key_from_the_kubeconfig(
    pki: Pki, api_server: tuple[str, Seen], private_tmp: Path, memory: str
) -> None:
    url, seen = api_server
    config = kubeconfig(url, cert_user(pki), {"certificate-authority-data": pki.b64("ca.crt")})
    before = len(seen.requests)
    with _WRITES.recording() as written:
        report = probe_webhooks(config, None, timeout=5, interval=0.1)
    assert "serving" in report
    assert seen.requests[before:] == [
        {"path": f"{FLAVORS}?dryRun=All", "user": "probe-user", "authorization": None,
         "kind": "ResourceFlavor"}
    ]  # fmt: skip
    assert written == []
    assert list(private_tmp.iterdir()) == []


def test_a_bearer_token_is_sent_and_nothing_written(
    pki: Pki, api_server: tuple[str, Seen], private_tmp: Path
) -> None:
    url, seen = api_server
    config = kubeconfig(url, {"token": "t0k3n"}, {"certificate-authority-data": pki.b64("ca.crt")})
    with _WRITES.recording() as written:
        api = api_client(config, None)
        dry_run(api)
        api.close()
    assert seen.requests[-1]["authorization"] == "Bearer t0k3n"
    assert seen.requests[-1]["user"] is None
    assert written == []


def test_an_exec_plugin_token_is_used(
    pki: Pki, api_server: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = api_server
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        "                  'status': {'token': 'from-' + os.environ['WHO']}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": "WHO", "value": "plugin"}],
            "interactiveMode": "Never",
        }
    }
    config = kubeconfig(url, user, {"certificate-authority-data": pki.b64("ca.crt")})
    api = api_client(config, None)
    dry_run(api)
    api.close()
    assert seen.requests[-1]["authorization"] == "Bearer from-plugin"


def test_an_exec_plugin_certificate_is_used(
    pki: Pki, api_server: tuple[str, Seen], tmp_path: Path
) -> None:
    url, seen = api_server
    status = {
        "clientCertificateData": pki.pem("client.crt").decode(),
        "clientKeyData": pki.pem("client.key").decode(),
    }
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1',\n"
        f"                  'kind': 'ExecCredential', 'status': {status!r}}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(plugin)],
        }
    }
    config = kubeconfig(url, user, {"certificate-authority-data": pki.b64("ca.crt")})
    api = api_client(config, None)
    dry_run(api)
    api.close()
    assert seen.requests[-1]["user"] == "probe-user"


def test_files_named_by_the_ambient_kubeconfig_are_read_relative_to_it(
    pki: Pki, api_server: tuple[str, Seen], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = api_server
    home = tmp_path / "kube"
    home.mkdir()
    for name in ("ca.crt", "client.crt", "client.key"):
        (home / name).write_bytes(pki.pem(name))
    user = {"client-certificate": "client.crt", "client-key": "client.key"}
    (home / "config").write_text(kubeconfig(url, user, {"certificate-authority": "ca.crt"}))
    empty = tmp_path / "empty-config"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    # Two files, as kubectl merges them: the first current-context wins.
    monkeypatch.setenv("KUBECONFIG", f"{empty}{os.pathsep}{home / 'config'}")
    monkeypatch.chdir(tmp_path)
    api = api_client(None, None)
    dry_run(api)
    api.close()
    assert seen.requests[-1]["user"] == "probe-user"


def test_a_named_kubeconfig_file_is_read_into_memory_relative_to_itself(
    pki: Pki,
    api_server: tuple[str, Seen],
    tmp_path: Path,
    private_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The sandbox's clients: a file named by the caller, not $KUBECONFIG (here a broken one).
    url, seen = api_server
    home = tmp_path / "cluster"
    home.mkdir()
    (home / "ca.crt").write_bytes(pki.pem("ca.crt"))
    path = home / "kubeconfig"
    path.write_text(kubeconfig(url, cert_user(pki), {"certificate-authority": "ca.crt"}))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.chdir(tmp_path)
    with _WRITES.recording() as written:
        api = file_client(path)
        dry_run(api)
        api.close()
    assert seen.requests[-1]["user"] == "probe-user"
    assert written == []
    assert list(private_tmp.iterdir()) == []


def test_a_named_kubeconfig_file_that_cannot_be_used_is_named_in_the_error(
    tmp_path: Path,
) -> None:
    with pytest.raises(KubeconfigError) as info:
        file_client(tmp_path / "missing")
    assert str(info.value).startswith(f"kubeconfig {tmp_path / 'missing'}: cannot be read")
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig(SERVER, {"token": "s3cr3t"}))
    with pytest.raises(KubeconfigError) as info:
        file_client(path, "other")
    assert "no context 'other' in the kubeconfig" in str(info.value)
    assert "s3cr3t" not in str(info.value)


def test_tls_server_name_verifies_the_server_under_that_name(
    pki: Pki, api_server: tuple[str, Seen]
) -> None:
    url, seen = api_server
    host = url.replace("127.0.0.1", "localhost")  # not in the server's certificate
    ca = {"certificate-authority-data": pki.b64("ca.crt")}
    api = api_client(kubeconfig(host, cert_user(pki), ca), None)
    with pytest.raises(Exception, match=r"certificate is not valid for .localhost."):
        dry_run(api)
    api.close()
    named = {**ca, "tls-server-name": "api.cluster.example"}
    api = api_client(kubeconfig(host, cert_user(pki), named), None)
    dry_run(api)
    api.close()
    assert seen.requests[-1]["user"] == "probe-user"


def test_a_server_from_another_ca_is_not_trusted(pki: Pki, api_server: tuple[str, Seen]) -> None:
    url, _ = api_server
    config = kubeconfig(
        url, cert_user(pki), {"certificate-authority-data": pki.b64("other-ca.crt")}
    )
    api = api_client(config, None)
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        dry_run(api)
    api.close()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_insecure_skip_tls_verify_is_honoured(pki: Pki, api_server: tuple[str, Seen]) -> None:
    url, seen = api_server
    config = kubeconfig(url, cert_user(pki), {"insecure-skip-tls-verify": True})
    api = api_client(config, None)
    dry_run(api)
    api.close()
    assert seen.requests[-1]["user"] == "probe-user"


# --- unusable kubeconfigs ---------------------------------------------------------------

GOOD_USER = {"token": "t"}
SERVER = "https://127.0.0.1:6443"


def bad(text: str, context: str | None = None) -> str:
    with pytest.raises(KubeconfigError) as info:
        resolve(text, context)
    message = str(info.value)
    assert message.startswith("gpu-queues:kubernetes"), message
    return message


def test_not_yaml_is_refused_without_showing_the_content() -> None:
    message = bad("apiVersion: v1\nusers: [{name: u, user: {token: s3cr3t}\n")
    assert message.startswith("gpu-queues:kubernetes.kubeconfig: is not valid YAML (line")
    assert "s3cr3t" not in message


@pytest.mark.parametrize(
    ("text", "context", "expected"),
    [
        ("just a string", None, "kubeconfig: is not a kubeconfig"),
        ("- a\n- list\n", None, "kubeconfig: is not a kubeconfig"),
        ("apiVersion: v1\nkind: Config\n", None, "kubeconfig: has no contexts"),
        ("contexts: {a: b}\n", None, "kubeconfig: `contexts` must be a list"),
        ("contexts: [{context: {cluster: c}}]\n", None, "every entry of `contexts` needs a name"),
        (
            kubeconfig(SERVER, GOOD_USER, context="prod"),
            "staging",
            "gpu-queues:kubernetes.context: no context 'staging' in the kubeconfig (it has: prod)",
        ),
        (
            kubeconfig(SERVER, GOOD_USER).replace("current-context: ctx", "current-context: ''"),
            None,
            "sets no current-context; set gpu-queues:kubernetes.context to one of: ctx",
        ),
        (
            kubeconfig(SERVER, GOOD_USER).replace("user: u\n", "user: nobody\n"),
            None,
            "context 'ctx' names user 'nobody', which is not in `users`",
        ),
        (
            kubeconfig(SERVER, GOOD_USER).replace("cluster: c\n", "cluster: elsewhere\n"),
            None,
            "context 'ctx' names cluster 'elsewhere', which is not in `clusters`",
        ),
        (
            kubeconfig("ftp://x", GOOD_USER),
            None,
            "cluster 'c' needs a `server` URL",
        ),
        (
            kubeconfig(SERVER, {"auth-provider": {"name": "gcp"}}),
            None,
            "user 'u' uses an auth-provider, which kubectl dropped in 1.26",
        ),
        (
            kubeconfig(SERVER, {"username": "admin", "password": "pw"}),
            None,
            "user 'u' uses username/password",
        ),
        (
            kubeconfig(SERVER, {"client-certificate-data": "not base64!", "client-key-data": "x"}),
            None,
            "user 'u': `client-certificate-data` is not valid base64",
        ),
        (
            kubeconfig(SERVER, {"client-certificate-data": "QQ=="}),
            None,
            "user 'u': a client certificate and a client key go together",
        ),
        (
            kubeconfig(SERVER, {"tokenFile": "/nonexistent/token"}),
            None,
            "user 'u': tokenFile /nonexistent/token",
        ),
        (
            kubeconfig(SERVER, GOOD_USER, {"certificate-authority": "/nonexistent/ca.crt"}),
            None,
            "cluster 'c': `certificate-authority` /nonexistent/ca.crt cannot be read",
        ),
        (
            kubeconfig(SERVER, GOOD_USER, {"proxy-url": "socks5://proxy:1080"}),
            None,
            "only http(s) proxy-url is supported",
        ),
        (
            kubeconfig(
                SERVER,
                {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "false"}},
            ),
            None,
            "user 'u': the exec plugin failed: exec: process returned 1",
        ),
        (
            kubeconfig(SERVER, {"exec": {"command": "true"}}),
            None,
            "user 'u': `exec` needs a command and an apiVersion",
        ),
    ],
)
def test_an_unusable_kubeconfig_is_refused_naming_the_key(
    text: str, context: str | None, expected: str
) -> None:
    assert expected in bad(text, context)


@pytest.mark.parametrize(
    ("server", "says"),
    [("https://", "it has no host"), ("https://host:port", "it is not a URL"),
     ("https://[::1", "it is not a URL"), ("https://h:99999", "it is not a URL"),
     ("https://a b", "whitespace or control characters"),
     ("https://h\nX", "whitespace or control characters"),
     ("https://under_score.example", "neither an IP address nor a DNS name"),
     ("https://admin:pw@h.example", "carries credentials"),
     ("https:h.example", "it has no host"), ("ftp://h.example", "must start with https://")],
)  # fmt: skip
def test_a_server_that_is_not_an_api_servers_url_is_refused_naming_the_cluster(
    server: str, says: str
) -> None:
    # Issue 42, class 4: a `server` only had to start with https://, so "https://" or
    # "https://[::1" went on to the HTTP client (a traceback in gpuq status).
    message = bad(kubeconfig(server, GOOD_USER))
    assert "cluster 'c' needs a `server` URL (https://...)" in message
    assert says in message, message


@pytest.mark.parametrize(
    "server", ["http://127.0.0.1:8080", "https://api.cluster.example/k8s/clusters/c-1", SERVER]
)
def test_a_servers_url_with_http_or_a_path_is_taken(server: str) -> None:
    # kubectl's insecure local ports and proxies that serve clusters under a path (Rancher).
    assert resolve(kubeconfig(server, GOOD_USER), None).server == server


def test_an_unreadable_ambient_kubeconfig_names_the_unset_key_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    message = bad_ambient()
    assert f"gpu-queues:kubernetes is unset, so $KUBECONFIG's {tmp_path / 'missing'}" in message
    assert "cannot be read" in message


def bad_ambient() -> str:
    with pytest.raises(KubeconfigError) as info:
        resolve(None, None)
    return str(info.value)


def test_a_key_that_does_not_match_its_certificate_is_refused(pki: Pki, memory: str) -> None:
    user = {
        "client-certificate-data": pki.b64("client.crt"),
        "client-key-data": pki.b64("stranger.key"),
    }
    with pytest.raises(KubeconfigError, match="client certificate or key cannot be used"):
        api_client(kubeconfig(SERVER, user), None)


def test_an_encrypted_key_is_refused_without_a_prompt(pki: Pki, tmp_path: Path) -> None:
    _openssl(
        "rsa", "-in", str(pki.dir / "client.key"), "-aes256", "-passout", "pass:pw",
        "-out", str(tmp_path / "enc.key"),
    )  # fmt: skip
    user = {
        "client-certificate-data": pki.b64("client.crt"),
        "client-key-data": base64.b64encode((tmp_path / "enc.key").read_bytes()).decode(),
    }
    with pytest.raises(KubeconfigError, match="the client key is encrypted"):
        api_client(kubeconfig(SERVER, user), None)


def test_the_probe_reports_a_bad_kubeconfig_instead_of_retrying() -> None:
    with pytest.raises(
        KubeconfigError, match=r"^gpu-queues:kubernetes\.kubeconfig: has no contexts$"
    ):
        probe_webhooks("apiVersion: v1\nkind: Config\n", None, timeout=60)


def test_validation_checks_the_kubeconfig_without_running_its_exec_plugin(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "touch",
            "args": [str(ran)],
        }
    }
    validate(kubeconfig(SERVER, user), None)
    assert not ran.exists()
    with pytest.raises(KubeconfigError, match=r"no context 'other'"):
        validate(kubeconfig(SERVER, user), "other")


def test_the_connection_never_shows_its_secrets() -> None:
    conn = resolve(kubeconfig(SERVER, {"token": "s3cr3t"}), None)
    assert conn.token == "s3cr3t"
    assert "s3cr3t" not in repr(conn)


def test_the_sandboxes_clients_keep_the_admin_key_in_memory_too(
    pki: Pki, tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pod runner, the walkthrough and the rehearsal hold the sandbox admin's kubeconfig
    # all along.
    from sandbox.kueue_pod import Runner
    from sandbox.rehearse.kube import RehearsalClient
    from sandbox.walkthrough import KubeSession

    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig(SERVER, cert_user(pki)))
    monkeypatch.setenv("KUBECONFIG", str(path))
    with _WRITES.recording() as written:
        KubeSession(str(path))
        KubeSession()  # $KUBECONFIG
        RehearsalClient(path)
        Runner(work=tmp_path / "work", log=tmp_path / "log")
    assert written == []
    assert list(private_tmp.iterdir()) == []
