"""Quantities as kube-apiserver prints them: resource.Quantity's String() after ParseQuantity.

Expected values are apimachinery's own (pkg/api/resource/quantity_test.go: TestQuantityParse,
TestQuantityString, TestQuantityParseEmit), plus the forms users write most.
"""

from __future__ import annotations

import pytest

from capstan.api.core.v1 import core_pb2 as core
from server.machinery.codec import decode, encode
from server.machinery.codec.quantity import canonical, parse_quantity

CANONICAL = [
    # kept as written: already canonical (ParseQuantity's fast path keeps the string)
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("100Ki", "100Ki"), ("8145440Ki", "8145440Ki"),
    ("100M", "100M"), ("250m", "250m"), ("2", "2"), ("110", "110"), ("1e3", "1e3"), ("1e-3", "1e-3"),
    ("80e-3", "80e-3"), ("300e6", "300e6"), ("1e9", "1e9"), ("3k", "3k"), ("1n", "1n"), ("80u", "80u"),
    # rewritten (TestQuantityParseEmit, TestQuantityString's alternates)
    ("1024Mi", "1Gi"), ("1000M", "1G"), ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("1024Gi", "1Ti"),
    ("5000m", "5"), ("0.5", "500m"), ("0.001T", "1G"), ("1000u", "1m"), ("1.08", "1080m"),
    ("1080000000n", "1080m"), (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"), ("00", "0"),
    (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
    ("1000m", "1"), ("1000", "1k"), ("1.5", "1500m"), ("1.5Gi", "1536Mi"), ("0.5Gi", "512Mi"), ("0.1", "100m"),
    # zero in any form
    ("0", "0"), ("0m", "0"), ("0Ki", "0"), ("0.0", "0"), ("-0", "0"), ("0e3", "0"),
    # rounded up to nano units (TestQuantityParse's "things that saturate/round")
    ("3.001n", "4n"), ("0.0000000001", "1n"), ("0.0000000005", "1n"), ("0.00000012345", "124n"),
    ("0.9n", "1n"), ("1.1E-9", "2e-9"),
    # capped: BinarySI stops at 2^63-1
    ("9Ei", "9223372036854775807"), ("9223372036854775807Ki", "9223372036854775807"),
    # DecimalExponent keeps its form, with an exponent that is a multiple of 3
    ("1.2e3", "1200"), ("1.3E+6", "1300e3"), ("0.5e-2", "5e-3"), ("1.7E18", "1700e15"),
    # signs
    ("-1.5", "-1500m"), ("-1024Mi", "-1Gi"), ("-100m", "-100m"),
    # more than E: exponent notation rather than a lost magnitude
    ("12E", "12E"), ("1000E", "1e21"),
]  # fmt: skip


@pytest.mark.parametrize(("given", "printed"), CANONICAL, ids=[g for g, _ in CANONICAL])
def test_canonical_form(given: str, printed: str) -> None:
    assert canonical(given) == printed
    assert canonical(printed) == printed  # the canonical form is stable


@pytest.mark.parametrize(
    ("given", "fmt"),
    [("1", "DecimalSI"), ("1Ki", "BinarySI"), ("1e3", "DecimalExponent"), ("0.5Ki", "BinarySI"),
     (".000000000001Ki", "DecimalSI")],  # a BinarySI value below 1 becomes DecimalSI
)  # fmt: skip
def test_format_follows_the_suffix(given: str, fmt: str) -> None:
    assert parse_quantity(given).format == fmt


@pytest.mark.parametrize(
    ("a", "b", "order"), [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1),
                          ("1", "1000m", 0), ("1Ki", "1024", 0)],
)  # fmt: skip
def test_compare(a: str, b: str, order: int) -> None:
    assert parse_quantity(a).compare(parse_quantity(b)) == order


def test_round_up_to_milli_units() -> None:
    """SetDefaults_ResourceList rounds every resource up to milli units."""
    assert str(parse_quantity("100u").round_up(-3)) == "1m"
    assert str(parse_quantity("1.0001").round_up(-3)) == "1001m"
    assert str(parse_quantity("-100u").round_up(-3)) == "-1m"
    assert str(parse_quantity("1Gi").round_up(-3)) == "1Gi"


def test_protobuf_text_is_printed_canonical() -> None:
    """A protobuf client's Quantity text is parsed and printed as Go does, as JSON input is."""
    wire = core.ResourceRequirements(limits={"memory": core.ResourceRequirements().limits.get_or_create("x")})
    del wire.limits["memory"]
    wire.limits["memory"].string = "1024Mi"
    assert encode(wire) == {"limits": {"memory": "1Gi"}}
    assert decode(core.ResourceRequirements, {"limits": {"cpu": 0.5}}).message.limits["cpu"].string == "500m"
