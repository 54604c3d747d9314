"""Collects the matrix cells' outcomes during a run and writes them as the table ``docs/compatibility.md``
shows: one row per set-up, one column per client, each cell its operations × serializations.

The table goes to ``<cache>/compatibility-matrix.md`` (see :mod:`tests.integration.apache.cache`) and its
counts to the terminal; copying it into ``docs/`` is a deliberate act, so a partial run never rewrites the
document.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import re
from pathlib import Path

import pytest

from tests.integration.apache.cache import cache_root
from tests.integration.matrix.cells import CLIENTS, OPERATIONS, SERIALIZATIONS, not_applicable

MATRIX_MODULE = "test_matrix.py"
_CELL_ID = re.compile(r"\[([^\[\]]+)\](?:@[^\[\]]*)?$")


@dataclasses.dataclass
class Outcomes:
    #: (provider, client, operation, serialization) -> "passed" / "failed" / "skipped"
    cells: dict[tuple[str, str, str, str], str] = dataclasses.field(default_factory=dict)

    def record(self, report: pytest.TestReport) -> None:
        # Under pytest-xdist's loadgroup the id ends in "@<group>" (see tests/conftest.py).
        found = _CELL_ID.search(report.nodeid)
        if MATRIX_MODULE not in report.nodeid or found is None:
            return
        params = found.group(1)
        # ids look like "<provider>-<client>-<operation>-<SERIALIZATION>"; only the provider has dashes
        provider, client, operation, serialize = params.rsplit("-", 3)
        key = (provider, client, operation, serialize)
        if report.when == "call" or report.outcome != "passed":
            previous = self.cells.get(key)
            if previous != "failed":
                self.cells[key] = report.outcome

    def counts(self) -> collections.Counter[str]:
        return collections.Counter(self.cells.values())

    def markdown(self) -> str:
        """Rows: set-ups; columns: clients; a cell reads send · route · clusters · consume, each as its
        JSON and ROCKETMQ results (✅ passed, ❌ failed, ⏭ skipped, – not applicable, · not run)."""
        providers = sorted({key[0] for key in self.cells})
        marks = {"passed": "✅", "failed": "❌", "skipped": "⏭"}
        lines = [
            f"Run of {datetime.date.today().isoformat()}: "
            + ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.counts().items())),
            "",
            "| set-up | " + " | ".join(CLIENTS) + " |",
            "|" + "---|" * (len(CLIENTS) + 1),
        ]
        for provider in providers:
            row = [f"`{provider}`"]
            for client in CLIENTS:
                groups = []
                for operation in OPERATIONS:
                    pair = ""
                    for serialize in SERIALIZATIONS:
                        if not_applicable(client, operation, serialize) is not None:
                            pair += "–"
                        else:
                            outcome = self.cells.get((provider, client, operation, serialize.name))
                            pair += marks.get(outcome or "", "·")
                    groups.append(pair)
                row.append(" ".join(groups))
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines) + "\n"


OUTCOMES = Outcomes()


def table_path() -> Path:
    return cache_root() / "compatibility-matrix.md"


def terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not OUTCOMES.cells:
        return
    path = table_path()
    path.write_text(OUTCOMES.markdown(), "utf-8")
    counts = OUTCOMES.counts()
    terminalreporter.write_sep("-", "compatibility matrix")
    terminalreporter.write_line(
        f"{counts['passed']} of {sum(counts.values())} cells passed "
        f"({counts['failed']} failed, {counts['skipped']} skipped); table: {path}"
    )
