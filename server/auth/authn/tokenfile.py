"""Static bearer tokens (kube's --token-auth-file): a CSV of token,user,uid[,"group1,group2",...].

An unknown token is not this authenticator's to judge (None): the union answers 401 when no token
authenticator knows it.
"""

from __future__ import annotations

import csv
from pathlib import Path

from server.machinery.credentials import Credentials
from server.machinery.user import UserInfo


class TokenFileError(ValueError):
    """The file is not kube's token CSV (the server refuses to start, as kube-apiserver does)."""


def load(path: Path) -> dict[str, UserInfo]:
    tokens: dict[str, UserInfo] = {}
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row or (len(row) == 1 and not row[0].strip()) or row[0].startswith("#"):
                continue
            if len(row) < 3:
                raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, "
                                     f"user uid), found {len(row)} on line {number}")
            token, name, uid = row[0].strip(), row[1].strip(), row[2].strip()
            if not token:
                raise TokenFileError(f"token file '{path}' has an empty token on line {number}")
            groups = tuple(g.strip() for cell in row[3:] for g in cell.split(",") if g.strip())
            tokens[token] = UserInfo(name, uid, groups)
    return tokens


class TokenFileAuthenticator:
    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self._tokens = tokens

    async def authenticate(self, credentials: Credentials) -> UserInfo | None:
        if not credentials.token:
            return None
        return self._tokens.get(credentials.token)
