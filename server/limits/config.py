"""What the limits are (the command's --max-requests-inflight, --max-mutating-requests-inflight and
--enable-priority-and-fairness) and which requests they count."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    """kube-apiserver's request_kind: get, list and watch are read-only, every other verb mutates."""

    READ_ONLY = "readOnly"
    MUTATING = "mutating"


@dataclass(frozen=True, slots=True)
class Limits:
    """Contract: a limit of 0 means unlimited, as in kube-apiserver. With `fair_queuing` a request over its
    limit waits in its flow's queue (at most `queue_length` waiting per queue, for at most `queue_wait`
    seconds) and the queues take turns; without, it is refused at once (kube's max-in-flight filter).
    The queue shape is APF's global-default priority level (128 queues, hands of 6, 50 per queue); 15 s is
    APF's wait limit."""

    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    fair_queuing: bool = True
    queues: int = 128
    hand_size: int = 6
    queue_length: int = 50
    queue_wait: float = 15.0

    def limit(self, kind: Kind) -> int:
        return self.max_mutating_requests_inflight if kind is Kind.MUTATING else self.max_requests_inflight


DEFAULT = Limits()
