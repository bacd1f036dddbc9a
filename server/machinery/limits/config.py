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
    APF's wait limit.

    The in-flight defaults are kube-apiserver's 400 and 200 divided by about six: kube runs its requests on
    goroutines over every core, while Capstan's run on one event loop, which shares its one core among all of
    them, so each admitted request takes about (requests in flight) x (its own work) to finish. Measured
    under bench.load's 2,000 flooding clients (docs/performance.md, "Mixed load"): another client's small
    GET has a p99 of ~240 ms at 400/200, ~165 ms at 200/100, ~115 ms at 100/50 and ~80 ms at 64/32, the
    flood served at the same rate."""

    max_requests_inflight: int = 64
    max_mutating_requests_inflight: int = 32
    fair_queuing: bool = True
    queues: int = 128
    hand_size: int = 6
    queue_length: int = 50
    queue_wait: float = 15.0

    def limit(self, kind: Kind) -> int:
        return self.max_mutating_requests_inflight if kind is Kind.MUTATING else self.max_requests_inflight


DEFAULT = Limits()
