"""Downloading a Kueue manifest from a URL (gpu_queues.release.manifest.download), against a
real HTTP server on loopback: redirects never change the scheme (https never becomes http:
the manifest would travel in clear), and the body is size-capped, not read whole."""

from __future__ import annotations

import http.server
import threading
import urllib.request
from collections.abc import Iterator
from email.message import Message

import pytest

from gpu_queues.release.manifest import ManifestError, _NoDowngrade, download

pytestmark = pytest.mark.unit

BODY = b"apiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/manifest":
            self._send(200, BODY)
        elif self.path == "/big":
            self._send(200, b"x" * 5000)
        elif self.path.startswith("/to/"):
            self.send_response(302)
            self.send_header("Location", self.path[len("/to/") :].replace("|", "/"))
            self.end_headers()
        else:
            self._send(404, b"no")

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_manifest_downloads_and_follows_a_redirect_within_its_scheme(server: str):
    assert download(f"{server}/manifest") == BODY
    same_scheme = f"{server}/manifest".replace("/", "|")
    assert download(f"{server}/to/{same_scheme}") == BODY


def test_a_redirect_that_changes_the_scheme_is_not_followed(server: str):
    with pytest.raises(ManifestError, match=r"may not change the scheme \(http to ftp\)"):
        download(f"{server}/to/ftp:||127.0.0.1|kueue.yaml")


def test_https_is_never_downgraded_to_http_on_redirect():
    """The handler urllib calls for a 3xx: an https request redirected to http is refused."""
    request = urllib.request.Request("https://mirror.example/kueue/manifests.yaml")
    headers = Message()
    with pytest.raises(ManifestError, match=r"\(https to http\)"):
        _NoDowngrade().redirect_request(
            request, None, 302, "Found", headers, "http://mirror.example/kueue/manifests.yaml"
        )
    same = _NoDowngrade().redirect_request(
        request, None, 302, "Found", headers, "https://other.example/manifests.yaml"
    )
    assert same is not None and same.full_url == "https://other.example/manifests.yaml"


def test_a_body_over_the_cap_is_refused_without_reading_it_whole(server: str):
    assert download(f"{server}/big", limit=5000) == b"x" * 5000
    with pytest.raises(ManifestError, match="larger than 4999 bytes"):
        download(f"{server}/big", limit=4999)


def test_an_unreachable_url_is_a_manifest_error_naming_it(server: str):
    with pytest.raises(ManifestError, match=r"cannot download the Kueue manifest .*/absent"):
        download(f"{server}/absent")
