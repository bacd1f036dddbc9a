"""A KMS v2 plugin for tests: a real gRPC server on a unix socket speaking kube's KMS v2 API.

It holds its key encryption keys (KEKs) in memory, named by key ID, and encrypts DEKs with AES-GCM under the
current one, as a plugin in front of a real KMS would. Tests change `key_id` to rotate the KEK, set `healthz`
to make Status fail, and read the calls it counted.
"""

from __future__ import annotations

import os
from pathlib import Path

import grpc
import grpc.aio
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from storage.encryption.pb.v2 import kms_pb2, kms_pb2_grpc


class KmsPlugin(kms_pb2_grpc.KeyManagementServiceServicer):
    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.endpoint = f"unix://{socket}"
        self.key_id = "key-1"
        self.healthz = "ok"
        self.version = "v2"
        self.keks: dict[str, bytes] = {}
        self.calls = {"Status": 0, "Encrypt": 0, "Decrypt": 0}
        self._server: grpc.aio.Server | None = None

    def _kek(self, key_id: str) -> bytes:
        return self.keks.setdefault(key_id, os.urandom(32))

    async def start(self) -> None:
        self._server = grpc.aio.server()
        kms_pb2_grpc.add_KeyManagementServiceServicer_to_server(self, self._server)  # type: ignore[no-untyped-call]
        self._server.add_insecure_port(self.endpoint)
        await self._server.start()

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(None)
            self._server = None

    async def Status(
        self, request: kms_pb2.StatusRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> kms_pb2.StatusResponse:
        self.calls["Status"] += 1
        return kms_pb2.StatusResponse(version=self.version, healthz=self.healthz, key_id=self.key_id)

    async def Encrypt(
        self, request: kms_pb2.EncryptRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> kms_pb2.EncryptResponse:
        self.calls["Encrypt"] += 1
        nonce = os.urandom(12)
        sealed = nonce + AESGCM(self._kek(self.key_id)).encrypt(nonce, request.plaintext, None)
        return kms_pb2.EncryptResponse(ciphertext=sealed, key_id=self.key_id,
                                       annotations={"kms.example.com/kek": self.key_id.encode()})

    async def Decrypt(
        self, request: kms_pb2.DecryptRequest, context: grpc.aio.ServicerContext[object, object]
    ) -> kms_pb2.DecryptResponse:
        self.calls["Decrypt"] += 1
        if request.key_id not in self.keks:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"unknown key {request.key_id}")
        plain = AESGCM(self.keks[request.key_id]).decrypt(request.ciphertext[:12], request.ciphertext[12:], None)
        return kms_pb2.DecryptResponse(plaintext=plain)
