"""A sandbox cluster's certificates and its admin kubeconfig.

Each cluster has a CA of its own, as separate clusters do: the API server's serving
certificate, an admin client (system:masters), a front proxy CA and client for aggregated
APIs, and the service account signing key. Readable by the sandbox's owner only.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from sandbox.procs import run_checked
from sandbox.topology import Cluster


def _openssl_cert(
    pki: Path, name: str, subject: str, ca: str | None, san: str | None = None
) -> None:
    key, crt = pki / f"{name}.key", pki / f"{name}.crt"
    run_checked("openssl", "genrsa", "-out", str(key), "2048")
    if ca is None:
        run_checked(
            "openssl",
            "req",
            "-x509",
            "-new",
            "-key",
            str(key),
            "-subj",
            subject,
            "-days",
            "3650",
            "-out",
            str(crt),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        )
        return
    csr = pki / f"{name}.csr"
    run_checked("openssl", "req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    ext = pki / f"{name}.ext"
    lines = [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
    ]
    if san:
        lines.append(f"subjectAltName={san}")
    ext.write_text("\n".join(lines) + "\n")
    run_checked(
        "openssl",
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(pki / f"{ca}.crt"),
        "-CAkey",
        str(pki / f"{ca}.key"),
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        str(ext),
        "-out",
        str(crt),
    )


def make_pki(c: Cluster) -> None:
    """Certificates for one cluster's life: a CA, the API server, an admin, a front proxy.
    Each cluster has a CA of its own, as separate clusters do."""
    pki = c.pki
    if (pki / "admin.crt").exists():
        return
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    _openssl_cert(pki, "ca", f"/CN=gpu-queues-sandbox-{c.name}-ca", None)
    _openssl_cert(
        pki,
        "apiserver",
        "/CN=kube-apiserver",
        "ca",
        f"IP:{c.address},IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc",
    )
    _openssl_cert(pki, "admin", "/O=system:masters/CN=sandbox-admin", "ca")
    _openssl_cert(pki, "front-proxy-ca", "/CN=front-proxy-ca", None)
    _openssl_cert(pki, "front-proxy-client", "/CN=front-proxy-client", "front-proxy-ca")
    run_checked("openssl", "genrsa", "-out", str(pki / "sa.key"), "2048")
    sa_key, sa_pub = str(pki / "sa.key"), str(pki / "sa.pub")
    run_checked("openssl", "rsa", "-in", sa_key, "-pubout", "-out", sa_pub)
    # Whatever the caller's umask was: the CA and signing keys let anyone act as the cluster.
    for path in pki.iterdir():
        path.chmod(0o600)


def write_kubeconfig(c: Cluster) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((c.pki / name).read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sandbox",
        "clusters": [
            {
                "name": "sandbox",
                "cluster": {"server": c.apiserver, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": "sandbox-admin",
                "user": {
                    "client-certificate-data": b64("admin.crt"),
                    "client-key-data": b64("admin.key"),
                },
            }
        ],
        "contexts": [
            {"name": "sandbox", "context": {"cluster": "sandbox", "user": "sandbox-admin"}}
        ],
    }
    c.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    c.kubeconfig.write_text(yaml.safe_dump(cfg))
    os.chmod(c.kubeconfig, 0o600)
