"""The kube-scheduler a dry run models, chosen as users name it: a minor ("1.24") and a configuration API.

Kept apart from `kubescheduler` (compiled with the engine, where help() would lose this function's signature and
docstring) since library users call it directly: `Semantics(scheduler=scoring_profile("1.24"))`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpushare.domain.kubescheduler import (
    DEFAULT_WEIGHTS,
    LEGACY_DEFAULT_PRIORITIES,
    ScoringProfile,
    policy_weights,
    rendered_policy_priorities,
)
from gpushare.domain.versions import CONFIG_APIS, MINORS, POLICY, default_api, served_apis
from gpushare.errors import InputError


def scoring_profile(
    minor: int | str, api: str | None = None, priorities: Iterable[tuple[str, int]] | None = None
) -> ScoringProfile:
    """The profile for a minor ("1.24", as users write it, or 24) and API (default: the API the generator renders
    for that minor). A Policy file's priorities may be given; otherwise those gpushare renders, or the legacy
    defaults when it renders none."""
    if isinstance(minor, str):
        match = re.fullmatch(r"v?1\.([0-9]+)(?:\.[0-9]+)?", minor.strip())
        if match is None:
            raise InputError("minor", minor, "a Kubernetes minor such as '1.24' (or 24)")
        minor = int(match.group(1))
    if minor not in MINORS:
        raise InputError("minor", f"1.{minor}", f"one of 1.{MINORS[0]}-1.{MINORS[-1]}")
    chosen = api or default_api(minor)
    if chosen not in CONFIG_APIS or chosen not in served_apis(minor):
        raise InputError(
            "api", chosen, f"a configuration API kube-scheduler 1.{minor} serves: {', '.join(served_apis(minor))}"
        )
    if chosen == POLICY:
        named = priorities if priorities is not None else rendered_policy_priorities(minor)
        weights = policy_weights(LEGACY_DEFAULT_PRIORITIES.items() if named is None else named)
    else:
        weights = DEFAULT_WEIGHTS[chosen]
    return ScoringProfile(minor, chosen, weights)
