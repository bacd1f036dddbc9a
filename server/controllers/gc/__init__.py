"""Garbage collection of ownerReferences, built in: kube-controller-manager's garbage collector.

A delete's propagation policy becomes a finalizer in the core (server/objects/delete.py);
the collector does the rest:

- Background: the owner is gone at once; its DELETED event makes the collector check each
  dependent, which it deletes once it has read that none of the owners it names exists.
- Foreground: the owner stays with `foregroundDeletion`; the collector deletes its dependents
  (those with dependents of their own in the foreground too), and removes the finalizer once no
  dependent with blockOwnerDeletion remains, so the owner goes last.
- Orphan: the owner stays with `orphan`; the collector removes its reference from every
  dependent, then the finalizer.

graph.py keeps who owns whom, collector.py keeps the graph from the store and runs the
workers (on server/runtime), work.py does one item through the core's verbs.

Elected (server/runtime/election.py): it runs in the leading core only, started afresh (a new list of
the store, so it resumes whatever the previous leader left) each time that core becomes leader.
"""

from server.controllers.gc.collector import GarbageCollector

__all__ = ["GarbageCollector"]
