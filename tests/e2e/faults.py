"""A TLS front for the harness's API server that passes requests on unchanged until told to fail the way networks
do: the connection dropped, or held, when a list call asks for its next page (a `continue` token). gpushare's
client talks to it as to any API server; the front talks to the real one as the cluster's admin."""

from __future__ import annotations

import http.client
import ssl
import threading
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from cluster import ControlPlane, free_port


@dataclass
class Front:
    cluster: ControlPlane
    #: On a request for a list's next page: "drop" closes the connection unanswered, "hold" waits `hold` seconds.
    on_continue: str = ""
    hold: float = 30.0
    seen: list[str] = field(default_factory=list)
    #: Errors of the front's own handlers (an upstream gone by then): kept here, never printed, since the process's
    #: stderr belongs to whatever test runs next in this worker.
    errors: list[str] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Path:
        """Serve on a free port; the kubeconfig that reaches the cluster through it."""
        front = self
        upstream = urlsplit(self.cluster.server)
        config = yaml.safe_load(self.cluster.kubeconfig.read_text())
        user = config["users"][0]["user"]
        outgoing = ssl.create_default_context(cafile=str(self.cluster.pki.ca))
        outgoing.load_cert_chain(user["client-certificate"], user["client-key"])

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                front.seen.append(self.path)
                if "continue=" in self.path and front.on_continue == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if "continue=" in self.path and front.on_continue == "hold":
                    front.stopping.wait(front.hold)
                if front.stopping.is_set():  # stopped while it held the request: no upstream to ask any more
                    self.close_connection = True
                    return
                conn = http.client.HTTPSConnection(upstream.hostname, upstream.port, context=outgoing, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                conn.request("GET", self.path, headers=headers)
                reply = conn.getresponse()
                body = reply.read()
                self.send_response(reply.status)
                for k, v in reply.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                conn.close()

            def log_message(self, *args: Any) -> None:
                return None

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                front.errors.append(traceback.format_exc())

        port = free_port()
        self.server = Server(("127.0.0.1", port), Handler)
        incoming = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        incoming.load_cert_chain(str(self.cluster.pki.server_crt), str(self.cluster.pki.server_key))
        self.server.socket = incoming.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        path = self.cluster.workdir / f"front-{port}.kubeconfig"
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
        path.write_text(yaml.safe_dump(config))
        return path

    def stop(self) -> None:
        self.stopping.set()  # a held request returns at once, unanswered
        self.server.shutdown()
        self.server.server_close()
