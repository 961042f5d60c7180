"""The sandbox: a simulated GPU cluster (etcd, kube-apiserver, kwok nodes, the real Kueue) in
a network namespace of its own, shaped like a stack. Rehearsal, the what-if's sandbox engine
and the benchmarks drive it from the sub-packages above it; the fast what-if needs none of it
(gpu_queues/whatif)."""
