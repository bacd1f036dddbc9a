"""Certificate pools that trust as Go's crypto/x509 does.

Go verifies a chain against a pool of roots and accepts any certificate found in that pool as the chain's
anchor, self-signed or not. OpenSSL, under Python's ssl, anchors only on self-signed roots unless told
otherwise. A caBundle (webhooks, conversion, APIServices), a --client-ca-file or an --oidc-ca-file that holds
an intermediate or the server's own leaf certificate is common: controller-runtime's envtest, for one, puts
its webhook server's serving certificate in the caBundle. kube-apiserver trusts it; so must Capstan.
"""

from __future__ import annotations

import ssl


def as_go_pool(context: ssl.SSLContext) -> ssl.SSLContext:
    """`context`, with every certificate it loads as trusted a trust anchor (OpenSSL's partial chains)."""
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    return context
