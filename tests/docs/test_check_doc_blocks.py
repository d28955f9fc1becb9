#!/usr/bin/python3
"""Unit tests of check_doc_blocks.py's comparison (standard library unittest; also runs under pytest)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_doc_blocks as cdb  # noqa: E402


def compare(shown, real):
    err, _ = cdb.compare_output(shown.split("\n"), real.split("\n"))
    return err


class NumberPrecision(unittest.TestCase):
    def test_within_half_a_unit_of_the_last_shown_digit_passes(self):
        self.assertIsNone(compare("step time 24.81 s", "step time 24.805 s"))
        self.assertIsNone(compare("step time 24.81 s", "step time 24.814 s"))
        self.assertIsNone(compare("step time 24.8 s", "step time 24.805 s"))  # fewer digits than printed

    def test_outside_the_printed_precision_fails(self):
        self.assertIsNotNone(compare("step time 24.81 s", "step time 24.705 s"))
        self.assertIsNotNone(compare("step time 24.81 s", "step time 24.816 s"))
        self.assertIsNotNone(compare("128129", "127991"))

    def test_units_and_separators_around_numbers(self):
        self.assertIsNone(compare("$128129 vs $246541: 73 % 1,536 x1.140 80.0 GiB",
                                  "$128129 vs $246541: 73 % 1,536 x1.140 80.0 GiB"))
        self.assertIsNone(compare("$0.368/Mtok 1,536 x1.14", "$0.3679/Mtok 1,536 x1.140"))
        self.assertIsNotNone(compare("$0.37/Mtok", "$0.3679/Gtok"))  # text around a number must match
        self.assertIsNotNone(compare("1,537", "1,536"))
        self.assertIsNotNone(compare("+17.6 %", "+17.5 %"))

    def test_exponents(self):
        self.assertIsNone(compare("2.9e-3", "2.94e-3"))
        self.assertIsNotNone(compare("2.9e-3", "2.96e-3"))

    def test_runs_of_spaces_collapse_but_text_must_match(self):
        self.assertIsNone(compare("a   b 1.0", "a b  1.0"))
        self.assertIsNotNone(compare("fits", "OUT OF MEMORY"))


class Gaps(unittest.TestCase):
    REAL = "one\ntwo 2.0\nthree\nfour\nfive"

    def test_every_line_shown_passes(self):
        self.assertIsNone(compare(self.REAL, self.REAL))

    def test_a_missing_line_without_dots_fails(self):
        self.assertIsNotNone(compare("one\ntwo 2.0\nfour\nfive", self.REAL))  # between
        self.assertIsNotNone(compare("two 2.0\nthree\nfour\nfive", self.REAL))  # at the start
        self.assertIsNotNone(compare("one\ntwo 2.0\nthree\nfour", self.REAL))  # at the end

    def test_dots_allow_gaps(self):
        self.assertIsNone(compare("one\n...\nfour\nfive", self.REAL))
        self.assertIsNone(compare("...\nthree\n...", self.REAL))
        self.assertIsNone(compare("...\nfive", self.REAL))
        self.assertIsNone(compare("one\n...", self.REAL))
        self.assertIsNone(compare("...", self.REAL))

    def test_order_counts(self):
        self.assertIsNotNone(compare("...\nfour\n...\ntwo 2.0\n...", self.REAL))

    def test_dots_do_not_excuse_a_wrong_line(self):
        self.assertIsNotNone(compare("one\n...\nsix", self.REAL))
        self.assertIsNotNone(compare("...\ntwo 2.1\n...", self.REAL))

    def test_an_extra_shown_line_fails(self):
        self.assertIsNotNone(compare(self.REAL + "\nsix", self.REAL))


class Files(unittest.TestCase):
    """Whole markdown files through check_file: commands, exit statuses, python output, skips."""

    def run_md(self, text):
        src = tempfile.mkdtemp(prefix="doc-blocks-test-")
        path = os.path.join(src, "t.md")
        with open(path, "w") as f:
            f.write(text)
        lines = []
        failures, summary = cdb.check_file(path, src, src, log=lines.append)
        return failures, summary, "\n".join(lines)

    def test_a_matching_command_passes(self):
        failures, summary, _ = self.run_md("```\n$ echo step 24.705 s\nstep 24.71 s\n```\n")
        self.assertEqual(failures, 0)
        self.assertEqual(summary["numbers"], 1)

    def test_a_wrong_number_fails(self):
        failures, _, log = self.run_md("```\n$ echo step 24.705 s\nstep 24.81 s\n```\n")
        self.assertEqual(failures, 1)
        self.assertIn("24.81", log)

    def test_a_nonzero_exit_fails_unless_shown(self):
        self.assertEqual(self.run_md("```\n$ echo bad; exit 65\nbad\n```\n")[0], 1)
        self.assertEqual(self.run_md("```\n$ echo bad; exit 65\nbad\n(exit status 65)\n```\n")[0], 0)

    def test_a_wrong_exit_status_fails(self):
        self.assertEqual(self.run_md("```\n$ echo bad; exit 64\nbad\n(exit status 65)\n```\n")[0], 1)
        self.assertEqual(self.run_md("```\n$ true\n(exit status 65)\n```\n")[0], 1)

    def test_an_output_block_without_its_command_fails(self):
        self.assertEqual(self.run_md("```\nstep 24.705 s\n```\n")[0], 1)

    def test_several_commands_in_one_block(self):
        self.assertEqual(self.run_md("```console\n$ echo a\na\n$ echo b \\\n  c\nb c\n```\n")[0], 0)
        self.assertEqual(self.run_md("```console\n$ echo a\na\n$ echo b\nc\n```\n")[0], 1)

    def test_python_output_block(self):
        py = "```python\nprint(24.704557)\nprint('x')\n```\n\n"
        self.assertEqual(self.run_md(py + "```\n>>> output\n24.705\n...\n```\n")[0], 0)
        self.assertEqual(self.run_md(py + "```\n>>> output\n24.81\n...\n```\n")[0], 1)
        self.assertEqual(self.run_md("```python\nraise SystemExit(3)\n```\n")[0], 1)

    def test_command_blocks_run_known_commands_and_list_the_rest(self):
        failures, summary, log = self.run_md("```sh\n# comment\nexport A=1\npython3 -c 'raise SystemExit(0)'\n```\n")
        self.assertEqual(failures, 0)
        self.assertEqual(len(summary["not_run_lines"]), 1)
        self.assertEqual(self.run_md("```sh\npython3 -c 'raise SystemExit(2)'\n```\n")[0], 1)

    def test_skip_needs_a_reason_and_is_listed(self):
        failures, summary, log = self.run_md("<!-- doc-test: skip: a Slurm script -->\n```sh\nclustersim x\n```\n")
        self.assertEqual(failures, 0)
        self.assertIn("a Slurm script", log)
        self.assertEqual(self.run_md("<!-- doc-test: skip: -->\n```sh\nclustersim x\n```\n")[0], 1)

    def test_other_languages_are_not_run(self):
        self.assertEqual(self.run_md("```toml\n[x]\n```\n\n```tree\nmodels/\n```\n")[0], 0)


if __name__ == "__main__":
    unittest.main()
