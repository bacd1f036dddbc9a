"""Load shedding at the front of each transport (kube-apiserver's max-in-flight filter and the fair queuing of
API Priority and Fairness): how many requests run at once, separately for read-only and mutating ones, and who
waits or is refused (429 TooManyRequests) when more arrive. One Limiter serves every transport of a process;
the gateway's middleware (gateway/limits.py) and the gRPC servicer (server/service/servicer.py) ask it before anything
else runs.
"""
