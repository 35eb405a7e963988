"""A local DMQ devnet: simulated stake pools, ``dmq-node`` processes, Mithril-style traffic.

``dmq devnet`` and ``dmq demo`` are built from these parts: :mod:`.pools` and :mod:`.genesis`
make the pools and the chain they are registered on, :mod:`.topology` and
:mod:`.node_process` start the nodes, :mod:`.publisher` and :mod:`.aggregator` are the
signers and aggregators, :mod:`.view` and :mod:`.summary` show the run, and
:mod:`.orchestrator` runs it all in order and stops it cleanly.
"""

from .orchestrator import Devnet, DevnetError, DevnetLayout, DevnetOptions, run_devnet
from .summary import DevnetSummary
from .topology import Shape

__all__ = ["Devnet", "DevnetError", "DevnetLayout", "DevnetOptions", "DevnetSummary", "Shape", "run_devnet"]
