"""A DMQ network of real ``dmq-node`` processes, each in its own network namespace.

Where :mod:`lab.devnet` runs its nodes on loopback, ``dmq netlab`` gives each node a
network namespace with its own address from the benchmarking range (:mod:`.addresses`), joined
to one bridge by a veth pair (:mod:`.namespaces`), so a real TCP stack sits between any two
nodes. The pools, genesis, publishers and aggregators are the devnet's; :mod:`.plan` writes the
nodes' files, :mod:`.faults` kills, restarts and partitions nodes, :mod:`.report` sums the run
up and :mod:`.run` does it all in order and removes every namespace at the end.
"""

from .namespaces import NamespacesUnavailable, Lab
from .run import NetlabOptions, run_netlab
from .report import NetlabReport

__all__ = ["Lab", "NamespacesUnavailable", "NetlabOptions", "NetlabReport", "run_netlab"]
