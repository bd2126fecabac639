"""Every valid combination of the structural settings, for tests, benchmarks and CI renders.

Derived from the profile table and filtered by the rules engine, so it follows the product's rules
instead of restating them.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations
from typing import Any

from gpushare.domain import products, versions
from gpushare.errors import InputError
from gpushare.policy.validate import enforce
from gpushare.settings.model import ack_plugin_features, load_settings

#: Stands for ACK's own device plugin image, which 128MiB units and compute allocation on ACK need (GS119, GS122)
#: and which is not public.
EXAMPLE_ACK_PLUGIN = "registry.example.com/acs/ack-gpushare-device-plugin"


def combos(kube_versions: tuple[str | None, ...] | None = None) -> Iterator[dict[str, Any]]:
    """Settings documents: each minor (or the given versions) x profile x isolation x unit x scheduler mode."""
    targets = kube_versions if kube_versions is not None else tuple(f"1.{m}" for m in versions.MINORS)
    for version in targets:
        for profile in products.PROFILES.values():
            modes = profile.isolation_modes
            subsets = [list(c) for n in range(1, len(modes) + 1) for c in combinations(modes, n)]
            for isolation in subsets:
                for unit in profile.memory_units:
                    for mode in profile.scheduler_modes:
                        document: dict[str, Any] = {
                            "profile": profile.name,
                            "isolation": isolation,
                            "gpuMemoryUnit": unit,
                            "scheduler": {"mode": mode},
                            "computeAllocation": "core_mem" in isolation,
                        }
                        if version is not None:
                            document["kubernetesVersion"] = version
                        if "core_mem" in isolation:
                            document["region"] = products.COMPUTE_REGIONS[0]
                        if ack_plugin_features(profile.name, unit, document["computeAllocation"]):
                            document["devicePlugin"] = {"image": {"repository": EXAMPLE_ACK_PLUGIN, "tag": "v1"}}
                        try:
                            settings = load_settings(document)
                        except InputError:
                            continue
                        try:
                            enforce(settings)
                        except InputError:
                            continue
                        yield document
