"""Ouroboros mini-protocols of the DMQ node, on a small typed-protocol framework.

``framework`` holds the machinery (state tables as data, a driver that enforces them);
each sub-package is one protocol split as the reference splits it: ``types`` (states,
messages, limits, the table), ``codec``, ``spec`` (the assembled protocol), ``client`` and
``server``. Messages of the node travel through them as their exact CBOR bytes.
"""
