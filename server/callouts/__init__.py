"""Calls from the API server out to the servers that extend it: admission webhooks and CRD conversion webhooks,
as kube-apiserver's webhook client (k8s.io/apiserver/pkg/util/webhook) makes them.

One `Callouts` client per core serves every webhook: `client.py` resolves a clientConfig (a `url`, or a
`service` resolved to a ready endpoint through a reader the caller passes in, as kube-apiserver does with
--enable-aggregator-routing), verifies TLS against the configuration's caBundle under the server name kube uses
(`<service>.<namespace>.svc`), bounds every call by its own deadline and reuses connections per configuration;
`metrics.py` counts admission webhook calls under kube's `apiserver_admission_webhook_*` names.

This package sits directly above server.machinery: it imports only machinery, the generated code and
third-party libraries, so every layer above (admission, the CRD conversion) shares one client.
"""
