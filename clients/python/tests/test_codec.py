"""Codec tests: request encoders and answer decoders against the hex
examples of doc/protocol.md, byte for byte."""
from __future__ import annotations

import unittest

from mccounter import ops
from mccounter import protocol as p


def h(s: str) -> bytes:
    """Bytes of a hex example ("90 01 ... | 00 03 ...")."""
    return bytes.fromhex(s.replace("|", " "))


def enc(req: p.Request, opaque: int) -> bytes:
    return p.encode_packet(req.opcode, req.body, opaque)


def dec(s: str) -> p.Packet:
    data = h(s)
    got = p.decode_packet(data)
    assert got is not None and got[1] == len(data)
    return got[0]


class TestRequests(unittest.TestCase):
    """Every encoder against its example."""

    def test_examples(self) -> None:
        cases = [
            (ops.noop(None), 1, "90 00 00 00 00 00 00 00 00 00 00 01"),
            (ops.get("job"), 2,
             "90 01 00 00 00 00 00 05 00 00 00 02 | 00 03 6a 6f 62"),
            (ops.acquire("job", 2, 4), 3,
             "90 02 00 00 00 00 00 0d 00 00 00 03 | 00 00 00 02 00 00 00 04"
             " 00 03 6a 6f 62"),
            (ops.release("job", 1), 4,
             "90 03 00 00 00 00 00 09 00 00 00 04 | 00 00 00 01 00 03 6a 6f 62"),
            (ops.stats(None), 5, "90 10 00 00 00 00 00 00 00 00 00 05"),
            (ops.dump(None), 6, "90 11 00 00 00 00 00 00 00 00 00 06"),
            (ops.wait_acquire("job", 2, 4, 5, 30), 0x10,
             "90 20 00 00 00 00 00 15 00 00 00 10 | 00 00 00 02 00 00 00 04"
             " 00 00 13 88 00 00 75 30 00 03 6a 6f 62"),
            (ops.wait_acquire("licence", 1, 0, None, None), 0x12,
             "90 20 00 00 00 00 00 19 00 00 00 12 | 00 00 00 01 00 00 00 00"
             " ff ff ff ff ff ff ff ff 00 07 6c 69 63 65 6e 63 65"),
            (ops.renew("job", 60), 0x14,
             "90 21 00 00 00 00 00 09 00 00 00 14 | 00 00 ea 60 00 03 6a 6f 62"),
            (ops.wait_release("job"), 0x16,
             "90 22 00 00 00 00 00 05 00 00 00 16 | 00 03 6a 6f 62"),
            (ops.queues(None), 0x17, "90 23 00 00 00 00 00 00 00 00 00 17"),
            (ops.ttl_insert("job", 5, 3, p.Unit.S), 0x30,
             "90 30 00 00 00 00 00 16 00 00 00 30 | 00 00 00 00 00 00 00 05"
             " 00 00 00 00 00 00 00 03 03 00 03 6a 6f 62"),
            (ops.ttl_query("job"), 0x31,
             "90 31 00 00 00 00 00 05 00 00 00 31 | 00 03 6a 6f 62"),
            (ops.ttl_update("job", p.TtlAttribute.QUOTA, p.TtlChange.DECREASE,
                            2, p.Unit.NS), 0x32,
             "90 32 00 00 00 00 00 10 00 00 00 32 | 00 02 00 00 00 00 00 00"
             " 00 00 02 00 03 6a 6f 62"),
            (ops.ttl_update("job", p.TtlAttribute.TTL, p.TtlChange.INCREASE,
                            500, p.Unit.MS), 0x34,
             "90 32 00 00 00 00 00 10 00 00 00 34 | 01 01 02 00 00 00 00 00"
             " 00 01 f4 00 03 6a 6f 62"),
            (ops.ttl_purge("job"), 0x35,
             "90 33 00 00 00 00 00 05 00 00 00 35 | 00 03 6a 6f 62"),
            (ops.window_check("api", 10), 0x36,
             "90 34 00 00 00 00 00 19 00 00 00 36 | 00 00 00 00 00 00 00 0a"
             " 00 00 00 01 00 00 00 00 00 00 00 00 00 03 61 70 69"),
            (ops.gcra_check("api", 5, 10, 1), 0x3a,
             "90 35 00 00 00 00 00 1d 00 00 00 3a | 00 00 00 00 00 00 00 05"
             " 00 00 00 0a 00 00 00 01 00 00 00 00 3b 9a ca 00 00 03 61 70 69"),
            (ops.gcra_check("api", 5, 10, 1.0, peek=True), 0x3c,
             "90 35 00 00 00 00 00 1d 00 00 00 3c | 01 00 00 00 00 00 00 05"
             " 00 00 00 0a 00 00 00 01 00 00 00 00 3b 9a ca 00 00 03 61 70 69"),
            (ops.multi_check([p.WindowItem("api", 10),
                              p.GcraItem("api", 5, 10, 1)]), 0x3d,
             "90 36 00 00 00 00 00 3e 00 00 00 3d | 00 02 34 00 19 00 00 00 00"
             " 00 00 00 0a 00 00 00 01 00 00 00 00 00 00 00 00 00 03 61 70 69"
             " 35 00 1d 00 00 00 00 00 00 00 05 00 00 00 0a 00 00 00 01 00 00"
             " 00 00 3b 9a ca 00 00 03 61 70 69"),
            (ops.auth("s3cret", None), 0x40,
             "90 40 00 00 00 00 00 08 00 00 00 40 | 00 06 73 33 63 72 65 74"),
            (ops.auth_user("bob", "bob-secret-0123456", True), 0x4a,
             "90 4a 00 00 00 00 00 1b 00 00 00 4a | 01 00 00 12 00 03 62 6f"
             " 62 62 6f 62 2d 73 65 63 72 65 74 2d 30 31 32 33 34 35 36"),
            (ops.auth_user(b"bob", b"pw"), 0x4b,
             "90 4a 00 00 00 00 00 0b 00 00 00 4b | 00 00 00 02 00 03 62 6f"
             " 62 70 77"),
            (ops.throttle("acme", 5), 0x41,
             "90 41 00 00 00 00 00 0a 00 00 00 41 | 00 00 00 05 00 04 61 63 6d 65"),
            (ops.tenant_show("acme"), 0x45,
             "90 42 00 00 00 00 00 06 00 00 00 45 | 00 04 61 63 6d 65"),
            (ops.tenant_list(None), 0x47, "90 43 00 00 00 00 00 00 00 00 00 47"),
            (ops.node_show(None), 0x48, "90 44 00 00 00 00 00 00 00 00 00 48"),
            (ops.tenant_set("acme", 10, 50), 0x49,
             "90 45 00 00 00 00 00 12 00 00 00 49 | 03 00 00 00 00 00 00 0a"
             " 00 00 00 32 00 04 61 63 6d 65"),
            (ops.tenant_set("big", reserved=80), 0x4a,
             "90 45 00 00 00 00 00 11 00 00 00 4a | 01 00 00 00 00 00 00 50"
             " 00 00 00 00 00 03 62 69 67"),
            (ops.tenant_set("acme", hard_limit=p.UNLIMITED), 0x4b,
             "90 45 00 00 00 00 00 12 00 00 00 4b | 02 00 00 00 00 00 00 00"
             " ff ff ff ff 00 04 61 63 6d 65"),
            (ops.tenant_remove("acme"), 0x4c,
             "90 46 00 00 00 00 00 06 00 00 00 4c | 00 04 61 63 6d 65"),
            (ops.node_set(100, None), 0x4d,
             "90 47 00 00 00 00 00 04 00 00 00 4d | 00 00 00 64"),
            (ops.unthrottle(None), 0x4f, "90 48 00 00 00 00 00 00 00 00 00 4f"),
            (ops.reload(None), 0x50, "90 49 00 00 00 00 00 00 00 00 00 50"),
            (ops.tenant_set_json("a", b'{"reserved":1}'), 0x51,
             "90 2a 00 00 00 00 00 11 00 00 00 51 | 00 01 61 7b 22 72 65 73"
             " 65 72 76 65 64 22 3a 31 7d"),
            (ops.tenant_set_json("a", {"reserved": 1}), 0x52,
             "90 2a 00 00 00 00 00 11 00 00 00 52 | 00 01 61 7b 22 72 65 73"
             " 65 72 76 65 64 22 3a 31 7d"),
            (ops.node_set_json('{"capacity":9}', None), 0x53,
             "90 2c 00 00 00 00 00 0e 00 00 00 53 | 7b 22 63 61 70 61 63 69"
             " 74 79 22 3a 39 7d"),
            (ops.lease_list(10, None), 0x54,
             "90 24 00 00 00 00 00 04 00 00 00 54 | 00 00 00 0a"),
            (ops.busiest(5, None), 0x54,
             "90 37 00 00 00 00 00 04 00 00 00 54 | 00 00 00 05"),
        ]
        for req, opaque, want in cases:
            self.assertEqual(enc(req, opaque).hex(" "), h(want).hex(" "),
                             p.Op(req.opcode).name)


class TestAnswers(unittest.TestCase):
    """Every decoder against its example."""

    def test_simple(self) -> None:
        self.assertEqual(p.decode_u32(dec(
            "91 01 00 00 00 00 00 04 00 00 00 02 | 00 00 00 03")), 3)
        p.decode_none(dec("91 00 00 00 00 00 00 00 00 00 00 01"))
        self.assertEqual(p.decode_u64(dec(
            "91 21 00 00 00 00 00 08 00 00 00 14 | 00 00 00 00 00 00 00 07")),
            7)

    def test_json(self) -> None:
        self.assertEqual(p.decode_json(dec(
            "91 2c 00 00 00 00 00 0e 00 00 00 01 | 7b 22 63 61 70 61 63 69"
            " 74 79 22 3a 39 7d")), {"capacity": 9})
        with self.assertRaises(p.StatusError) as cm:
            p.decode_json(dec("91 2c 04 00 00 00 00 03 00 00 00 01 | 61 62"
                              " 63"))
        self.assertEqual(cm.exception.text, "abc")
        with self.assertRaises(p.ProtocolError):
            p.decode_json(dec("91 2c 00 00 00 00 00 01 00 00 00 01 | 7b"))
        with self.assertRaises(ValueError):
            ops.node_set_json(b" " * (p.JSON_DOC_MAX + 1), None)

    def test_errors(self) -> None:
        pkt = dec("91 02 21 00 00 00 00 16 00 00 00 03 | 52 65 73 6f 75 72 63"
                  " 65 20 6e 6f 74 20 61 76 61 69 6c 61 62 6c 65")
        with self.assertRaises(p.StatusError) as cm:
            p.decode_u32(pkt)
        self.assertEqual((cm.exception.status, cm.exception.text,
                          cm.exception.opcode),
                         (0x21, "Resource not available", 0x02))
        for st, text in p.STATUS_TEXT.items():
            if st == p.Status.THROTTLED:
                continue            # its body starts with binary fields
            body = text.encode()
            raw = bytes([0x91, 0x01, st, 0, 0, 0, 0, len(body), 0, 0, 0, 1])
            got = p.decode_packet(raw + body)
            assert got is not None
            with self.assertRaises(p.StatusError) as cm:
                p.decode_u32(got[0])
            self.assertEqual(cm.exception.text, text)

    def test_error_classes(self) -> None:
        """Each status users branch on raises its own StatusError
        subclass; the others StatusError itself."""
        want = {
            p.Status.NOT_FOUND: p.NotFound,
            p.Status.RESOURCE_NOT_AVAILABLE: p.Busy,
            p.Status.TOO_MANY_WAITS: p.Busy,
            p.Status.NOT_ACQUIRED: p.NotAcquired,
            p.Status.EXCEEDS_MAXIMUM: p.ExceedsMaximum,
            p.Status.UNKNOWN_GROUP: p.UnknownGroup,
            p.Status.LEASE_EXPIRED: p.LeaseExpired,
            p.Status.EXISTS: p.Exists,
            p.Status.NOT_PERMITTED: p.NotPermitted,
            p.Status.AUTH_FAILED: p.AuthFailed,
            p.Status.OVER_CAPACITY: p.OverCapacity,
            p.Status.THROTTLED: p.Throttled,
        }
        for st in list(p.Status)[1:] + [0x99]:
            raw = bytes([0x91, 0x01, st, 0, 0, 0, 0, 1, 0, 0, 0, 1]) + b"x"
            if st == p.Status.THROTTLED:
                raw = bytes([0x91, 0x01, st, 0, 0, 0, 0, 9, 0, 0, 0, 1]) + \
                    bytes(8) + b"\x01"
            got = p.decode_packet(raw)
            assert got is not None
            with self.assertRaises(p.StatusError) as cm:
                p.decode_none(got[0])
            self.assertIs(type(cm.exception), want.get(st, p.StatusError),
                          hex(st))
            self.assertEqual(cm.exception.status, st)
        self.assertTrue(issubclass(p.AuthFailed, p.NotPermitted))

    def test_throttled(self) -> None:
        """A Throttled answer (protocol.md's example: an Acquire 250 ms
        into a second, over the pool) to any opcode raises Throttled with
        the hint in seconds and the reason; a body too short for them is
        the server's fault."""
        pkt = dec("91 02 2d 00 00 00 00 12 00 00 00 4b | 00 00 00 00 2c b4"
                  " 17 80 02 54 68 72 6f 74 74 6c 65 64")
        with self.assertRaises(p.Throttled) as cm:
            p.decode_u32(pkt)
        e = cm.exception
        self.assertIsInstance(e, p.StatusError)
        self.assertEqual((e.status, e.opcode, e.text, e.reason),
                         (0x2D, 0x02, "Throttled", p.ThrottleReason.POOL_EMPTY))
        self.assertAlmostEqual(e.retry_after, 0.75)
        with self.assertRaises(p.ProtocolError):
            p.decode_none(dec("91 00 2d 00 00 00 00 08 00 00 00 01"
                              " | 00 00 00 00 00 00 00 01"))

    def test_seconds(self) -> None:
        """Durations are seconds; the wire's ms and ns are rounded."""
        self.assertEqual(p.seconds_ms(1.5, "wait"), 1500)
        self.assertEqual(p.seconds_ms(None, "wait"), p.GROUP_DEFAULT)
        self.assertEqual(p.seconds_ns(0.25, "window"), 250_000_000)
        self.assertEqual(p.seconds_ns(None, "window"), 0)
        for bad in (-1, float("inf"), float("nan")):
            with self.assertRaises(ValueError) as cm:
                p.seconds_ms(bad, "lease")
            self.assertIn("lease", str(cm.exception))
        with self.assertRaises(TypeError):
            p.seconds_ns("1s", "period")  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            p.seconds_ms(4294967.295, "wait")   # the "group's" value

    def test_stats(self) -> None:
        pkt = p.Packet(0x91, 0x10, 0, 5, h("00 07 00 01 6f 62 6a 65 63 74 73 33"))
        self.assertEqual(p.decode_stats(pkt), {"objects": "3"})

    def test_records(self) -> None:
        r = p.decode_dump_record(dec(
            "91 11 00 00 00 00 00 0d 00 00 00 06 | 00 00 00 03 00 00 00 04"
            " 00 03 6a 6f 62"))
        self.assertEqual((r.name, r.current, r.maximum), (b"job", 3, 4))
        q = p.decode_queue_record(dec(
            "91 23 00 00 00 00 00 0d 00 00 00 17 | 00 00 00 02 00 00 00 01"
            " 00 03 6a 6f 62"))
        self.assertEqual((q.name, q.consumption, q.length), (b"job", 2, 1))
        lr = p.decode_lease_record(dec(
            "91 24 00 00 00 00 00 15 00 00 00 21 | 00 00 05 dc 01 02 03 04"
            " 05 06 07 08 00 00 00 03 00 03 6a 6f 62"))
        self.assertEqual(lr, p.LeaseRecord(b"job", 1.5, 0x0102030405060708,
                                           3))
        t = p.decode_tenant_record(dec(
            "91 43 00 00 00 00 00 26 00 00 00 47 | 00 00 00 0a 00 00 00 32 00"
            " 00 00 05 01 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 00 00"
            " 00 05 00 04 61 63 6d 65"))
        self.assertEqual(t, p.TenantView(10, 50, 5, True, 1, 5, b"acme"))
        b = p.decode_busy_record(dec(
            "91 37 00 00 00 00 00 0a 00 00 00 54 | 00 00 00 09 02 00 03 61"
            " 70 69"))
        self.assertEqual(b, p.BusyRecord(b"api", p.LimitKind.GCRA, 9))
        with self.assertRaises(p.ProtocolError):
            p.decode_busy_record(dec(
                "91 37 00 00 00 00 00 0a 00 00 00 54 | 00 00 00 09 07 00 03"
                " 61 70 69"))
        with self.assertRaises(p.ProtocolError):
            p.decode_busy_record(dec(
                "91 37 00 00 00 00 00 09 00 00 00 54 | 00 00 00 09 02 00 03"
                " 61 70"))

    def test_wait_and_events(self) -> None:
        w = p.decode_wait(dec(
            "91 20 00 00 00 00 00 14 00 00 00 11 | 01 00 00 00 00 00 00 01 00"
            " 00 00 00 00 00 00 00 00 00 00 02"))
        self.assertEqual(w, p.WaitAnswer(False, 1, 0, 2))
        w = p.decode_wait(dec(
            "91 20 00 00 00 00 00 14 00 00 00 10 | 00 00 00 00 00 00 00 00 00"
            " 00 00 00 00 00 00 07 00 00 00 02"))
        self.assertEqual(w, p.WaitAnswer(True, 0, 7, 2))
        for code, body, want in [
            (0x01, "00 00 00 00 00 00 00 08 00 00 00 03", (8, 3)),
            (0x02, "00 00 00 00 00 00 00 00 00 00 00 00", (0, 0)),
            (0x03, "00 00 00 00 00 00 00 07 00 00 00 02", (7, 2)),
            (0x04, "00 00 00 00 00 00 00 07 00 00 00 02", (7, 2)),
        ]:
            pkt = dec("92 %02x 00 00 00 00 00 11 00 00 00 11 | %s 00 03 6a 6f"
                      " 62" % (code, body))
            self.assertEqual(pkt.magic, p.MAGIC_EVENT)
            ev = p.decode_event(pkt)
            self.assertEqual((ev.kind, ev.opaque, ev.lease_id, ev.value,
                              ev.name), (code, 0x11, *want, b"job"))

    def test_ttl_and_checks(self) -> None:
        v = p.decode_ttl_view(dec(
            "91 31 00 00 00 00 00 11 00 00 00 31 | 00 00 00 00 00 00 00 05 00"
            " 00 00 00 00 00 00 03 03"))
        self.assertEqual(v, p.TtlView(5, 3, p.Unit.S))
        c = p.decode_check(dec(
            "91 34 00 00 00 00 00 20 00 00 00 38 | 02 00 00 00 00 00 00 0a 00"
            " 00 00 0a 00 00 00 00 ff ff ff ff ff ff ff ff 00 00 00 00 00 00"
            " 00 00"))
        self.assertEqual(c, p.CheckAnswer(p.CheckState.NEVER, 10, 10, 0,
                                          p.RETRY_NEVER, 0))
        m = p.decode_multi(dec(
            "91 36 00 00 00 00 00 42 00 00 00 3d | 01 02 01 00 00 00 00 00 00"
            " 0a 00 00 00 00 00 00 00 0a 00 00 00 00 41 90 ab 00 00 00 00 00"
            " 41 90 ab 00 01 00 00 00 00 00 00 06 00 00 00 00 00 00 00 06 00"
            " 00 00 00 05 f5 e1 00 00 00 00 00 23 c3 46 00"))
        self.assertFalse(m.allowed)
        self.assertEqual([i.state for i in m.items],
                         [p.CheckState.LIMITED, p.CheckState.LIMITED])
        self.assertEqual(m.items[1].reset_after_ns, 600000000)

    def test_throttle_views(self) -> None:
        t = p.decode_throttle(dec(
            "91 41 00 00 00 00 00 18 00 00 00 42 | 01 03 00 00 00 00 00 05 00"
            " 00 00 2d 00 00 00 00 00 00 00 00 0e e6 b2 80"))
        self.assertEqual(t, p.ThrottleAnswer(False, p.ThrottleReason.HARD_LIMIT,
                                             5, 45, 250000000))
        n = p.decode_node_view(dec(
            "91 44 00 00 00 00 00 20 00 00 00 48 | 00 00 00 64 00 00 00 05 00"
            " 00 00 46 00 00 00 00 00 00 00 1e 00 00 00 02 00 00 00 00 00 00"
            " 00 01"))
        self.assertEqual(n, p.NodeView(100, 5, 70, 0, 30, 2, 1))
        v = p.decode_tenant_view(dec(
            "91 42 00 00 00 00 00 20 00 00 00 46 | 00 00 00 00 ff ff ff ff 00"
            " 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
            " 00 00"))
        self.assertEqual(v.hard_limit, p.UNLIMITED)
        self.assertFalse(v.configured)

    def test_framing(self) -> None:
        data = h("91 01 00 00 00 00 00 04 00 00 00 02 | 00 00 00 03")
        for cut in range(len(data)):
            self.assertIsNone(p.decode_packet(data[:cut]))
        with self.assertRaises(p.ProtocolError):
            p.decode_packet(b"\x90" + data[1:])
        with self.assertRaises(p.ProtocolError):
            p.decode_u32(p.Packet(0x91, 1, 0, 1, b"\x00"))


if __name__ == "__main__":
    unittest.main()
