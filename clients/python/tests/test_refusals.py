"""Argument refusals: bad input is a ValueError (or TypeError) naming what
is wrong, raised before anything is sent (the servers here do not exist,
so anything sent would be a ServerDown instead)."""
from __future__ import annotations

import unittest

from mccounter import Client, GcraItem, WindowItem
from mccounter import ops


class TestRefusals(unittest.TestCase):
    """Every refusal the clients make on their own."""

    def setUp(self) -> None:
        self.c = Client("127.0.0.1:1,127.0.0.2:1,127.0.0.3:1", timeout=1)

    def tearDown(self) -> None:
        self.c.close()

    def refused(self, fn, *args, word: str = "", **kw) -> None:
        with self.assertRaises(ValueError) as cm:
            fn(*args, **kw)
        self.assertIn(word, str(cm.exception))

    def test_names(self) -> None:
        self.refused(self.c.get, "", word="name is empty")
        self.refused(self.c.get, b"x" * 65536, word="more than 65535")
        self.refused(self.c.throttle, "", 1, word="tenant is empty")
        self.refused(self.c.auth, "", server="127.0.0.1:1",
                     word="secret is empty")
        with self.assertRaises(TypeError):
            self.c.get(5)  # type: ignore[arg-type]
        self.refused(self.c.auth_user, "", "s", word="user is empty")
        self.refused(self.c.auth_user, "bob", b"", word="secret is empty")
        self.refused(self.c.auth_user, "u" * 40000, "s" * 40000,
                     word="together")
        # The login a client's connections start with is checked when the
        # client is made.
        self.refused(Client, "127.0.0.1:1", user="bob",
                     word="user needs the user's secret")
        self.refused(Client, "127.0.0.1:1", user="", secret="s",
                     word="user is empty")

    def test_busiest(self) -> None:
        self.refused(self.c.busiest, -1, server="127.0.0.1:1", word="count")
        self.refused(self.c.busiest, 1 << 32, server="127.0.0.1:1",
                     word="count")
        with self.assertRaises(TypeError):
            self.c.busiest("5", server="127.0.0.1:1")  # type: ignore

    def test_numbers(self) -> None:
        self.refused(self.c.acquire, "a", 5, 4, word="above the maximum")
        self.refused(self.c.acquire, "a", 0, 4, word="resources")
        self.refused(self.c.acquire, "a", 1, 1 << 32, word="maximum")
        self.refused(self.c.wait_acquire_start, "a", 3, 2, 0,
                     word="above the maximum")
        self.refused(self.c.release, "a", -1, word="resources")
        self.refused(self.c.renew, "a", 0, word="lease")
        self.refused(self.c.renew, "a", 0.0004, word="lease")
        self.refused(self.c.wait_acquire_start, "a", 1, 2, -1, word="wait")
        self.refused(self.c.wait_acquire_start, "a", 1, 2, float("nan"),
                     word="wait")
        self.refused(self.c.wait_acquire_start, "a", 1, 2, 0, 5e6,
                     word="lease")
        self.refused(self.c.window_check, "a", 1, window=-1, word="window")
        self.refused(self.c.ttl_insert, "a", 1, 0, word="ttl")
        self.refused(self.c.ttl_insert, "a", 1, 1, 6, word="unit")
        self.refused(self.c.ttl_update, "a", 2, 0, 1, word="attribute")
        self.refused(self.c.window_check, "a", 1, cost=0, word="cost")
        self.refused(self.c.window_check, "a", 1, slots=65, word="slots")
        self.refused(self.c.gcra_check, "a", 1, 0, 10, word="count")
        self.refused(self.c.gcra_check, "a", 1, 1, 0, word="period")
        self.refused(self.c.throttle, "t", 0, word="units")
        self.refused(self.c.lease_list, 0, server="127.0.0.1:1",
                     word="count")
        self.refused(self.c.tenant_set, "t", word="reserved or hard_limit")
        self.refused(self.c.tenant_set, "t", 10, 5, word="below reserved")
        self.refused(self.c.node_set_json, " " * 4097, word="at most 4096")
        self.refused(self.c.tenant_set_json, "t", 5, word="dict, str or bytes")

    def test_multi(self) -> None:
        self.refused(self.c.multi_check, [], word="at least one")
        items = [WindowItem("same-%d" % i, 10) for i in range(17)]
        self.refused(ops.multi_check, items, word="more than 16")
        # Names on different servers of the three.
        names = ["n%d" % i for i in range(50)]
        first = self.c.server_for(names[0])
        other = next(n for n in names if self.c.server_for(n) != first)
        self.refused(self.c.multi_check,
                     [WindowItem(names[0], 5), GcraItem(other, 1, 1, 1e-8)],
                     word="different servers")

    def test_node_wide_needs_server(self) -> None:
        self.refused(self.c.stats, word="server= is required")
        self.refused(self.c.stats, server="nowhere:1", word="not in the")

    def test_client_arguments(self) -> None:
        self.refused(Client, "", word="empty")
        self.refused(Client, "a:1", timeout=0, word="timeout")


if __name__ == "__main__":
    unittest.main()
