"""Client libraries: what a program beside a DMQ node uses to speak to it over its local socket.

``mithril`` publishes and consumes as Mithril's signer and aggregator do, ``topics`` is the client
of the node's topics (protocol 1000) with the builders of what it publishes, and ``keys`` writes the
stake pool key files a client signs with. They build on the node's layers (``dmq``, ``topics`` and the
protocol packages); nothing of the node imports them (docs/architecture.md 1).
"""
