"""The duration grammar every part of memcached-counter reads (its C twin
is protocol/duration.c; doc/configuration.md, Durations): a decimal number
with an optional fraction, then a lower-case unit (ns, us, ms, s, m or min,
h); a bare number is seconds. parse_duration gives nanoseconds, for the
window_ns and period_ns arguments, or divides into a coarser step."""
from __future__ import annotations

import re

#: Nanoseconds per unit, as a duration may name it.
UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000,
         "m": 60_000_000_000, "min": 60_000_000_000,
         "h": 3_600_000_000_000}

#: The right form, for messages.
EXAMPLES = "250ms, 3s, 5min, 2h"

_U64_MAX = (1 << 64) - 1
_SHAPE = re.compile(r"(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]+))?(?P<unit>[A-Za-z]*)")

_PROBLEMS = {
    "syntax": ("is not a duration",
               "write a number and a unit: " + EXAMPLES),
    "negative": ("is negative", "write a number and a unit: " + EXAMPLES),
    "unit": ("has an unknown unit",
             "units: ns, us, ms, s, m or min, h, as in " + EXAMPLES),
    "case": ("has its unit in capitals",
             "units are lower case: ns, us, ms, s, m or min, h"),
    "fine": ("is not a whole number of nanoseconds",
             "write a number and a unit: " + EXAMPLES),
    "range": ("is too long",
              "at most 18446744073709551615ns, about 584 years"),
}


class DurationError(ValueError):
    """A text that is not a duration; kind says why (syntax, negative,
    unit, case, fine, range), the message shows the right form."""

    def __init__(self, text: str, kind: str) -> None:
        problem, hint = _PROBLEMS[kind]
        super().__init__('"%s" %s (%s)' % (text, problem, hint))
        self.text = text
        self.kind = kind


def parse_duration(text: str, step_ns: int = 1) -> int:
    """Parses text as a duration and returns it in whole steps of step_ns
    nanoseconds (nanoseconds by default): parse_duration("1.5s") is
    1500000000, parse_duration("2m", 1_000_000) is 120000. Raises
    DurationError when text is no duration, ValueError when it is not a
    whole number of steps."""
    if text.startswith("-"):
        raise DurationError(text, "negative")
    m = _SHAPE.fullmatch(text) if text.isascii() else None
    if m is None or not (m["int"] or m["frac"]):
        raise DurationError(text, "syntax")
    unit = m["unit"] or "s"
    if unit not in UNITS:
        raise DurationError(text, "case" if unit.lower() in UNITS else "unit")
    per = UNITS[unit]
    frac = m["frac"] or ""
    scale = 10 ** len(frac)
    total = int(m["int"] or "0") * per * scale + int(frac or "0") * per
    if total % scale != 0:
        raise DurationError(text, "fine")
    ns = total // scale
    if ns > _U64_MAX:
        raise DurationError(text, "range")
    if ns % step_ns != 0:
        raise ValueError('"%s" is not a whole number of %dns steps'
                         % (text, step_ns))
    steps: int = ns // step_ns
    return steps
