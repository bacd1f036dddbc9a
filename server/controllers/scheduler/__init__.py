"""kube-scheduler 1.28's default profile as an elected controller: `model` reads Pods and Nodes into what the
plugins use, `cache` keeps each Node with its bound and assumed Pods, `plugins` holds the filters and scores,
`preemption` DefaultPreemption, `queue` the scheduling queue, `events` the events.k8s.io recorder, `scheduler` the
loop that binds."""
