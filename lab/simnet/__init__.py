"""Thousands of DMQ nodes in one process on trio's virtual clock, over simulated links.

The simulated-time part of the network-scale study (docs/network-scale.md, "Simulated
time"): the node code of ``dmq netlab`` (governor, sig submission over the mux, in-flight
registry, validation, mempool) runs unchanged, each node with its own store, while the
links between them (:mod:`.links`) add the round-trip times of real regions (:mod:`.regions`),
jitter, loss and bandwidth. The workload, topology and faults are netlab's
(:mod:`.workload`, :mod:`lab.netlab.faults`); :mod:`.attacks` adds a flooding peer
and an eclipse attempt; :mod:`.deliveries` measures, :mod:`.report` sums up and :mod:`.run`
does it all in order; :mod:`.shards` splits one run over two processes by region. :mod:`.registration` runs the Mithril signer-registration application on
every node instead (docs/mithril-registration.md 10.1), with the signers of :mod:`.signers`, and
:mod:`.registration_report` sums it up.
"""

from .report import REPORT_FILE, SimnetReport
from .run import Simnet, SimnetOptions, run_simnet

__all__ = ["REPORT_FILE", "Simnet", "SimnetOptions", "SimnetReport", "run_simnet"]
