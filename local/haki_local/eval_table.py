"""The summary ``haki eval`` prints: one short table of its report (``haki_local.evaluation``),
a column per budget, in plain words, with a legend; ``haki eval --json`` prints the report
itself, whose keys are the ones docs/eval.md explains."""

from collections.abc import Mapping, Sequence
from typing import Any

from haki_local.evaluation import ABLATION_LABELS

LEGEND = """\
recall: share of the expected facts and events the packet served (mean per question)
evidence kept: share whose evidence sentence the served excerpt still holds
fully answered: questions whose every expected item was served
no-answer questions given memory: of the questions memory cannot answer (no expected item),
  the share that still got facts or episodes, and the tokens they got; lower is better, 1.00
  means every one did (the recall floor HAKI_RECALL_MAX_DISTANCE brings it down)
The other rows are the recall with one part of the ranking switched off or changed."""


def figure_text(value: Any, digits: int = 3) -> str:
    """A figure of a table, or ``—`` where the set has no such questions."""
    return "—" if value is None else f"{value:.{digits}f}"


def _rows(runs: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    def each(cell: Any) -> list[str]:
        return [cell(run) for run in runs]

    rows = [
        ("recall", each(lambda r: figure_text(r["mean_recall"]))),
        ("evidence kept", each(lambda r: figure_text(r["content_recall"]))),
        ("fully answered", each(lambda r: figure_text(r["fully_covered"]))),
        ("tokens served (mean)", each(lambda r: figure_text(r["mean_tokens"], 0))),
        ("latency p50 / p95 (ms)", each(
            lambda r: f"{r['latency_ms']['p50']:.1f} / {r['latency_ms']['p95']:.1f}")),
        ("no-answer questions given memory",
         each(lambda r: figure_text(r["negative_injection_rate"]))),
        ("tokens given to no-answer questions (mean)",
         each(lambda r: figure_text(r["negative_tokens"], 0))),
    ]
    names = list(runs[0]["ablations"]) if runs else []
    rows += [(f"{ABLATION_LABELS[name]}: recall",
              each(lambda r, n=name: figure_text(r["ablations"][n]["mean_recall"])))
             for name in names]
    return rows


def summary(report: Mapping[str, Any], source: str) -> str:
    """The table of ``report``: what was evaluated, then one row per figure and a column per
    budget, then the legend."""
    budgets: Mapping[str, Mapping[str, Any]] = report["budgets"]
    runs = list(budgets.values())
    first = runs[0]
    answerable = first["queries"] - first["negative_queries"]
    head = (f"{source}: {first['queries']} questions ({answerable} with an answer in memory, "
            f"{first['negative_queries']} without), embedder {report['embedder']}")
    columns = [f"{budget} tokens" for budget in budgets]
    rows = _rows(runs)
    width = max(len(label) for label, _ in rows)
    cells = [max(len(c), *(len(r[1][i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [head, "",
             " " * width + "".join(f"  {c:>{cells[i]}}" for i, c in enumerate(columns))]
    lines += [label.ljust(width) + "".join(f"  {v:>{cells[i]}}" for i, v in enumerate(values))
              for label, values in rows]
    for budget, run in budgets.items():
        if "misses" in run:  # haki eval --misses
            lines += ["", f"not fully answered at {budget} tokens: {len(run['misses'])}"]
            lines += [f"  {m['covered']}/{m['expected']}  {m['subject_id']}: {m['query']}"
                      for m in run["misses"]]
    return "\n".join([*lines, "", LEGEND])
