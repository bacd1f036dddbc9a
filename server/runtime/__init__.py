"""The controller runtime every controller and every serving index runs on, as client-go's tools/cache,
util/workqueue and leaderelection:

- reflector.py: the one list-then-watch loop (relist after a 410 or a dropped watch), over the core or the store;
- informer.py: shared informers with an indexed cache and add/update/delete handlers (SharedInformers: one
  informer per resource for every part of a core; Subscriptions: one user's handlers on them);
- workqueue.py: the rate-limited work queue (dedup, dirty and processing sets, per-item exponential backoff,
  Forget, ShutDown); worker.py: its consumers;
- election.py: leader election on a Lease; singletons.py: what runs while leading; tasks.py: stopping tasks.

It imports only what is below it (the store, the generic verbs, API machinery), never auth, kinds, admission or
the controllers.
"""
