"""A stand-in for the Hugging Face Hub on 127.0.0.1: the few endpoints `huggingface_hub.snapshot_download` calls,
serving repositories from local directories, and counting the requests it answers.

    GET  /api/models/{repo}/revision/{revision}     repository info: its commit ("sha") and files
    GET  /api/models/{repo}/tree/{revision}         the file listing (path, size, oid)
    HEAD /{repo}/resolve/{revision}/{file}          X-Repo-Commit, ETag, Content-Length
    GET  /{repo}/resolve/{revision}/{file}          the bytes

Anything else is a 404 that huggingface_hub reads as "repository not found" (its X-Error-Code header). A
repository added with a token is private: a request without "Authorization: Bearer TOKEN" gets a 401, as the Hub
answers for a private repository.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import pathlib
import re
import threading
from collections.abc import Iterator


class HubRepository:
    """A directory served as one commit of a Hub model repository."""

    def __init__(self, directory: pathlib.Path, token: str | None = None) -> None:
        self.token = token
        self.files = {p.relative_to(directory).as_posix(): p.read_bytes()
                      for p in sorted(directory.rglob("*")) if p.is_file()}
        digest = hashlib.sha1()
        for name, data in self.files.items():
            digest.update(name.encode() + hashlib.sha1(data).digest())
        self.commit = digest.hexdigest()  # 40 hex digits, as a git commit id

    def oid(self, name: str) -> str:
        return hashlib.sha1(self.files[name]).hexdigest()


class StandInHub:
    """The server's state: repositories by id, the requests seen (method, path) and their Authorization headers."""

    def __init__(self) -> None:
        self.repositories: dict[str, HubRepository] = {}
        self.requests: list[tuple[str, str]] = []
        self.authorizations: list[str | None] = []
        self.endpoint = ""

    def add(self, repo_id: str, directory: pathlib.Path, token: str | None = None) -> HubRepository:
        self.repositories[repo_id] = HubRepository(directory, token)
        return self.repositories[repo_id]


def _handler(hub: StandInHub) -> type[http.server.BaseHTTPRequestHandler]:
    info = re.compile(r"/api/models/(?P<repo>[^/]+/[^/]+|[^/]+)/(?P<kind>revision|tree)/(?P<rev>[^/?]+)")
    resolve = re.compile(r"/(?P<repo>[^/]+/[^/]+|[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)")

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _repository(self, repo_id: str, revision: str) -> HubRepository | None:
            repository = hub.repositories.get(repo_id)
            if repository is None or revision not in ("main", repository.commit):
                return None
            if repository.token and self.headers.get("Authorization") != f"Bearer {repository.token}":
                return None
            return repository

        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                  head: bool = False) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _not_found(self, head: bool = False) -> None:
            self._send(404, b'{"error": "Repository not found"}',
                       {"X-Error-Code": "RepoNotFound", "Content-Type": "application/json"}, head)

        def _answer(self, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            hub.requests.append((self.command, path))
            hub.authorizations.append(self.headers.get("Authorization"))
            match = info.fullmatch(path)
            if match and not head:
                repository = self._repository(match["repo"], match["rev"])
                if repository is None:
                    return self._not_found()
                if match["kind"] == "revision":
                    body = {"id": match["repo"], "sha": repository.commit, "private": False,
                            "siblings": [{"rfilename": name} for name in repository.files]}
                else:
                    body = [{"type": "file", "path": name, "size": len(data), "oid": repository.oid(name)}
                            for name, data in repository.files.items()]
                return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
            match = resolve.fullmatch(path)
            repository = match and self._repository(match["repo"], match["rev"])
            if repository is None or match["file"] not in repository.files:
                return self._not_found(head)
            data = repository.files[match["file"]]
            self._send(200, data, {"X-Repo-Commit": repository.commit, "ETag": f'"{repository.oid(match["file"])}"',
                                   "Content-Type": "application/octet-stream"}, head)

        def do_GET(self) -> None:
            self._answer(head=False)

        def do_HEAD(self) -> None:
            self._answer(head=True)

    return Handler


@contextlib.contextmanager
def serve() -> Iterator[StandInHub]:
    """Runs a `StandInHub` on an ephemeral port of 127.0.0.1 in a thread; `hub.endpoint` is its URL."""
    hub = StandInHub()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    hub.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serving_repositories(repositories: dict[str, pathlib.Path], tmp_path: pathlib.Path, monkeypatch) -> Iterator[
        StandInHub]:
    """A `StandInHub` serving each directory of `repositories` under its name, with this process's huggingface_hub
    pointed at it (online) and an empty Hugging Face cache under `tmp_path`.

    huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE and HF_HUB_OFFLINE when it is imported, so its constants are
    set as well as the variables (`monkeypatch` undoes both).
    """
    from huggingface_hub import constants

    from kbert.file_io import model_source

    with serve() as stand_in:
        for name, directory in repositories.items():
            stand_in.add(name, directory)
        cache = tmp_path / "hf-cache"
        for name, value in {"HF_ENDPOINT": stand_in.endpoint, "HF_HOME": str(tmp_path / "hf-home"),
                            "HF_HUB_CACHE": str(cache), "HF_HUB_DISABLE_XET": "1"}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(constants, "ENDPOINT", stand_in.endpoint)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            stand_in.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
        model_source.forget_resolved()
        try:
            yield stand_in
        finally:
            model_source.forget_resolved()
