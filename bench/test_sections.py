#!/usr/bin/env python3
"""Tests of bench/sections.py (make check-figures runs them): a quote that differs from the
report, a marker without its pair, an unknown section and a figure the report lacks are
each refused; filling is idempotent."""

import unittest
from pathlib import Path

import sections

REPORT = sections.Report(sections.REPORT.read_text())


class Sections(unittest.TestCase):
    def test_filled_docs_are_a_fixed_point(self):
        for name in sections.FILES:
            text = (sections.ROOT / name).read_text()
            filled = sections.fill(text, REPORT, name)
            self.assertEqual(sections.fill(filled, REPORT, name), filled, name)

    def test_a_changed_figure_is_refilled(self):
        text = "W4: <!-- report:w4-idle -->0.0001 % CPU<!-- /report:w4-idle -->."
        filled = sections.fill(text, REPORT, "t.md")
        self.assertNotEqual(filled, text)
        self.assertNotIn("0.0001", filled)

    def test_a_block_keeps_its_markers_on_lines_of_their_own(self):
        filled = sections.fill("<!-- report:targets -->\n<!-- /report:targets -->", REPORT, "t")
        self.assertTrue(filled.startswith("<!-- report:targets -->\n\n| interface |"))
        self.assertTrue(filled.endswith("\n\n<!-- /report:targets -->"))

    def test_a_marker_without_its_pair_is_refused(self):
        for text in ("a <!-- report:w4-idle --> b", "a <!-- /report:w4-idle --> b",
                     "<!-- report:w4-idle -->x<!-- /report:run -->"):
            with self.assertRaisesRegex(sections.ReportError, "without its pair"):
                sections.fill(text, REPORT, "t.md")

    def test_an_unknown_section_is_refused(self):
        with self.assertRaisesRegex(sections.ReportError, "unknown section 'nope'"):
            sections.fill("<!-- report:nope --><!-- /report:nope -->", REPORT, "t.md")

    def test_a_figure_the_report_lacks_is_refused(self):
        report = sections.Report(sections.REPORT.read_text().replace("idle_cpu_pct", "x"))
        with self.assertRaisesRegex(sections.ReportError, "no idle_cpu_pct"):
            sections.fill("<!-- report:w4-idle --><!-- /report:w4-idle -->", report, "t.md")

    def test_every_section_renders_from_the_committed_report(self):
        for name, render in sections.SECTIONS.items():
            self.assertTrue(render(REPORT).strip(), name)


if __name__ == "__main__":
    unittest.main()
