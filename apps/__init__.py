"""Applications built on topics, one sub-package each (docs/architecture.md 1, "Where code goes").

An application gives a topic's messages a meaning: the part a node runs when its configuration
enables the application, and the part the application's users run beside their node, which
publishes through :mod:`clients`. Applications come after the client libraries and before the lab,
which runs them at scale; nothing of the node imports them, and the composition root (``dmq.cli``)
starts one when the configuration asks for it. Mithril signer registration is the first to come.
"""
