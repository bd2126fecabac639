"""NodePorts (framework/plugins/nodeports): a pod asking for a host port does not fit a node where a pod bound there
already holds that port for the same protocol on the same address, or on every address (0.0.0.0) on either side.

A port is only a conflict between pods of one node: pods without host ports never meet this filter, and the engines
leave them on their fast paths (`wants`)."""

from __future__ import annotations

from gpushare.domain.kubescheduler import NODE_PORTS
from gpushare.kube.podspec import ANY_ADDRESS, HostPort
from gpushare.placement.framework import Cycle, Plugin
from gpushare.placement.model import Node, Pod

REASON = "node(s) didn't have free ports for the requested pod ports"


def conflicts(used: list[HostPort], wanted: HostPort) -> bool:
    """HostPortInfo.CheckConflict: the same protocol and port, on the same address or where either side binds all."""
    for port in used:
        same = port.port == wanted.port and port.protocol == wanted.protocol
        if same and (wanted.ip == ANY_ADDRESS or port.ip == ANY_ADDRESS or port.ip == wanted.ip):
            return True
    return False


def wants(pod: Pod) -> bool:
    """Whether the filter can reject a node for this pod at all."""
    return bool(pod.host_ports)


class NodePorts(Plugin):
    name = NODE_PORTS

    def indexed(self, pod: Pod) -> bool:
        return not wants(pod)

    def filter(self, node: Node, pod: Pod, cycle: Cycle | None) -> list[str]:
        for wanted in pod.host_ports:
            if conflicts(node.ports, wanted):
                return [REASON]
        return []
