"""A real Kubernetes control plane on loopback, for the end-to-end tests.

etcd, kube-apiserver (secure port, certificates generated here, RBAC on) and, on request,
kube-scheduler processes built from their pinned Go modules (tests/toolchain.py). Every process
writes a log in the work directory; a start failure raises with the last lines of the failing log.
There is no kubelet and no controller-manager: tests create Node objects and set their status.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

#: kube-scheduler serves healthz and metrics without TLS on port 10251 up to this minor.
INSECURE_PORT_UNTIL = 22
#: The annotation by which kwok knows the nodes it plays the kubelet of.
KWOK_NODE = "kwok.x-k8s.io/node=fake"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class StartError(RuntimeError):
    """A component did not come up; the message carries its log's last lines."""


def tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        # a short grace: no test reads anything after the stop, and kube-scheduler 1.22 and 1.24 do not exit on
        # SIGTERM (each of their differential tests waited out all of a 10 s grace)
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(3)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem_key(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _cert(
    subject: x509.Name,
    key: rsa.RSAPrivateKey,
    issuer: x509.Name,
    issuer_key: rsa.RSAPrivateKey,
    ca: bool = False,
    sans: Sequence[x509.GeneralName] = (),
    client: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if not ca:
        usage = x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


@dataclass
class Pki:
    """CA, apiserver serving certificate, client certificates and the service-account key pair."""

    dir: Path
    ca_key: rsa.RSAPrivateKey = field(default_factory=_key)

    def __post_init__(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_name = _name("gpushare-e2e-ca")
        ca = _cert(self.ca_name, self.ca_key, self.ca_name, self.ca_key, ca=True)
        self.ca = self.dir / "ca.crt"
        self.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        server_key = _key()
        sans = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes.default.svc"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
        ]
        server = _cert(_name("kube-apiserver"), server_key, self.ca_name, self.ca_key, sans=sans)
        self.server_crt, self.server_key = self.dir / "server.crt", self.dir / "server.key"
        self.server_crt.write_bytes(server.public_bytes(serialization.Encoding.PEM))
        self.server_key.write_bytes(_pem_key(server_key))
        sa = _key()
        self.sa_key, self.sa_pub = self.dir / "sa.key", self.dir / "sa.pub"
        self.sa_key.write_bytes(_pem_key(sa))
        self.sa_pub.write_bytes(
            sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )

    def client(self, user: str, group: str | None = None) -> tuple[Path, Path]:
        key = _key()
        cert = _cert(_name(user, group), key, self.ca_name, self.ca_key, client=True)
        crt_path, key_path = self.dir / f"{user}.crt", self.dir / f"{user}.key"
        crt_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(_pem_key(key))
        return crt_path, key_path


@dataclass
class ControlPlane:
    minor: int
    workdir: Path
    binaries: dict[str, Path]
    processes: list[Process] = field(default_factory=list)
    apiserver_args: list[str] = field(default_factory=list)
    etcd: str = ""

    def __post_init__(self) -> None:
        self.pki = Pki(self.workdir / "pki")
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = self.write_kubeconfig("admin", "system:masters")

    def write_kubeconfig(self, user: str, group: str | None = None) -> Path:
        crt, key = self.pki.client(user, group)
        path = self.workdir / f"{user}.kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "e2e",
                    "clusters": [
                        {"name": "e2e", "cluster": {"server": self.server, "certificate-authority": str(self.pki.ca)}}
                    ],
                    "users": [{"name": user, "user": {"client-certificate": str(crt), "client-key": str(key)}}],
                    "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user}}],
                }
            )
        )
        return path

    def spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Process:
        log = self.workdir / f"{name}.log"
        handle = open(log, "wb")  # noqa: SIM115 - lives as long as the process
        popen = subprocess.Popen(
            args,
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def wait_http(self, process: Process, url: str, timeout: float = 90, cert: bool = True, expect: int = 200) -> None:
        context = ssl.create_default_context(cafile=str(self.pki.ca)) if cert else ssl._create_unverified_context()
        if cert:
            crt, key = self.pki.dir / "admin.crt", self.pki.dir / "admin.key"
            context.load_cert_chain(str(crt), str(key))
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not process.alive():
                raise StartError(f"{process.name} exited with {process.popen.returncode}:\n{tail(process.log)}")
            try:
                with urllib.request.urlopen(
                    url, context=context if url.startswith("https") else None, timeout=3
                ) as response:
                    if response.status == expect:
                        return
            except Exception as exc:
                last = str(exc)
            time.sleep(0.3)
        raise StartError(f"{process.name} not healthy at {url} after {timeout:.0f}s ({last}):\n{tail(process.log)}")

    def start(self, attempts: int = 3) -> None:
        """etcd and kube-apiserver on free ports; a port another process took between its choice and the bind
        (the workers start planes side by side) is chosen again."""
        for attempt in range(attempts):
            try:
                self._start()
                return
            except StartError as exc:
                if "address already in use" not in str(exc) or attempt == attempts - 1:
                    raise
                self.stop()
                shutil.rmtree(self.workdir / "etcd", ignore_errors=True)
                self.port = free_port()
                self.server = f"https://127.0.0.1:{self.port}"
                self.kubeconfig = self.write_kubeconfig("admin", "system:masters")

    def _start(self) -> None:
        data = self.workdir / "etcd"
        client, peer = free_port(), free_port()
        etcd = self.spawn(
            "etcd",
            [
                str(self.binaries["etcd"]),
                "--name",
                "e2e",
                "--data-dir",
                str(data),
                "--listen-client-urls",
                f"http://127.0.0.1:{client}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{client}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"e2e=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ],
        )
        self.wait_http(etcd, f"http://127.0.0.1:{client}/health", cert=False)
        self.etcd = f"http://127.0.0.1:{client}"
        self.apiserver_args = [
            str(self.binaries["kube-apiserver"]),
            f"--etcd-servers=http://127.0.0.1:{client}",
            f"--secure-port={self.port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={self.pki.server_crt}",
            f"--tls-private-key-file={self.pki.server_key}",
            f"--client-ca-file={self.pki.ca}",
            f"--service-account-key-file={self.pki.sa_pub}",
            f"--service-account-signing-key-file={self.pki.sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--authorization-mode=RBAC",
            "--service-cluster-ip-range=10.0.0.0/24",
            # no controller-manager creates default ServiceAccounts: pods are admitted without one
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--profiling=false",
            "--enable-priority-and-fairness=false",
            "--endpoint-reconciler-type=none",
        ]
        apiserver = self.spawn("kube-apiserver", self.apiserver_args)
        self.wait_http(apiserver, f"{self.server}/readyz", timeout=120)
        # readyz does not wait for the system namespaces: the apiserver's controller makes them shortly after
        for namespace in ("default", "kube-system"):
            self.wait_http(apiserver, f"{self.server}/api/v1/namespaces/{namespace}", timeout=60)

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd: its watches end, its watch cache starts
        afresh from etcd (a watch from an older resourceVersion is then too old: 410 Gone)."""
        old = next(p for p in self.processes if p.name == "kube-apiserver")
        old.stop()
        self.processes.remove(old)
        apiserver = self.spawn("kube-apiserver", self.apiserver_args)
        self.wait_http(apiserver, f"{self.server}/readyz", timeout=120)

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (what kube-apiserver does every five minutes): a
        watch from an earlier resourceVersion is then refused as too old (410 Gone). Returns the revision."""

        def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            request = urllib.request.Request(
                f"{self.etcd}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                return dict(json.loads(response.read()))

        revision = int(call("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def outside_a_pod(self, config: dict[str, Any]) -> dict[str, Any]:
        """A rendered KubeSchedulerConfiguration adapted to run here, not in a pod: this cluster's kubeconfig
        instead of the in-cluster one, no leader election (one scheduler, no Lease to wait for), and up to 1.22 the
        insecure port on a free loopback port (each pod has its own 10251; here schedulers share the loopback)."""
        config = {**config, "clientConnection": {"kubeconfig": str(self.kubeconfig)}}
        config["leaderElection"] = {**config.get("leaderElection", {}), "leaderElect": False}
        if self.minor <= INSECURE_PORT_UNTIL:
            config["healthzBindAddress"] = config["metricsBindAddress"] = f"127.0.0.1:{free_port()}"
        return config

    def start_scheduler(self, args: list[str], name: str = "kube-scheduler") -> tuple[Process, int]:
        """kube-scheduler with `args` plus loopback serving on a free port and this cluster's kubeconfig (up to
        1.22 without the insecure port; a configuration file sets its own instead: see `outside_a_pod`)."""
        port = free_port()
        insecure = ["--port=0"] if self.minor <= INSECURE_PORT_UNTIL else []
        process = self.spawn(
            name,
            [
                str(self.binaries["kube-scheduler"]),
                *args,
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                *insecure,
                "--v=2",
            ],
        )
        return process, port

    def start_controllers(self, controllers: str = "daemonset,deployment,replicaset,garbagecollector") -> Process:
        """kube-controller-manager running `controllers` (the workload controllers and the garbage collector that
        deletes what an owner leaves behind), without leader election; up to 1.22 without its insecure port."""
        insecure = ["--port=0"] if self.minor <= INSECURE_PORT_UNTIL else []
        process = self.spawn(
            "kube-controller-manager",
            [
                str(self.binaries["kube-controller-manager"]),
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                f"--controllers={controllers}",
                "--leader-elect=false",
                f"--secure-port={free_port()}",
                "--bind-address=127.0.0.1",
                *insecure,
                "--v=1",
            ],
        )
        return process

    def start_kwok(self, kwok: Path, stages: Path) -> Process:
        """kwok playing the kubelet of every node annotated `kwok.x-k8s.io/node=fake`: it reports them Ready and
        runs the pods bound to them as its stages say."""
        return self.spawn(
            "kwok",
            [
                str(kwok),
                f"--kubeconfig={self.kubeconfig}",
                f"--config={stages}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE}",
                "--cidr=10.0.1.0/24",
                "--node-ip=10.0.0.2",
                f"--server-address=127.0.0.1:{free_port()}",
            ],
        )

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
