"""Lab harnesses: whole DMQ networks, started to test and measure the node.

``devnet`` runs node processes on loopback with simulated stake pools and Mithril-style traffic,
``netlab`` runs them in network namespaces with faults and attackers, and ``simnet`` runs thousands of
nodes in one process on a virtual clock. They drive the networks with the client libraries
(:mod:`clients`) and the applications (:mod:`apps`); nothing but the ``dmq`` commands that run
them, the tests and the benchmarks imports them (docs/architecture.md 1).
"""
