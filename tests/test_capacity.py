"""`gpushare capacity`: headroom is what placing N and N+1 more replicas with `place` gives, on random fleets and
for both semantics; the command's table, JSON and refusals."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO
from jsonschema import Draft202012Validator

from gpushare.cli import main
from gpushare.errors import InputError
from gpushare.placement import Semantics, place
from gpushare.planner import headroom

REPORT = Draft202012Validator(json.loads((REPO / "schemas" / "capacity-report.schema.json").read_text()))


def node(name: str, gpus: int, per_gpu: int, cpu: int = 64) -> dict[str, Any]:
    capacity = {
        "aliyun.com/gpu-mem": gpus * per_gpu,
        "aliyun.com/gpu-count": gpus,
        "cpu": cpu,
        "memory": "512Gi",
        "pods": 110,
    }
    labels = {"ack.node.gpu.schedule": "share", "kubernetes.io/hostname": name, "gpushare": "true"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod_spec(mem: int, cpu: str = "1") -> dict[str, Any]:
    limits = {"aliyun.com/gpu-mem": mem}
    return {"containers": [{"name": "c", "resources": {"limits": limits, "requests": {"cpu": cpu}}}]}


def deployment(name: str, mem: int, replicas: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(mem, cpu)},
        },
    }


def fleet(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    rng = random.Random(seed)
    nodes = [
        node(f"n{i}", rng.choice([1, 2, 4, 8]), rng.choice([8, 16, 24, 80]), rng.choice([8, 32])) for i in range(8)
    ]
    pending = [deployment(f"busy{i}", rng.randint(1, 12), rng.randint(1, 6)) for i in range(rng.randint(0, 4))]
    template = deployment("serve", rng.randint(1, 20), 1, rng.choice(["1", "4"]))
    return nodes, pending, template


@pytest.mark.parametrize("semantics", ["ack", "upstream"])
@pytest.mark.parametrize("seed", range(8))
def test_headroom_is_what_placing_n_and_n_plus_one_more_gives(seed: int, semantics: str) -> None:
    nodes, pending, template = fleet(seed)
    model = Semantics(
        semantics, gpu_memory_unit="1GiB" if semantics == "ack" else "GiB", scheduler_name="default-scheduler"
    )
    (answer,) = headroom(nodes, [template], pods=pending, semantics=model)
    assert answer.more == answer.more_min == answer.more_max
    for extra, left in ((answer.more, 0), (answer.more + 1, 1)):
        asked = {**template, "spec": {**template["spec"], "replicas": extra}}
        result = place(nodes, [*pending, asked], semantics=model)
        mine = [p for p in result.pending if p.name.startswith("serve-")]
        assert len(mine) == left, (extra, [p.message for p in mine])
    landed = sum(x.replicas for x in answer.landed)
    assert landed == answer.more and answer.blocked_by is not None  # the bound is past what GPU memory holds


def test_a_small_fleet_by_hand() -> None:
    """16 GiB, one pending pod of 4, and two GPUs of 16: replicas of 5 fit 2 + 3 + 3; 2 + 1 + 1 GiB left stranded."""
    nodes = [node("a", 1, 16), node("b", 2, 16)]
    busy = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec(4)}
    (answer,) = headroom(nodes, [deployment("web", 5, 1)], pods=[busy])
    assert (answer.more, answer.per_gpu, answer.stranded, answer.largest_free) == (8, 5, 4, 2)
    assert [(x.node, x.gpus, x.replicas) for x in answer.landed] == [("a", (0,), 2), ("b", (0,), 3), ("b", (1,), 3)]
    assert answer.blocked_by is not None and "Insufficient aliyun.com/gpu-mem" in answer.blocked_by.message


def test_capacity_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([node("a", 1, 16), node("b", 2, 16)]))
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(deployment("web", 5, 1)))
    args = ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), "--template", str(tmp_path / "web.yaml")]
    assert main([*args, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not list(REPORT.iter_errors(doc))
    (entry,) = doc["templates"]
    assert entry["name"] == "Deployment/ml/web" and entry["more"] == 9 and entry["blocked_by"]["reasons"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == ["Deployment/ml/web", "9"]


@pytest.mark.parametrize(
    ("template", "said"),
    [
        (node("x", 1, 1), "--template kind: 'Node' is not allowed; expected a Pod or the pod template of a Deployment"),
        (
            {**deployment("web", 5, 1), "kind": "DaemonSet"},
            "--template kind: 'DaemonSet' is not allowed; expected a Pod or the pod template of a Deployment",
        ),
        (
            deployment("half", 0, 1),
            "--template Deployment ml/half resources.limits.aliyun.com/gpu-mem: 0 is not allowed; expected an amount "
            "above 0",
        ),
        (
            # on ACK the extender serves default-scheduler's pods: another's replicas never reach it
            {
                "kind": "Pod",
                "metadata": {"name": "other"},
                "spec": pod_spec(5) | {"schedulerName": "gpushare-scheduler"},
            },
            "--template Pod default/other spec.schedulerName: 'gpushare-scheduler' is not allowed; expected "
            "default-scheduler",
        ),
    ],
)
def test_a_template_that_cannot_be_asked_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: dict[str, Any], said: str
) -> None:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("a", 1, 16)))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(template))
    code = main(["capacity", "--nodes", str(tmp_path / "nodes.yaml"), "--template", str(tmp_path / "t.yaml")])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and said in captured.err and len(captured.err.splitlines()) == 1


def test_a_template_also_pending_is_refused() -> None:
    web = deployment("web", 5, 2)
    with pytest.raises(InputError, match="not also among the pending workloads"):
        headroom([node("a", 1, 16)], [web], pods=[web])


def test_the_readmes_example_is_what_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    text = (REPO / "README.md").read_text()
    (block,) = re.findall(r"```\n(\$ gpushare capacity [^\n]*--template[^\n]*\n.*?)```", text, re.S)
    command, printed = block.split("\n", 1)
    busy = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": pod_spec(4)}
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all([node("a", 1, 16), node("b", 2, 16)]))
    (tmp_path / "pending.yaml").write_text(yaml.safe_dump(busy))
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(deployment("web", 5, 1)))
    monkeypatch.chdir(tmp_path)
    assert main(command.split()[2:]) == 0
    assert capsys.readouterr().out == printed


def pool(name: str, gpus: int, per_gpu: int, **annotations: str) -> dict[str, Any]:
    made = node(name, gpus, per_gpu)
    made["metadata"]["annotations"] = dict(annotations)
    return made


def test_a_pool_is_sized_to_the_fewest_nodes_the_replay_confirms() -> None:
    """12 pending pods of 10 GiB on a full fleet: a pool of one 16 GiB GPU a node needs 12 nodes (one pod each), a
    pool of two 40 GiB GPUs needs 2 (four a GPU would be 8 a node: 2); one fewer leaves a pod pending, shown; a pod
    larger than any GPU of the pool is named unservable."""
    from gpushare.kube.documents import from_objects
    from gpushare.planner import Fleet, read_pool, size

    full = node("full", 1, 8)
    busy = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec(10)} for i in range(12)]
    huge = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"}, "spec": pod_spec(60)}
    fleet = Fleet(from_objects([full], "nodes"), [], from_objects([*busy, huge], "pods"), Semantics())
    small = read_pool(from_objects(pool("small", 1, 16, **{"gpushare.io/pool-max": "30"}), "pools")[0])
    big = read_pool(
        from_objects(pool("big", 2, 40, **{"gpushare.io/pool-cost": "5", "gpushare.io/pool-max": "10"}), "pools")[0]
    )
    by_pool = {s.pool: s for s in size(fleet, [small, big])}
    assert (by_pool["small"].nodes, by_pool["big"].nodes) == (12, 2)
    for answer in by_pool.values():
        assert [p.key for p in answer.unservable] == ["default/huge"]
        assert {p.key for p in answer.result.pending} == {"default/huge"}  # the printed answer is the replay's
        assert answer.one_fewer is not None and len(answer.one_fewer.pending) > 1
    assert [s.pool for s in size(fleet, [small, big])] == ["big", "small"]  # cost 10 before 12


def test_a_tainted_pool_serves_the_pods_that_tolerate_it() -> None:
    """GPU pools are usually tainted: the pool's nodes are copied with their taints (on the compiled build too), the
    pods that tolerate the taint are placed on them, and one that does not is named unservable."""
    from gpushare.kube.documents import from_objects
    from gpushare.planner import Fleet, read_pool, size

    taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    tolerating = {**pod_spec(10), "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": tolerating} for i in range(3)]
    pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "plain"}, "spec": pod_spec(10)})
    tainted = pool("t4", 1, 16, **{"gpushare.io/pool-max": "8"})
    tainted["spec"] = {"taints": [taint]}
    fleet = Fleet(from_objects([node("full", 1, 8)], "nodes"), [], from_objects(pods, "pods"), Semantics())
    (answer,) = size(fleet, [read_pool(from_objects([tainted], "pools")[0])])
    assert answer.nodes == 3  # one 10 GiB pod on each 16 GiB GPU
    assert [p.key for p in answer.unservable] == ["default/plain"]
    assert {a.node for a in answer.result.placements} == {"t4-new-0", "t4-new-1", "t4-new-2"}


def test_capacity_sizes_pools_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("full", 1, 8)))
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec(10)} for i in range(3)]
    (tmp_path / "pending.yaml").write_text(yaml.safe_dump_all(pods))
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool("a10", 1, 24, **{"gpushare.io/pool-max": "8"})))
    args = ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pending.yaml")]
    assert main([*args, "--pool", str(tmp_path / "pool.yaml"), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not list(REPORT.iter_errors(doc)) and doc["templates"] == []
    ((answer,),) = [doc["add"]]
    assert (answer["pool"], answer["nodes"], answer["unservable"]) == ("a10", 2, [])
    assert len(answer["one_fewer_leaves"]) == 1
    assert main([*args, "--pool", str(tmp_path / "pool.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == ["a10", "2", "2", "0"] and "with 1, default/p" in out
    assert main(args[:3]) == 2 and "--template, --pool or pending workloads" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(pool("x", 1, 8, **{"gpushare.io/pool-max": "0"})))
    assert main([*args, "--pool", str(tmp_path / "bad.yaml")]) == 2
    assert "gpushare.io/pool-max" in capsys.readouterr().err
    (tmp_path / "nan.yaml").write_text(yaml.safe_dump(pool("x", 1, 8, **{"gpushare.io/pool-cost": "nan"})))
    assert main([*args, "--pool", str(tmp_path / "nan.yaml")]) == 2
    assert "a finite cost of 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [4, 5, 13, 17, 26])
def test_a_sampled_tie_break_is_what_place_gives_with_that_seed(seed: int) -> None:
    """Each run `--runs` samples is a placement with kube-scheduler's random pick among tied nodes: N more
    replicas with that seed bind, N+1 leave one pending; the fleets here are ones where the picks change N."""
    nodes, pending, template = fleet(seed)
    model = Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler")
    counts = []
    for tie_seed in range(1, 6):
        sampled = replace(model, tie_seed=tie_seed)
        (answer,) = headroom(nodes, [template], pods=pending, semantics=sampled)
        counts.append(answer.more)
        for extra, left in ((answer.more, 0), (answer.more + 1, 1)):
            asked = {**template, "spec": {**template["spec"], "replicas": extra}}
            result = place(nodes, [*pending, asked], semantics=sampled)
            assert sum(p.name.startswith("serve") for p in result.pending) == left
    (answer,) = headroom(nodes, [template], pods=pending, semantics=model, runs=5)
    assert (answer.more_min, answer.more_max) == (min([answer.more, *counts]), max([answer.more, *counts]))
    assert answer.runs == 5 and answer.more_min < answer.more_max


def test_runs_in_the_table_and_refused_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pending, template = fleet(26)
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "pending.yaml").write_text(yaml.safe_dump_all(pending))
    (tmp_path / "serve.yaml").write_text(yaml.safe_dump(template))
    args = ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pending.yaml")]
    args += ["--template", str(tmp_path / "serve.yaml"), "--semantics", "upstream", "--gpu-memory-unit", "GiB"]
    args += ["--scheduler-name", "default-scheduler"]
    assert main([*args, "--runs", "5"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == ["Deployment/ml/serve", "2"] and "(2-4)" in out
    assert "over 5 runs with random tie-breaks" in out
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(nodes[0]))  # one node: no tie, every run agrees
    # its GPUs hold 16, the template asks 18 on one: validate's GW207, and exit 1 with the answer
    assert main([*args[:2], str(tmp_path / "one.yaml"), *args[3:], "--runs", "3"]) == 1
    out = capsys.readouterr().out
    assert "Deployment/ml/serve\n  error   GW207" in out
    more = out.splitlines()[1].split()[1:3]
    assert more == [more[0], f"({more[0]}-{more[0]})"]  # the range said as a range, though one number
    for bad in ("1001", "1e3", "\u00b2"):  # too many, not written whole, a digit int() refuses
        with pytest.raises(SystemExit) as exited:
            main([*args, "--runs", bad])
        said = capsys.readouterr().err
        assert exited.value.code == 2 and f"--runs {bad!r}: expected a whole number from 0 to 1000" in said


def test_a_template_of_higher_priority_counts_what_preemption_frees() -> None:
    """Full GPUs of priority-0 pods: replicas of a PriorityClass 1000 template fit by preempting them (upstream's
    DefaultPreemption), the victims named; the count is what placing N and N+1 replicas with `place` gives."""
    model = Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler")
    nodes = [node("n0", 1, 16), node("n1", 1, 16)]
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    running = []
    for n in ("n0", "n1"):
        for i in range(4):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"low-{n}-{i}",
                    "namespace": "ml",
                    "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_POD": "4"},
                },
                "spec": {**pod_spec(4), "nodeName": n, "schedulerName": "default-scheduler"},
                "status": {"phase": "Running"},
            }
            running.append(pod)
    template = deployment("urgent", 8, 1)
    template["spec"]["template"]["spec"] |= {"priorityClassName": "high", "schedulerName": "default-scheduler"}
    (answer,) = headroom(nodes, [template], existing=[high, *running], semantics=model)
    assert answer.more == 4 and len(answer.preempted) == 8
    assert {v.key for v in answer.preempted} == {f"ml/{p['metadata']['name']}" for p in running}
    assert all(v.by.startswith("ml/urgent-") for v in answer.preempted)
    for extra, left in ((answer.more, 0), (answer.more + 1, 1)):
        asked = {**template, "spec": {**template["spec"], "replicas": extra}}
        result = place(nodes, [asked], existing=[high, *running], semantics=model)
        assert sum(p.name.startswith("urgent") for p in result.pending) == left
        assert len(result.preempted) == 8
    (plain,) = headroom(nodes, [deployment("calm", 8, 1)], existing=[high, *running], semantics=model)
    assert plain.more == 0 and not plain.preempted


def test_a_pool_short_of_room_at_its_max_answers_max() -> None:
    """Three pods of a whole 24 GiB GPU and a pool of at most 2 one-GPU nodes: 2 nodes, the third pod named,
    and with one node fewer two stay pending."""
    from gpushare.kube.documents import from_objects
    from gpushare.planner import Fleet, read_pool, size

    model = Semantics("upstream", gpu_memory_unit="GiB", scheduler_name="default-scheduler")
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec(24)} for i in range(3)]
    said: list[str] = []
    fleet_ = Fleet(from_objects([node("full", 1, 8)], "n"), [], from_objects(pods, "p"), model, said=said.append)
    (answer,) = size(fleet_, [read_pool(from_objects([pool("a10", 1, 24, **{"gpushare.io/pool-max": "2"})], "x")[0])])
    assert (answer.nodes, len(answer.unservable)) == (2, 1)
    # each replay is told before it runs (the terminal's status line)
    assert said[0] == "placing the fleet again with the pools' nodes added: none" and len(said) >= 3
    assert "placing the fleet again with the pools' nodes added: 2 of pool a10" in said
    assert answer.one_fewer is not None and len(answer.one_fewer.pending) == 2


def test_pools_sized_for_a_templates_replicas_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing pending, a template asking 5 more replicas of a whole 24 GiB GPU, a pool of one-GPU nodes: 5."""
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node("full", 1, 8)))
    (tmp_path / "web.yaml").write_text(yaml.safe_dump(deployment("web", 24, 5)))
    (tmp_path / "pool.yaml").write_text(yaml.safe_dump(pool("a10", 1, 24)))
    args = ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), "--template", str(tmp_path / "web.yaml")]
    assert main([*args, "--pool", str(tmp_path / "pool.yaml"), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["templates"][0]["more"] == 0
    assert (doc["add"][0]["nodes"], len(doc["add"][0]["one_fewer_leaves"])) == (5, 1)


def test_a_mix_of_pools_costs_less_than_any_pool_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two pods of 40 GiB only the 48 GiB pool serves, four of 8 GiB both serve: two big nodes (8 GiB left on
    each) and one small node (cost 3 + 3 + 1 = 7) beat three big ones (9); the small pool alone serves no big pod.
    The mix's replay is what `place` gives on the fleet with those nodes added, and no node of it can go."""
    from gpushare.kube.documents import from_objects
    from gpushare.planner.pools import Fleet, copies, read_pool, size, size_mix

    def want(name: str, gib: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec(gib)}

    full = node("full", 1, 8)
    pending = [want("big0", 40), want("big1", 40), *(want(f"s{i}", 8) for i in range(4))]
    small = read_pool(from_objects(pool("small", 1, 16), "pools")[0])
    large = read_pool(from_objects(pool("large", 1, 48, **{"gpushare.io/pool-cost": "3"}), "pools")[0])
    fleet_ = Fleet(from_objects([full], "nodes"), [], from_objects(pending, "pods"), Semantics())
    alone = size(fleet_, [small, large])
    assert {s.pool: (s.nodes, s.cost, len(s.unservable)) for s in alone} == {"small": (2, 2, 2), "large": (3, 9, 0)}
    mix = size_mix(fleet_, [small, large], alone)
    assert mix is not None and (dict(mix.counts), mix.cost, mix.unservable) == ({"small": 1, "large": 2}, 7, ())
    added = [doc.obj for p, n in ((small, 1), (large, 2)) for doc in copies(p, n)]
    assert place([full, *added], pending).pending == [] and mix.result.pending == []
    assert {pool: bool(result.pending) for pool, result in mix.one_fewer} == {"small": True, "large": True}
    # in the command: the table's mix line and the JSON's `mix`
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(full))
    (tmp_path / "pending.yaml").write_text(yaml.safe_dump_all(pending))
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(pool("small", 1, 16)))
    (tmp_path / "large.yaml").write_text(yaml.safe_dump(pool("large", 1, 48, **{"gpushare.io/pool-cost": "3"})))
    args = ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), str(tmp_path / "pending.yaml")]
    args += ["--pool", str(tmp_path / "small.yaml"), "--pool", str(tmp_path / "large.yaml"), "--max-moves", "0"]
    assert main([*args, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not list(REPORT.iter_errors(doc))
    assert doc["mix"]["pools"] == [{"pool": "small", "nodes": 1}, {"pool": "large", "nodes": 2}]
    assert main(args) == 0
    assert "cheapest mix found: 1 of small + 2 of large, costing 7 (after" in capsys.readouterr().out


def test_a_mix_keeps_one_pool_when_it_alone_costs_no_more() -> None:
    from gpushare.kube.documents import from_objects
    from gpushare.planner.pools import Fleet, read_pool, size, size_mix

    busy = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec(10)} for i in range(4)]
    fleet_ = Fleet(from_objects([node("full", 1, 8)], "nodes"), [], from_objects(busy, "pods"), Semantics())
    cheap = read_pool(from_objects(pool("cheap", 2, 24), "pools")[0])
    dear = read_pool(from_objects(pool("dear", 2, 24, **{"gpushare.io/pool-cost": "2"}), "pools")[0])
    mix = size_mix(fleet_, [dear, cheap], size(fleet_, [dear, cheap]))
    assert mix is not None and dict(mix.counts) == {"cheap": 1} and mix.cost == 1  # two 10s a GPU
    assert size_mix(fleet_, [cheap], size(fleet_, [cheap])) is None  # one pool: nothing to mix


@pytest.mark.parametrize("seed", range(20))
def test_the_fewest_count_found_from_a_guess_is_one_whose_one_fewer_is_not_enough(seed: int) -> None:
    """Replays need not be monotone (a count can leave fewer pods pending than one more): whatever the guess, the
    count the search settles on is enough and its one fewer is not, and a guess at the answer takes fewer replays
    than the walk down from the top."""
    from gpushare.planner.pools import _least

    rng = random.Random(seed)
    answer = rng.randint(1, 900)
    holes = {c for c in range(answer, 1001) if rng.random() < 0.05} - {answer, 1000}  # not enough, above it
    asked: list[int] = []

    def enough(count: int) -> bool:
        asked.append(count)
        return count >= answer and count not in holes

    for guess in (None, answer, answer - 1, rng.randint(1, 999)):
        asked.clear()
        found = _least(0, 1000, enough, guess)
        replays = len(set(asked))
        assert enough(found) and (found == 0 or not enough(found - 1))
        if guess == answer:
            assert replays == 2  # the guess and its one fewer
        elif guess is None:
            assert replays > 2


@pytest.mark.parametrize("seed", range(20))
def test_the_line_through_two_short_counts_stops_at_or_before_a_convex_answer(seed: int) -> None:
    """GPU memory left pending falls ever more slowly as nodes are added: on any such curve the line through the
    last two short counts points at or below the count where it reaches 0, so a top-up never overshoots (above the
    answer, each probe would only say "enough"); and it says nothing where the memory left did not fall."""
    from gpushare.planner.pools import _secant

    rng = random.Random(seed)
    answer = rng.randint(5, 1000)
    steep = rng.uniform(0.5, 3)

    def left(count: int) -> int:  # convex, falling, 0 from the answer on
        return math.ceil(40 * (answer - count) ** (1 + steep / 3)) if count < answer else 0

    a = rng.randint(0, answer - 2)
    b = rng.randint(a + 1, answer - 1)
    more = _secant([(a, left(a)), (b, left(b))])
    assert more >= 0 and b + more <= answer
    assert _secant([(b, left(b))]) == 0  # one point: no line
    assert _secant([(a, 100), (b, 100)]) == 0 and _secant([(a, 100), (b, 0)]) == 0


def test_a_template_asking_no_resource_is_counted_by_pod_slots(tmp_path: Any, capsys: Any) -> None:
    """A pod that requests nothing, as cluster-capacity answers it: each node takes as many as its free pod slots."""
    few = [{**node(n, 1, 16), "status": {**node(n, 1, 16)["status"]}} for n in ("a", "b")]
    for doc, pods in zip(few, ("3", "5"), strict=True):
        doc["status"] = {k: {**v, "pods": pods} for k, v in doc["status"].items() if k in ("capacity", "allocatable")}
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump_all(few))
    empty = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "idle"}, "spec": {"containers": [{"name": "c"}]}}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(empty))
    assert (
        main(
            ["capacity", "--nodes", str(tmp_path / "nodes.yaml"), "--template", str(tmp_path / "t.yaml"), "-o", "json"]
        )
        == 0
    )
    (entry,) = json.loads(capsys.readouterr().out)["templates"]
    assert entry["more"] == 8 and entry["per_gpu"] == 0
    assert entry["blocked_by"]["reasons"] == [{"reason": "Too many pods", "nodes": 2}]
