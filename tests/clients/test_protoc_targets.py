"""protoc's generators for other languages take protos/ as it is, with no flags (each file's go_package,
java_package and csharp_namespace say where its code goes, and no two files generate one file name), and
what they generate compiles where Debian ships the toolchain and runtime: Go (protoc-gen-go and
protoc-gen-go-grpc against Debian's google.golang.org/protobuf and grpc) and Java (libprotobuf-java). C# is
generated but not compiled: Debian ships neither dotnet nor a Google.Protobuf assembly for mono."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.clients.conftest import tool
from tests.e2e.conftest import ROOT

PROTOS = ROOT / "protos"
FILES = sorted(str(p.relative_to(PROTOS)) for p in PROTOS.rglob("*.proto"))
SERVICES = [f for f in FILES if any(line.startswith("service ") for line in (PROTOS / f).read_text().splitlines())]
GO_MODULE = "github.com/capstan-dev/capstan/gen/go"


def protoc(*args: str, files: list[str] = FILES) -> None:
    binary = tool("protoc", "Debian's protobuf-compiler generates the other languages' code")
    ran = subprocess.run([binary, "-I", str(PROTOS), *args, *files], capture_output=True, text=True, timeout=300,
                         stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize("language", ["cpp", "csharp"])
def test_generates_without_flags(tmp_path: Path, language: str) -> None:
    protoc(f"--{language}_out={tmp_path}")
    assert any(tmp_path.rglob("*.cs" if language == "csharp" else "*.pb.cc"))


def test_go_builds(tmp_path: Path) -> None:
    tool("protoc-gen-go", "Debian's protoc-gen-go")
    tool("protoc-gen-go-grpc", "Debian's protoc-gen-go-grpc")
    go = tool("go", "Debian's golang-go, with golang-google-protobuf-dev and golang-google-grpc-dev")
    src = tmp_path / "src"
    src.mkdir()
    protoc(f"--go_out={src}")
    protoc(f"--go-grpc_out={src}", files=SERVICES)
    # GOPATH mode over Debian's Go sources: no module download.
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{tmp_path}:/usr/share/gocode", "GOFLAGS": "",
           "GOCACHE": str(tmp_path / "cache")}
    ran = subprocess.run([go, "build", f"{GO_MODULE}/..."], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr


def test_java_compiles(tmp_path: Path) -> None:
    javac = tool("javac", "Debian's default-jdk")
    runtime = Path("/usr/share/java/protobuf.jar")
    if not runtime.is_file():
        pytest.skip("libprotobuf-java is not installed (Debian's protobuf runtime for Java); .ci/run installs it")
    (tmp_path / "src").mkdir()
    protoc(f"--java_out={tmp_path / 'src'}")
    sources = sorted(str(p) for p in (tmp_path / "src").rglob("*.java"))
    assert any(s.endswith("dev/capstan/core/v1/RawObject.java") for s in sources)  # one class per message
    (tmp_path / "sources").write_text("\n".join(sources))
    # C1 only (-XX:TieredStopAtLevel=1): a one-shot compile of ~1,200 files spends a quarter of its CPU in C2.
    # javac stops after flow analysis when nothing failed (should-stop.ifNoError=FLOW): every error the language
    # defines is found by then, and writing ~1,200 class files nobody loads was a fifth of the compile's CPU.
    ran = subprocess.run([javac, "-J-XX:TieredStopAtLevel=1", "-XDshould-stop.ifNoError=FLOW", "-proc:none",
                          "-nowarn", "-d", str(tmp_path / "classes"), "-cp", str(runtime),
                          f"@{tmp_path / 'sources'}"], capture_output=True, text=True, timeout=600,
                         stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
