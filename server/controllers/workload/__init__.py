"""What kube-controller-manager's workload controllers share (kube's pkg/controller/controller_utils.go,
controller_ref_manager.go and client-go's tools/record): the keyed controller shape they run on (`keyed`), the
event recorder (`events`), Pods from templates and readiness (`pods`), expectations (`expectations`), the
controller-ref manager that adopts and releases (`refs`), and the template hashes names are made of (`hashing`).
"""
