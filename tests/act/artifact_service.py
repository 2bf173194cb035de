"""GitHub's artifact service (the twirp API @actions/artifact calls inside a job), on loopback, for the
download-artifact stand-in's tests.

Shapes from the service's published protocol (actions/toolkit `packages/artifact/src/generated/results/api/
v1/artifact.ts`; nektos/act `pkg/artifacts/artifacts_v4.go` serves the same JSON): ListArtifacts with its
name and id filters, GetSignedArtifactURL, and the signed blob. Unlike act's server, this one lists each
artifact's `digest` (`sha256:<hex>` of the zip as uploaded), as GitHub's does, so a test can hand the
stand-in a zip whose bytes differ from the listed digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SERVICE = "/twirp/github.actions.results.api.v1.ArtifactService/"
RUN_BACKEND_ID = "ce7f54c7-61c7-4aae-887f-30da475f5f1a"
JOB_BACKEND_ID = "ca395085-040a-526b-2ce8-bdc85f692774"


@dataclass
class StoredArtifact:
    id: int
    name: str
    zip_bytes: bytes
    digest: str | None = "auto"  # "auto": sha256 of zip_bytes; None: not listed (as act's server)
    created_at: str = "2026-08-24T10:03:30Z"
    served: bytes | None = None  # what the blob serves instead of zip_bytes (a zip changed after upload)

    def listed(self) -> dict[str, Any]:
        entry = {"workflowRunBackendId": RUN_BACKEND_ID, "workflowJobRunBackendId": JOB_BACKEND_ID,
                 "databaseId": str(self.id), "name": self.name, "size": str(len(self.zip_bytes)),
                 "createdAt": self.created_at}
        digest = "sha256:" + hashlib.sha256(self.zip_bytes).hexdigest() if self.digest == "auto" else self.digest
        if digest is not None:
            entry["digest"] = digest
        return entry


def runtime_token() -> str:
    """An ACTIONS_RUNTIME_TOKEN: a JWT whose `scp` names the run and job backend ids (unsigned: the
    library only decodes it, util.ts getBackendIdsFromToken)."""
    def part(document: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(document).encode()).decode().rstrip("=")
    claims = {"scp": f"Actions.ExampleScope Actions.Results:{RUN_BACKEND_ID}:{JOB_BACKEND_ID}"}
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.sig"


class ArtifactService:
    def __init__(self, artifacts: list[StoredArtifact]) -> None:
        self.artifacts = artifacts
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._keys: dict[str, StoredArtifact] = {}
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                method = self.path.split("?")[0].removeprefix(SERVICE)
                service.calls.append((method, body))
                answer = service.answer(method, body, f"http://127.0.0.1:{self.server.server_address[1]}")
                self._send(200 if answer is not None else 404, json.dumps(answer or {"code": "not_found"}).encode(),
                           "application/json")

            def do_GET(self) -> None:  # noqa: N802
                stored = service._keys.get(self.path.split("?")[0].rsplit("/", 1)[-1])
                if stored is None:
                    self._send(404, b"", "text/plain")
                    return
                self._send(200, stored.served if stored.served is not None else stored.zip_bytes, "application/zip")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    def answer(self, method: str, body: dict[str, Any], base: str) -> dict[str, Any] | None:
        if method == "ListArtifacts":
            # The library sends proto field names (id_filter); protojson accepts the JSON names too.
            name, wanted = body.get("name_filter", body.get("nameFilter")), body.get("id_filter", body.get("idFilter"))
            return {"artifacts": [a.listed() for a in self.artifacts
                                  if (name is None or a.name == name) and (wanted is None or str(a.id) == str(wanted))]}
        if method == "GetSignedArtifactURL":
            stored = next((a for a in self.artifacts if a.name == body.get("name")), None)  # names are unique per run
            if stored is None:
                return None
            key = secrets.token_hex(8)
            self._keys[key] = stored
            return {"signedUrl": f"{base}/blob/{key}?sig={secrets.token_urlsafe(12)}"}
        return None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    def __enter__(self) -> ArtifactService:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
