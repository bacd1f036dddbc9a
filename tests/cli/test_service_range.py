"""`--service-cluster-ip-range` of `capstan serve` and `capstan core`: kube-apiserver's default, a CIDR checked
when the command line is read, and handed to the core."""

from __future__ import annotations

import pytest

from capstan.cli.commands import parse_args


@pytest.mark.parametrize("command", ["serve", "core"])
def test_default_is_kube_apiservers(command: str) -> None:
    assert parse_args([command]).service_cluster_ip_range == "10.96.0.0/12"


def test_a_range_is_taken() -> None:
    assert parse_args(["serve", "--service-cluster-ip-range", "172.20.0.0/16"]).service_cluster_ip_range == (
        "172.20.0.0/16")


def test_a_bad_range_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["core", "--service-cluster-ip-range", "10.96.0.0/33"])
    assert exited.value.code == 2
    assert "--service-cluster-ip-range" in capsys.readouterr().err
