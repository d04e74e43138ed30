#!/usr/bin/env python3
"""mutate.py: mutation testing of engine/core and protocol/.

Applies one small mutation at a time to a source file, rebuilds only the
unit test program of that file's module, runs it with a timeout and says
whether the tests noticed (killed), did not (survived), hung (timeout) or
the mutant did not compile (stillborn, left out of the score). Surviving
mutants are printed as diffs, so that each gets a test or a note why it is
equivalent (doc/testing.md keeps the scores).

It never writes to the worktree: it copies the tracked files (as they are
in the worktree, committed or not) into a work directory, configures a
build there once, and mutates the copy, restoring each file after its
mutant. It is not part of `make check`: run it by hand, one job at a time,
e.g.

    nice -n 15 scripts/mutate.py engine/core/ticket.c protocol/wire.c
    nice -n 15 scripts/mutate.py --all
    nice -n 15 scripts/mutate.py --all --max 60    # a sample per file

Operators (each mutant applies exactly one):
  cmp-flip     negate a comparison: == <-> !=, < -> >=, > -> <=, ...
  cmp-bound    move a boundary by one: < <-> <=, > <-> >=
  logic-swap   && <-> ||
  stmt-drop    drop a one-line expression statement (call, assignment,
               increment), replacing it with ;
  return-early return at the top of a function (nothing, 0, false, NULL
               by its return type)
"""

import argparse
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

# The unit test programs of each file's module (tests/local.mk builds one
# per source file; the limits_* files share test_limits, and the table's
# hooks for waiting are exercised by test_waits, which builds on it). A
# mutant is killed when any of them fails.
TEST_OF = {
    'engine/core/map.c': 'test_map',
    'engine/core/table.c': 'test_table test_waits',
    'engine/core/waits.c': 'test_waits',
    'engine/core/ticket.c': 'test_ticket',
    'engine/core/wheel.c': 'test_wheel',
    'engine/core/limits.c': 'test_limits',
    'engine/core/limits_check.c': 'test_limits',
    'engine/core/limits_gcra.c': 'test_limits',
    'engine/core/limits_ttl.c': 'test_limits',
    'engine/core/limits_window.c': 'test_limits',
    'engine/core/throttle.c': 'test_throttle',
    'engine/core/groups.c': 'test_groups',
    'protocol/request.c': 'test_request',
    'protocol/response.c': 'test_response',
    'protocol/wire.c': 'test_wire',
}

OPERATORS = ('cmp-flip', 'cmp-bound', 'logic-swap', 'stmt-drop',
             'return-early')

FLIP = {'==': '!=', '!=': '==', '<': '>=', '>': '<=', '<=': '>', '>=': '<'}
BOUND = {'<': '<=', '<=': '<', '>': '>=', '>=': '>'}
SWAP = {'&&': '||', '||': '&&'}

# Words that begin a line which is not an expression statement.
NOT_EXPR = re.compile(
    r'^\s*(return|break|continue|goto|case|default|typedef|else|do|if|'
    r'for|while|switch|static|extern|const|volatile|unsigned|signed|'
    r'struct|union|enum|_Static_assert|static_assert)\b')
# A declaration: a type name, stars, then the declared name.
DECL = re.compile(r'^\s*[A-Za-z_]\w*[\s*]+[A-Za-z_]\w*\s*(=|;|\[|,)')


def mask_source(text):
    """text with comments, string and character literals and preprocessor
    lines blanked (newlines kept), so that operators are found in code
    only."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == '#':
            # A preprocessor line, with its continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out[i] = ' '
                    i += 2
                    continue
                out[i] = ' '
                i += 1
            continue
        if c == '\n':
            at_line_start = True
            i += 1
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if text[k] != '\n':
                    out[k] = ' '
            i = j
            continue
        if text.startswith('//', i):
            while i < n and text[i] != '\n':
                out[i] = ' '
                i += 1
            continue
        if c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            for k in range(i + 1, min(j, n)):
                out[k] = ' '
            i = j + 1
            continue
        i += 1
    return ''.join(out)


def operator_sites(masked):
    """(offset, token) of every comparison and logical operator."""
    for m in re.finditer(r'&&|\|\||==|!=|<=|>=|<|>', masked):
        tok = m.group()
        s, e = m.start(), m.end()
        if tok in ('<', '>', '<=', '>='):
            before = masked[s - 1] if s > 0 else ''
            after = masked[e] if e < len(masked) else ''
            # Not part of ->, <<, >>, <<=, >>=.
            if before in '<>-' or after in '<>':
                continue
            if tok in ('<', '>') and after == '=':
                continue
        yield s, tok


def function_starts(masked_lines):
    """(line index of the body's '{', return value) of each function
    definition: a '{' alone at column 0 after its signature."""
    for i, line in enumerate(masked_lines):
        if line.rstrip() != '{':
            continue
        j = i - 1
        sig = []
        while j >= 0 and masked_lines[j].strip() and \
                not masked_lines[j].rstrip().endswith((';', '}')):
            sig.insert(0, masked_lines[j].strip())
            j -= 1
        sig = ' '.join(sig)
        m = re.match(r'(.*?)\b([A-Za-z_]\w*)\s*\(', sig)
        if not m:
            continue
        rtype = re.sub(r'\b(static|inline|extern)\b', '', m.group(1)).strip()
        if '*' in rtype:
            value = 'NULL'
        elif rtype == 'void':
            value = ''
        elif rtype == 'bool':
            value = 'false'
        elif rtype.startswith(('struct', 'union')):
            continue
        else:
            value = '0'
        yield i, value


def statement_lines(masked_lines):
    """Indexes of one-line expression statements."""
    prev = ''
    for i, line in enumerate(masked_lines):
        code = line.strip()
        if not code:
            continue
        starts_statement = prev.endswith((';', '{', '}', ':', ')')) or \
            prev == 'else'
        if starts_statement and code.endswith(';') and \
                line.startswith('    ') and \
                not NOT_EXPR.match(code) and not DECL.match(code) and \
                code.count('(') == code.count(')') and \
                '{' not in code and '}' not in code and code != ';':
            yield i
        prev = code


def mutants(text):
    """Every mutant of text: (operator, line number, mutated text)."""
    masked = mask_source(text)
    line_of = [0] * (len(text) + 1)
    ln = 1
    for k, c in enumerate(text):
        line_of[k] = ln
        if c == '\n':
            ln += 1
    for s, tok in operator_sites(masked):
        for op, table in (('cmp-flip', FLIP), ('cmp-bound', BOUND),
                          ('logic-swap', SWAP)):
            if tok in table:
                yield (op, line_of[s],
                       text[:s] + table[tok] + text[s + len(tok):])
    lines = text.split('\n')
    mlines = masked.split('\n')
    for i in statement_lines(mlines):
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
        mutated = lines[:i] + [indent + ';'] + lines[i + 1:]
        yield 'stmt-drop', i + 1, '\n'.join(mutated)
    for i, value in function_starts(mlines):
        ret = '    return%s;' % ((' ' + value) if value else '')
        mutated = lines[:i + 1] + [ret] + lines[i + 1:]
        yield 'return-early', i + 2, '\n'.join(mutated)


def run(cmd, cwd, timeout=None, quiet=True):
    """Runs cmd in its own process group; returns its exit status, or None
    when it ran out of time (the group is then killed)."""
    p = subprocess.Popen(cmd, cwd=cwd, start_new_session=True,
                         stdout=subprocess.DEVNULL if quiet else None,
                         stderr=subprocess.DEVNULL if quiet else None)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return None


def sync_copy(top, work):
    """Copies the worktree's tracked files into work/src where they differ
    (so make rebuilds only what changed)."""
    src = os.path.join(work, 'src')
    files = subprocess.run(['git', 'ls-files', '-z'], cwd=top, check=True,
                           capture_output=True).stdout.split(b'\0')
    for f in files:
        if not f:
            continue
        f = f.decode()
        a = os.path.join(top, f)
        b = os.path.join(src, f)
        if not os.path.isfile(a) or os.path.islink(a):
            continue
        with open(a, 'rb') as fa:
            data = fa.read()
        if os.path.exists(b):
            with open(b, 'rb') as fb:
                if fb.read() == data:
                    continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copy2(a, b)
    return src


def prepare(top, work):
    """The configured build directory of the copy."""
    src = sync_copy(top, work)
    build = os.path.join(work, 'build')
    if not os.path.exists(os.path.join(build, 'Makefile')):
        if run(['autoreconf', '-fi'], src) != 0:
            sys.exit('mutate: autoreconf failed in %s' % src)
        os.makedirs(build, exist_ok=True)
        # Warnings do not fail a mutant's build; -O1 keeps compiles short.
        if run([os.path.join(src, 'configure'), 'CFLAGS=-O1 -g0'],
               build) != 0:
            sys.exit('mutate: configure failed in %s' % build)
    return src, build


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('files', nargs='*', help='sources, relative to the top')
    ap.add_argument('--all', action='store_true',
                    help='every file with a known unit test')
    ap.add_argument('--work', default=os.path.join(
        os.environ.get('TMPDIR', '/tmp'), 'mutate-%d' % os.getuid()),
        help='work directory (kept between runs; default %(default)s)')
    ap.add_argument('--timeout', type=float, default=0,
                    help='seconds per test run (default: 10 times the '
                    'unmutated run, at least 5)')
    ap.add_argument('--operators', default=','.join(OPERATORS),
                    help='comma-separated operators (default: all)')
    ap.add_argument('--lines', default='',
                    help='only mutants on these lines, e.g. 10-40,77')
    ap.add_argument('--max', type=int, default=0,
                    help='at most this many mutants per file, evenly '
                    'spread over its list (a sample; default: all)')
    ap.add_argument('--list', action='store_true',
                    help='print the mutants and stop')
    args = ap.parse_args()

    top = subprocess.run(['git', 'rev-parse', '--show-toplevel'],
                         check=True, capture_output=True,
                         text=True).stdout.strip()
    files = sorted(TEST_OF) if args.all else args.files
    if not files:
        ap.error('name files or give --all')
    for f in files:
        if f not in TEST_OF:
            ap.error('%s: no unit test known (see TEST_OF)' % f)
    ops = set(args.operators.split(','))
    bad = ops - set(OPERATORS)
    if bad:
        ap.error('unknown operators: %s' % ', '.join(sorted(bad)))
    wanted = set()
    for part in filter(None, args.lines.split(',')):
        lo, _, hi = part.partition('-')
        wanted.update(range(int(lo), int(hi or lo) + 1))
    if os.nice(0) < 15:
        os.nice(15 - os.nice(0))

    if args.list:
        for f in files:
            with open(os.path.join(top, f)) as fh:
                text = fh.read()
            for op, line, mutated in mutants(text):
                if op in ops and (not wanted or line in wanted):
                    print_diff(f, op, line, text, mutated)
        return 0

    src, build = prepare(top, args.work)
    summary = []
    for f in files:
        tests = TEST_OF[f].split()
        path = os.path.join(src, f)
        with open(path) as fh:
            original = fh.read()
        # The unmutated build makes the tests' own objects and the
        # layers' archives; a mutant recompiles only its file and links it
        # ahead of the archives, so their copy of the file stays unused.
        if run(['make'] + ['tests/' + t for t in tests], build) != 0:
            sys.exit('mutate: %s does not build unmutated' % ' '.join(tests))
        builder = MutantBuilder(src, build, f, tests, args.work)
        if builder.make() != 0:
            sys.exit('mutate: %s does not link unmutated' % ' '.join(tests))
        t0 = time.monotonic()
        for b in builder.binaries:
            if run([b], build) != 0:
                sys.exit('mutate: %s fails unmutated' % b)
        limit = args.timeout or max(5.0, 10 * (time.monotonic() - t0))
        counts = dict(killed=0, survived=0, timeout=0, stillborn=0)
        chosen = [m for m in mutants(original)
                  if m[0] in ops and (not wanted or m[1] in wanted)]
        if args.max and len(chosen) > args.max:
            chosen = [chosen[i * len(chosen) // args.max]
                      for i in range(args.max)]
        try:
            for op, line, mutated in chosen:
                with open(path, 'w') as fh:
                    fh.write(mutated)
                if builder.make() != 0:
                    counts['stillborn'] += 1
                    continue
                for b in builder.binaries:
                    rc = run([b], build, timeout=limit)
                    if rc != 0:
                        break
                if rc is None:
                    counts['timeout'] += 1
                elif rc != 0:
                    counts['killed'] += 1
                else:
                    counts['survived'] += 1
                    print_diff(f, op, line, original, mutated)
                sys.stdout.flush()
        finally:
            with open(path, 'w') as fh:
                fh.write(original)
        summary.append((f, counts))
        print_score(f, counts)
    print('\nfile | mutants | killed | timeout | survived | stillborn | '
          'score')
    for f, c in summary:
        print_row(f, c)
    return 0


class MutantBuilder:
    """Compiles one source file of the copy and links it with each unit
    test's objects and the layers' archives, without make or libtool (a
    few hundred milliseconds instead of seconds)."""

    def __init__(self, src, build, f, tests, work):
        self.src, self.build, self.f = src, build, f
        self.obj = os.path.join(work, 'mutant.o')
        self.binaries = [os.path.join(work, 'mutant_' + t) for t in tests]
        tdir = os.path.join(build, 'tests')
        self.test_objs = [sorted(
            os.path.join(tdir, o) for o in os.listdir(tdir)
            if o.startswith(t + '-') and o.endswith('.o')) for t in tests]
        core = f.startswith('engine/core/')
        self.archives = [os.path.join(build, '.libs', a) for a in
                         (['libcntcore.a'] if core else []) +
                         ['libcntproto.a']]
        # Core tests send allocations to the fakes (tests/local.mk).
        self.ldflags = ['-Wl,--wrap=' + w for w in
                        ('malloc', 'calloc', 'realloc', 'aligned_alloc',
                         'free')] if core else []

    def make(self):
        cc = ['gcc', '-DHAVE_CONFIG_H', '-I' + self.build, '-I' + self.src,
              '-I' + os.path.join(self.src, 'include'), '-pthread',
              '-std=c11', '-O0', '-g0', '-w', '-fPIC']
        rc = run(cc + ['-c', os.path.join(self.src, self.f), '-o',
                       self.obj], self.build, timeout=120)
        if rc != 0:
            return 1
        for binary, objs in zip(self.binaries, self.test_objs):
            rc = run(['gcc', '-pthread'] + self.ldflags + ['-o', binary] +
                     objs + [self.obj] + self.archives +
                     ['-lpthread', '-lcmocka'], self.build, timeout=120)
            if rc != 0:
                return rc
        return 0


def score(c):
    """Killed (or hung) share of the mutants that compiled, in percent."""
    live = c['killed'] + c['timeout'] + c['survived']
    return 100.0 * (c['killed'] + c['timeout']) / live if live else 100.0


def print_score(f, c):
    print('== %s: killed %d, timeout %d, survived %d, stillborn %d: '
          '%.1f%%' % (f, c['killed'], c['timeout'], c['survived'],
                      c['stillborn'], score(c)))


def print_row(f, c):
    live = c['killed'] + c['timeout'] + c['survived']
    print('%s | %d | %d | %d | %d | %d | %.1f%%' % (
        f, live, c['killed'], c['timeout'], c['survived'], c['stillborn'],
        score(c)))


def print_diff(f, op, line, original, mutated):
    print('-- %s:%d %s' % (f, line, op))
    diff = difflib.unified_diff(original.split('\n'), mutated.split('\n'),
                                lineterm='', n=0)
    for d in list(diff)[2:]:
        print('   ' + d)


if __name__ == '__main__':
    sys.exit(main())
