#!/usr/bin/env python3
"""Read polyprof's CI outputs with real consumers and print what they saw, as JSON.

Usage: scripts/read-ci-outputs.py JUNIT.xml SUMMARY.md

The JUnit file is parsed by junitparser (what CI plugins and many report tools use), the
Markdown file rendered by Python-Markdown with its tables extension (GitHub-flavoured tables)
and the HTML read back. Prints {"junit": [suites with their cases], "markdown": {"headline",
"header", "rows", "reasons"}}; tests/integration/ci_outputs.rs checks it.
"""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser

import markdown
from junitparser import JUnitXml, TestSuite


def junit(path: str) -> list[dict[str, object]]:
    xml = JUnitXml.fromfile(path)
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    out = []
    for suite in suites:
        cases = []
        for case in suite:
            results = list(case.result)
            cases.append(
                {
                    "name": case.name,
                    "classname": case.classname,
                    "time": case.time,
                    "result": type(results[0]).__name__.lower() if results else "passed",
                    "message": results[0].message if results else None,
                    "text": results[0].text if results else None,
                }
            )
        out.append(
            {
                "name": suite.name,
                "tests": suite.tests,
                "failures": suite.failures,
                "errors": suite.errors,
                "skipped": suite.skipped,
                "properties": {p.name: p.value for p in suite.properties()},
                "cases": cases,
            }
        )
    return out


class Tables(HTMLParser):
    """The text of the h2, of each table cell by row, and of each list item."""

    def __init__(self) -> None:
        super().__init__()
        self.headline = ""
        self.rows: list[list[str]] = []
        self.items: list[str] = []
        self.where: str | None = None
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        if tag in ("h2", "td", "th", "li"):
            self.where, self.text = tag, ""

    def handle_endtag(self, tag: str) -> None:
        if tag != self.where:
            return
        if tag == "h2":
            self.headline = self.text
        elif tag == "li":
            self.items.append(self.text)
        else:
            self.rows[-1].append(self.text.strip())
        self.where = None

    def handle_data(self, data: str) -> None:
        if self.where:
            self.text += data


def summary(path: str) -> dict[str, object]:
    with open(path, encoding="utf-8") as f:
        html = markdown.markdown(f.read(), extensions=["tables"])
    tables = Tables()
    tables.feed(html)
    return {
        "headline": tables.headline,
        "header": tables.rows[0] if tables.rows else [],
        "rows": tables.rows[1:],
        "reasons": tables.items,
    }


if __name__ == "__main__":
    json.dump({"junit": junit(sys.argv[1]), "markdown": summary(sys.argv[2])}, sys.stdout)
