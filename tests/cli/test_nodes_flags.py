"""`--nodes N` and its companions as `capstan serve`, `capstan core` and `capstan nodes` read them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from capstan.cli import nodes
from capstan.cli.commands import parse_args, untainting_warning
from server import admission
from server.startup import controllers


@pytest.mark.parametrize("command", ["serve", "core"])
def test_nodes_and_their_shape(command: str) -> None:
    args = parse_args([command, "--nodes", "3", "--node-cpu", "8", "--node-memory", "32Gi", "--node-pods", "50",
                       "--node-zones", "x,y", "--node-pod-run-seconds", "1.5", "--node-monitor-grace-period", "20",
                       "--terminated-pod-gc-threshold", "10", "--node-eviction-rate", "1"])
    config = nodes.nodes_config(args)
    assert config is not None and config.count == 3
    assert (config.shape.cpu, config.shape.memory, config.shape.pods, config.shape.zones) == ("8", "32Gi", 50,
                                                                                             ("x", "y"))
    assert config.timing.run_seconds == 1.5
    flags = nodes.node_flags(args)
    assert flags.lifecycle.grace_period == 20 and flags.lifecycle.eviction_rate == 1
    assert flags.podgc.terminated_threshold == 10


@pytest.mark.parametrize(("argv", "nodes_count"), [(["serve"], None), (["serve", "--nodes", "0"], None),
                                                   (["core", "--nodes", "1024"], 1024)])
def test_no_nodes_by_default_and_at_most_1024(argv: list[str], nodes_count: int | None) -> None:
    config = nodes.nodes_config(parse_args(argv))
    assert (config.count if config else None) == nodes_count


@pytest.mark.parametrize("value", ["1025", "-1", "many"])
def test_a_count_out_of_range_is_refused(value: str) -> None:
    with pytest.raises(SystemExit):
        parse_args(["serve", "--nodes", value])


def test_capstan_nodes_flags() -> None:
    args = parse_args(["nodes", "--kubeconfig", "kc.yaml", "--count", "5", "--first", "10",
                       "--node-name-prefix", "edge-", "--stop-heartbeat", "edge-10,edge-11"])
    assert (args.count, args.first, args.node_name_prefix, args.stop_heartbeat) == (5, 10, "edge-",
                                                                                   ("edge-10", "edge-11"))


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: v1\nkind: Config\n", "the current context names no server"),
    ("{not yaml", "expected"),
])
def test_a_kubeconfig_that_cannot_be_used_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text(text)
    with pytest.raises(SystemExit, match=message):
        asyncio.run(nodes.run(parse_args(["nodes", "--kubeconfig", str(path)])))


@pytest.mark.parametrize(("argv", "warned"), [
    (["serve", "--controllers", "scheduler"], "scheduler on without nodelifecycle"),
    (["serve", "--controllers", "daemonset,scheduler"], "daemonset and scheduler on without nodelifecycle"),
    (["serve", "--controllers", "scheduler,nodelifecycle"], ""),
    (["serve", "--controllers", "*"], ""),
    (["serve", "--controllers", "*,-nodelifecycle"], "daemonset and scheduler on without nodelifecycle"),
    (["serve", "--controllers", "scheduler", "--disable-admission-plugins", "TaintNodesByCondition"], ""),
    (["serve"], ""),
])
def test_a_start_warns_when_new_nodes_would_stay_tainted(argv: list[str], warned: str) -> None:
    args = parse_args(argv)
    plugins = admission.enabled(args.enable_admission_plugins, args.disable_admission_plugins)
    message = untainting_warning(controllers.enabled(args.controllers), plugins)
    assert message.startswith(warned) and bool(message) == bool(warned)
