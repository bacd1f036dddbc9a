"""The composition root: the `capstan` command, its launcher, the in-process transport, PKI, TLS and kubeconfig."""
