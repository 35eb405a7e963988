"""``PrometheusSimple suffix|nosuffix host port`` on a running node, as trace-dispatcher treats it.

The reference's parser (``parsePrometheusString`` in trace-dispatcher's ``Cardano.Logging.Types``)
takes ``suffix`` or ``nosuffix`` before the host; ``suffix`` keeps the ``_int``/``_counter``/
``_real`` endings and ``nosuffix`` strips them from the exposition. Mithril's infrastructure
configures its DMQ nodes with ``PrometheusSimple suffix …``. Each node here is started with one of
the two and its page read back: the names, and the typed, integer-valued lines.
"""

from __future__ import annotations

import pytest

from dmq.ports import free_ports

from .test_status_and_dashboard import metrics_page


@pytest.mark.parametrize(("modifier", "mempool", "accepted"), [
    ("suffix", "dmq_node_txsInMempool_int", "dmq_node_localSubmissions_accepted_counter"),
    ("nosuffix", "dmq_node_txsInMempool", "dmq_node_localSubmissions_accepted"),
])
def test_the_modifier_keeps_or_drops_the_type_suffixes(start_node, modifier, mempool, accepted):
    (port,) = free_ports(1)
    start_node(TraceOptions={"": {"severity": "Info",
                                  "backends": ["Stdout MachineFormat", f"PrometheusSimple {modifier} 127.0.0.1 {port}"]}})
    lines = metrics_page(port).splitlines()
    assert f"# TYPE {mempool} gauge" in lines and f"{mempool} 0" in lines
    assert f"# TYPE {accepted} counter" in lines and f"{accepted} 0" in lines
    assert not [line for line in lines if line.startswith("dmq_node_") and line.rsplit(" ", 1)[1].endswith(".0")]
