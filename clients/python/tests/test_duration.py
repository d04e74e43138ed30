"""parse_duration against the table the C parser's test reads too
(tests/durations.txt at the top of the source tree), so the two cannot
drift apart, and its steps."""
from __future__ import annotations

import os
import unittest

from mccounter import DurationError, parse_duration

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "..", "..", "..", "tests", "durations.txt")


def cases() -> list[tuple[int, str, str]]:
    """The table's cases: (line, input, expected ns or !kind)."""
    out = []
    with open(TABLE, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            end = line.index('"', 1)
            out.append((n, line[1:end], line[end + 1:].strip()))
    return out


class TestDuration(unittest.TestCase):
    """Every case of the shared table, then the steps."""

    def test_table(self) -> None:
        got = cases()
        # A truncated table would pass silently.
        self.assertGreaterEqual(len(got), 60)
        for n, text, want in got:
            with self.subTest(line=n, text=text):
                if want.startswith("!"):
                    with self.assertRaises(DurationError) as cm:
                        parse_duration(text)
                    self.assertEqual(cm.exception.kind, want[1:])
                    self.assertIn('"%s"' % text, str(cm.exception))
                else:
                    self.assertEqual(parse_duration(text), int(want))

    def test_message_shows_the_form(self) -> None:
        with self.assertRaises(DurationError) as cm:
            parse_duration("5 minutes")
        self.assertEqual(str(cm.exception),
                         '"5 minutes" is not a duration (write a number '
                         'and a unit: 250ms, 3s, 5min, 2h)')
        self.assertIsInstance(cm.exception, ValueError)

    def test_steps(self) -> None:
        self.assertEqual(parse_duration("2m", 1_000_000), 120_000)
        self.assertEqual(parse_duration("1.5", 1_000_000), 1_500)
        with self.assertRaises(ValueError):
            parse_duration("0.5ms", 1_000_000)


if __name__ == "__main__":
    unittest.main()
