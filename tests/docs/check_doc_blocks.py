#!/usr/bin/python3
"""Run a markdown file's fenced blocks and compare the outputs they show with real runs (issue 28).

Usage: check_doc_blocks.py --source-dir DIR --bin-dir DIR FILE.md
Exit status: 0 every block ran and matched; 1 a block failed (each failure printed); 64 usage.

Each file runs in a fresh temporary working directory holding symlinks `scenarios`, `models`, `analysis`, `docs`
to the source tree and an empty `out/`, with PATH starting with the build's sim/cli directory (`clustersim`,
`clustersim-mpi`), PYTHONPATH the source's analysis/ and MPLBACKEND=Agg. Blocks run in the file's order.

Conventions of the docs (docs/architecture.md, "Docs that reproduce"):

- Output block: a fence with no language, `text` or `console`. It begins with `$ COMMAND` (a line ending in `\\`
  continues the command); the lines after it, up to the next `$ ` line, are its output (stdout and stderr
  together). The command must exit 0, unless the output's last line is `(exit status N)`: then it must exit N.
  Every shown line must appear in the real output, in order; a line that is exactly `...` stands for any number
  of lines left out; without `...` no line may be missing at the start, between or at the end. Lines compare
  token by token (runs of spaces collapse): text exactly, each number within half a unit of the shown number's
  last digit (24.81 matches 24.805; `1,536`, `%`, `$`, `x`, `GiB` around a number are text).
- Output of a python block: an output block whose first line is `>>> output` shows the stdout of the python block
  just above it, compared as above.
- Command block: a fence tagged `sh`, `bash` or `shell`. Each line (with its `\\` continuations) that starts with
  `clustersim`, `clustersim-mpi`, `mpirun`, `python3`, `/usr/bin/python3` or `make`, after optional `VAR=value`
  assignments, runs and must exit 0; comments are ignored; any other line is listed as not run.
  `make TARGET...` runs as `make -n TARGET...` in the source tree (a dry run: the target exists and its recipe
  expands; the real targets take minutes or recurse into `make test`).
- Python block: a fence tagged `python` runs with /usr/bin/python3 in the working directory and must exit 0.
- Any other language (`toml`, `json`, `cpp`, `tree`, `formula`, ...): not run.
- `<!-- doc-test: skip: REASON -->` on the line before a fence: the block is not run; the reason is printed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

OUTPUT_LANGS = ("", "text", "console")
COMMAND_LANGS = ("sh", "bash", "shell")
RUNNABLE = ("clustersim", "clustersim-mpi", "mpirun", "python3", "/usr/bin/python3", "make")
SKIP_RE = re.compile(r"^\s*<!--\s*doc-test:\s*skip:\s*(.*?)\s*-->\s*$")
EXIT_RE = re.compile(r"^\(exit status (\d+)\)$")
FENCE_RE = re.compile(r"^(\s*)(```+)\s*([^\s`]*)")
# A number: thousands-separated or plain digits, optional decimals and exponent, optional sign.
NUMBER_RE = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?")
COMMAND_TIMEOUT_S = 300


class Block:
    """One fenced block: its language, body lines, the 1-based line of its fence, and a skip reason or None."""

    def __init__(self, lang, lines, line_no, skip):
        self.lang, self.lines, self.line_no, self.skip = lang, lines, line_no, skip


def parse_blocks(text):
    """The fenced blocks of a markdown text, in order."""
    blocks, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP_RE.match(prev)
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        blocks.append(Block(lang, body, i + 1, skip.group(1) if skip else None))
        i = j + 1
    return blocks


# ---- comparison ------------------------------------------------------------------------------------------


def split_numbers(token):
    """A token as alternating text and number parts: [text, number, text, ..., text]."""
    parts, pos = [], 0
    for m in NUMBER_RE.finditer(token):
        parts += [token[pos:m.start()], m.group(0)]
        pos = m.end()
    parts.append(token[pos:])
    return parts


def number_value(s):
    return float(s.replace(",", ""))


def half_unit(s):
    """Half a unit of the last digit of a printed number: 24.81 -> 0.005, 1,536 -> 0.5, 2.9e-3 -> 0.00005."""
    mantissa, _, exponent = s.replace(",", "").lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def numbers_match(shown, real):
    """True when the real number rounds to the shown one: |shown - real| <= half a unit of shown's last digit."""
    tol = half_unit(shown)
    return abs(number_value(shown) - number_value(real)) <= tol * (1 + 1e-9) + 1e-12


def tokens_match(shown, real, stats):
    """True when two tokens match: the same text around their numbers, and each number within precision."""
    if shown == real:
        stats["numbers"] += sum(1 for k, p in enumerate(split_numbers(shown)) if k % 2)
        return True
    sp, rp = split_numbers(shown), split_numbers(real)
    if len(sp) != len(rp):
        return False
    for k, (a, b) in enumerate(zip(sp, rp)):
        if k % 2 == 0 and a != b:
            return False
        if k % 2 == 1 and not numbers_match(a, b):
            return False
    stats["numbers"] += len(sp) // 2
    return True


def line_matches(shown, real, stats):
    st, rt = shown.split(), real.split()
    if len(st) != len(rt):
        return False
    trial = {"numbers": 0}
    if all(tokens_match(a, b, trial) for a, b in zip(st, rt)):
        stats["numbers"] += trial["numbers"]
        return True
    return False


def compare_output(shown, real):
    """Compare shown lines (with `...` gaps) with real lines. Returns (None, stats) or (error message, stats)."""
    stats = {"lines": 0, "numbers": 0}
    while real and not real[-1].strip():
        real = real[:-1]
    while shown and not shown[-1].strip():
        shown = shown[:-1]
    segments, current = [], []
    for line in shown:
        if line.strip() == "...":
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    # segments[0] is anchored at the start unless empty (a leading `...`); the last at the end likewise.
    pos = 0
    for k, seg in enumerate(segments):
        if not seg:
            continue
        last = k == len(segments) - 1
        if k == 0:
            candidates = [0]
        elif last:
            candidates = [len(real) - len(seg)]
        else:
            candidates = range(pos, len(real) - len(seg) + 1)
        if k == 0 and last:
            if len(seg) != len(real):
                return missing_or_extra(seg, real), stats
        found = None
        for start in candidates:
            if start < pos or start + len(seg) > len(real):
                continue
            trial = {"numbers": 0}
            if all(line_matches(s, real[start + n], trial) for n, s in enumerate(seg)):
                found = start
                stats["numbers"] += trial["numbers"]
                break
        if found is None:
            return first_mismatch(seg, real, pos, k == 0, last), stats
        stats["lines"] += len(seg)
        pos = found + len(seg)
    return None, stats


def missing_or_extra(seg, real):
    for n, (s, r) in enumerate(zip(seg, real)):
        if not line_matches(s, r, {"numbers": 0}):
            return "line %d differs (no `...` in the block):\n  shown: %s\n  real:  %s" % (n + 1, s, r)
    if len(seg) < len(real):
        return "the real output has %d more line(s) than shown and the block has no `...`; first: %s" % (
            len(real) - len(seg), real[len(seg)])
    return "shown line %d is missing from the real output: %s" % (len(real) + 1, seg[len(real)])


def first_mismatch(seg, real, pos, anchored_start, anchored_end):
    """A message naming the shown line that matches nowhere, with the real line most like it."""
    for s in seg:
        if not any(line_matches(s, r, {"numbers": 0}) for r in real[pos:]):
            key = s.split()[:1]
            like = [r for r in real if r.split()[:1] == key]
            return "shown line not in the real output%s:\n  shown: %s\n  real:  %s" % (
                "" if not anchored_start and not anchored_end else " (or not where the block's `...` allow)",
                s, like[0] if like else "(no line starting alike)")
    where = "at the start" if anchored_start else "at the end" if anchored_end else "consecutively"
    return "shown lines do not appear %s of the real output (missing `...`?): first: %s" % (where, seg[0])


# ---- running ---------------------------------------------------------------------------------------------


def split_commands(lines):
    """An output block's body as [(command, [output lines])]; a command joins its `\\`-continued lines."""
    runs, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError("output line before any `$ COMMAND`: %r (an output block starts with `$ COMMAND`)"
                             % lines[i])
        cmd = [lines[i][2:]]
        while cmd[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i])
        out, i = [], i + 1
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        runs.append(("\n".join(cmd), out))
    return runs


def expected_status(out):
    """(expected exit status, output lines without the status line)."""
    trimmed = list(out)
    while trimmed and not trimmed[-1].strip():
        trimmed.pop()
    m = EXIT_RE.match(trimmed[-1].strip()) if trimmed else None
    return (int(m.group(1)), trimmed[:-1]) if m else (0, out)


def logical_lines(lines):
    """A command block's lines with `\\` continuations joined, each with its 0-based index."""
    out, buf, start = [], [], 0
    for n, line in enumerate(lines):
        if not buf:
            start = n
        buf.append(line)
        if not line.rstrip().endswith("\\"):
            out.append((start, "\n".join(buf)))
            buf = []
    if buf:
        out.append((start, "\n".join(buf)))
    return out


def command_word(line):
    """The command word of a shell line after `VAR=value` assignments and line continuations."""
    words = line.replace("\\\n", " ").split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)
    return words[0] if words else ""


class Runner:
    def __init__(self, source_dir, bin_dir, work_dir):
        self.source_dir, self.work_dir = source_dir, work_dir
        self.env = dict(os.environ)
        # clustersim from the build first, then Debian's python3 (/usr/bin) before any other on PATH.
        self.env["PATH"] = os.pathsep.join([bin_dir, "/usr/bin", self.env.get("PATH", "")])
        self.env["PYTHONPATH"] = os.path.join(source_dir, "analysis")
        self.env["MPLBACKEND"] = "Agg"
        self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        if os.geteuid() == 0:
            # As root (a container, CI) Open MPI refuses to start unless told (docs/scale-out.md, "Running"); the
            # docs' mpirun lines are meant for any user.
            self.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            self.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"

    def shell(self, command, cwd=None):
        """(exit status, stdout and stderr together); status 124 after COMMAND_TIMEOUT_S."""
        try:
            p = subprocess.run(["bash", "-c", command], cwd=cwd or self.work_dir, env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return 124, "timed out after %d s" % COMMAND_TIMEOUT_S
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def python(self, source):
        """(exit status, stdout, stderr) of a python block; status 124 after COMMAND_TIMEOUT_S."""
        try:
            p = subprocess.run(["/usr/bin/python3", "-"], input=source.encode(), cwd=self.work_dir, env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return 124, "", "timed out after %d s" % COMMAND_TIMEOUT_S
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def make_dry_run(self, line):
        """`make TARGET...` up to a shell operator or comment, as `make -n` in the source tree.
        Returns (the command run, (status, output), what followed a shell operator: not run)."""
        words, rest = [], line.replace("\\\n", " ").split()[1:]
        while rest:
            w = rest[0]
            if w in ("&&", "||", ";", "|") or w.startswith("#"):
                break
            words.append(rest.pop(0))
        command = "make -n -C %s %s" % (self.source_dir, " ".join(words))
        tail = " ".join(rest) if rest and not rest[0].startswith("#") else ""
        return command, self.shell(command), tail


def make_work_dir(source_dir):
    work = tempfile.mkdtemp(prefix="doc-blocks-")
    for name in ("scenarios", "models", "analysis", "docs"):
        os.symlink(os.path.join(source_dir, name), os.path.join(work, name))
    os.mkdir(os.path.join(work, "out"))
    return work


def check_file(path, source_dir, bin_dir, log=print):
    """Run every block of one markdown file; returns (number of failures, summary dict)."""
    with open(path, encoding="utf-8") as f:
        blocks = parse_blocks(f.read())
    work = make_work_dir(source_dir)
    runner = Runner(source_dir, bin_dir, work)
    summary = {"blocks": len(blocks), "run": 0, "commands": 0, "lines": 0, "numbers": 0, "python": 0,
               "make": [], "skipped": [], "not_run_lines": [], "not_run_langs": {}}
    failures = []
    last_python_stdout = None
    name = os.path.relpath(path, source_dir)

    def fail(block, msg):
        failures.append("%s:%d: %s" % (name, block.line_no, msg))

    for block in blocks:
        if block.skip is not None:
            if not block.skip:
                fail(block, "doc-test: skip needs a reason")
            summary["skipped"].append("%s:%d (%s block): %s" % (name, block.line_no, block.lang or "output",
                                                                block.skip))
            continue
        if block.lang in OUTPUT_LANGS:
            summary["run"] += 1
            if block.lines and block.lines[0].strip() == ">>> output":
                if last_python_stdout is None:
                    fail(block, "`>>> output` block without a python block run before it")
                    continue
                err, stats = compare_output(block.lines[1:], last_python_stdout.split("\n"))
                summary["lines"] += stats["lines"]
                summary["numbers"] += stats["numbers"]
                if err:
                    fail(block, "python output: " + err + "\n--- real output ---\n" + last_python_stdout)
                continue
            try:
                runs = split_commands(block.lines)
            except ValueError as e:
                fail(block, str(e))
                continue
            for command, shown in runs:
                want, shown = expected_status(shown)
                status, output = runner.shell(command)
                summary["commands"] += 1
                if status != want:
                    fail(block, "`%s` exited %d, the block says %d\n%s" % (command, status, want, output[-3000:]))
                    continue
                err, stats = compare_output(shown, output.split("\n"))
                summary["lines"] += stats["lines"]
                summary["numbers"] += stats["numbers"]
                if err:
                    fail(block, "`%s`: %s\n--- real output ---\n%s" % (command, err, output[-6000:]))
        elif block.lang in COMMAND_LANGS:
            summary["run"] += 1
            for n, line in logical_lines(block.lines):
                text = line.strip()
                if not text or text.startswith("#"):
                    continue
                word = command_word(line)
                if word not in RUNNABLE:
                    summary["not_run_lines"].append("%s:%d: %s" % (name, block.line_no + 1 + n,
                                                                   text.split("\n")[0][:90]))
                    continue
                if word == "make":
                    command, (status, output), tail = runner.make_dry_run(line)
                    summary["make"].append(command.replace(source_dir, "SOURCE"))
                    if tail:
                        summary["not_run_lines"].append("%s:%d: (after make) %s" % (name, block.line_no + 1 + n,
                                                                                    tail[:90]))
                else:
                    command = line
                    status, output = runner.shell(line)
                    summary["commands"] += 1
                if status != 0:
                    fail(block, "`%s` exited %d\n%s" % (command, status, output[-3000:]))
        elif block.lang == "python":
            summary["run"] += 1
            summary["python"] += 1
            status, out, err = runner.python("\n".join(block.lines) + "\n")
            last_python_stdout = out
            if status != 0:
                fail(block, "python block exited %d\n%s" % (status, err[-3000:]))
        else:
            summary["not_run_langs"][block.lang] = summary["not_run_langs"].get(block.lang, 0) + 1
    log("%s: %d blocks: %d run (%d commands, %d python blocks, %d make dry-runs), %d shown lines and %d numbers "
        "compared; %d skipped; %d not run (%s); %d command lines not run"
        % (name, summary["blocks"], summary["run"], summary["commands"], summary["python"], len(summary["make"]),
           summary["lines"], summary["numbers"], len(summary["skipped"]), sum(summary["not_run_langs"].values()),
           ", ".join("%s %d" % kv for kv in sorted(summary["not_run_langs"].items())) or "none",
           len(summary["not_run_lines"])))
    for m in summary["make"]:
        log("  dry-run (make -n, not executed): " + m)
    for s in summary["skipped"]:
        log("  skipped: " + s)
    for s in summary["not_run_lines"]:
        log("  not run (not a clustersim, python3 or make command): " + s)
    for f in failures:
        log("FAIL " + f)
    shutil.rmtree(work, ignore_errors=True)
    return len(failures), summary


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--bin-dir", required=True, help="directory of the clustersim binary")
    parser.add_argument("files", nargs="+")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return 64 if e.code else 0
    source_dir = os.path.abspath(args.source_dir)
    bin_dir = os.path.abspath(args.bin_dir)
    failed = 0
    for path in args.files:
        n, _ = check_file(os.path.abspath(path), source_dir, bin_dir)
        failed += n
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
