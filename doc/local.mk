# doc/local.mk: build rules for doc/ (included by the top Makefile.am).
dist_man_MANS += doc/mchost.1
# counterctl's manual and the protocol description (owner: e2e).
dist_man_MANS += doc/counterctl.1
dist_doc_DATA += doc/protocol.md
# How the extension and mchost use memcached's host interface (owner: host).
dist_doc_DATA += doc/host-interface.md
# The layers, ownership and locking rules, a request's walk, adding an opcode.
dist_doc_DATA += doc/design.md
# The rate limits: the three kinds, their exact guarantees, when to use which.
dist_doc_DATA += doc/rate-limits.md
# Tenant throttling: the per-second model, its formulas and guarantees.
dist_doc_DATA += doc/throttling.md
# The Throttr v5 front: settings, requests, differences from Throttr.
dist_doc_DATA += doc/throttr.md
# The client libraries (C and Python), scale-out and its failure policy.
dist_doc_DATA += doc/clients.md
# How the tests are held to account: the audit and the mutation scores.
dist_doc_DATA += doc/testing.md
