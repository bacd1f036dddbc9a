// Drives Capstan's CoreService as a Node.js developer would: @grpc/grpc-js over TLS with a bearer token,
// the service loaded from protos/ by @grpc/proto-loader, objects in Kubernetes JSON and in protobuf (the
// bare message from protos/capstan/api/...), errors decoded from their rich details to the Kubernetes
// Status. Prints one JSON line of what it saw; tests/clients/test_node.py checks it.
//
//   CAPSTAN_GRPC=127.0.0.1:50051 CAPSTAN_CA=data/pki/ca.crt CAPSTAN_TOKEN=... node drive.js
"use strict";

const fs = require("fs");
const path = require("path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const protobuf = require("protobufjs");

const ROOT = path.resolve(__dirname, "../..");
const INCLUDES = [path.join(ROOT, "protos"), path.join(ROOT, "third_party/googleapis")];
const NS = process.env.CAPSTAN_NAMESPACE || "default";

function loadTypes() {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    for (const dir of INCLUDES) {
      const candidate = path.join(dir, target);
      if (fs.existsSync(candidate)) return candidate;
    }
    return target; // google/protobuf/*.proto: protobufjs knows the well-known types
  };
  root.loadSync(["capstan/api/core/v1/core.proto", "google/rpc/status.proto"], { keepCase: true });
  return {
    ConfigMap: root.lookupType("k8s.io.api.core.v1.ConfigMap"),
    RpcStatus: root.lookupType("google.rpc.Status"),
    KubeStatus: root.lookupType("k8s.io.apimachinery.pkg.apis.meta.v1.Status"),
  };
}

function client() {
  const definition = protoLoader.loadSync("capstan/core/v1/core_service.proto", {
    includeDirs: INCLUDES, keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(definition);
  const token = process.env.CAPSTAN_TOKEN;
  const tls = grpc.credentials.createSsl(fs.readFileSync(process.env.CAPSTAN_CA));
  const bearer = grpc.credentials.createFromMetadataGenerator((_params, callback) => {
    const md = new grpc.Metadata();
    md.add("authorization", `Bearer ${token}`);
    callback(null, md);
  });
  return new pkg.capstan.core.v1.CoreService(process.env.CAPSTAN_GRPC,
    grpc.credentials.combineChannelCredentials(tls, bearer), { "grpc.primary_user_agent": "capstan-node-test" });
}

function call(core, method, request) {
  return new Promise((resolve, reject) => core[method](request, (err, answer) => (err ? reject(err) : resolve(answer))));
}

// The Kubernetes Status in a failed call's google.rpc.Status details.
function kubeStatus(types, err) {
  const [bin] = err.metadata.get("grpc-status-details-bin");
  const rpc = types.RpcStatus.decode(bin);
  const [detail] = rpc.details;
  const status = types.KubeStatus.toObject(types.KubeStatus.decode(detail.value), { longs: String });
  return { grpcCode: err.code, typeUrl: detail.type_url, code: status.code, reason: status.reason,
           message: status.message };
}

async function main() {
  const types = loadTypes();
  const core = client();
  const collection = { version: "v1", resource: "configmaps", namespace: NS };
  const one = (name) => ({ ...collection, name });
  const seen = {};

  const a = { metadata: { name: "from-json", labels: { app: "node" } }, data: { greeting: "hello" } };
  const created = await call(core, "Create", {
    path: collection, object: { encoding: "ENCODING_JSON", data: Buffer.from(JSON.stringify(a)) } });
  const createdA = JSON.parse(created.object.data.toString());
  seen.createdJson = { name: createdA.metadata.name, kind: createdA.kind };

  const b = types.ConfigMap.encode(types.ConfigMap.fromObject({
    metadata: { name: "from-proto", labels: { app: "node" } }, data: { greeting: "hi" } })).finish();
  const createdB = await call(core, "Create", {
    path: collection, object: { encoding: "ENCODING_PROTOBUF", data: Buffer.from(b) }, accept: "ENCODING_PROTOBUF" });
  const decoded = types.ConfigMap.toObject(types.ConfigMap.decode(createdB.object.data));
  seen.createdProto = { encoding: createdB.object.encoding, name: decoded.metadata.name, data: decoded.data };

  const got = await call(core, "Get", { path: one("from-json"), accept: "ENCODING_JSON_TEXT" });
  seen.getText = { encoding: got.object.encoding, data: JSON.parse(got.object.json).data };

  const listed = await call(core, "List", { path: collection, options: { labelSelector: "app=node" } });
  seen.list = { kind: listed.kind, names: listed.items.map((item) => JSON.parse(item.toString()).metadata.name) };

  const rv = createdA.metadata.resourceVersion;
  await call(core, "Update", { path: one("from-json"), object: { encoding: "ENCODING_JSON", data: Buffer.from(
    JSON.stringify({ ...a, data: { greeting: "again" }, metadata: { ...a.metadata, resourceVersion: rv } })) } });
  try {
    await call(core, "Update", { path: one("from-json"), object: { encoding: "ENCODING_JSON", data: Buffer.from(
      JSON.stringify({ ...a, metadata: { ...a.metadata, resourceVersion: rv } })) } });
    seen.stale = "accepted";
  } catch (err) {
    seen.stale = kubeStatus(types, err);
  }

  const watch = core.Watch({ path: collection, options: { resourceVersion: rv, labelSelector: "app=node" },
                             accept: "ENCODING_JSON_TEXT" });
  const events = [];
  const watched = new Promise((resolve, reject) => {
    watch.on("data", (response) => {
      for (const event of response.events) events.push([event.type, JSON.parse(event.object.json).metadata.name]);
      if (events.some(([type]) => type === "DELETED")) { watch.cancel(); resolve(); }
    });
    watch.on("error", (err) => (err.code === grpc.status.CANCELLED ? resolve() : reject(err)));
  });
  const deleted = await call(core, "Delete", { path: one("from-proto") });
  seen.deleted = { result: deleted.result, status: deleted.status && deleted.status.status };
  await watched;
  seen.watch = events;
  core.close();
  process.stdout.write(JSON.stringify(seen) + "\n");
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
