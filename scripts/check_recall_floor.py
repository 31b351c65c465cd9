"""Calibrate ``HAKI_RECALL_MAX_DISTANCE`` (the opt-in recall floor) for the configured embedder.

    .venv/bin/python scripts/check_recall_floor.py [tests/data/eval_bilingual.json]
        [--provider NAME] [--budget 900] [--max-recall-loss 0.01]

Loads a labelled set (``haki eval`` format) into a scratch database of the embedded server,
runs its questions once with the floor off and reads every traced candidate's cosine
distance: relevant (an expected fact or episode, or a fact citing an expected episode) or
not. Then, for a sweep of thresholds taken from those distances, it prints the share of
relevant and irrelevant candidates the floor would keep and re-runs the questions with the
floor on, giving the resulting recall and injection rate (share of calls serving at least one
fact; on the negative questions, the share that still received memory and the tokens they
received).

Recommended value: the tightest threshold of the sweep whose mean recall stays within
``--max-recall-loss`` of the floor-off recall. It is computed from this embedder's distances:
cosine scales differ between embedders, so never reuse a value measured for another one.
"""

import argparse
import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from haki.db import Database, Role
from haki.embedding import get_embedder
from haki.models import DEFAULT_BUDGET_TOKENS
from haki.settings import Settings
from haki_local.embedded import start_embedded
from haki_local.environment import SOURCE_ROOT, use_local_defaults
from haki_local.eval_table import figure_text
from haki_local.evaluation import (
    Evaluator,
    evaluation_keys,
    figures,
    load_labelled_set,
    scratch_database,
)
from haki_local.writer import MemoryWriter

DEFAULT_SET = SOURCE_ROOT / "tests" / "data" / "eval_bilingual.json"
#: Sweep points: quantiles of the relevant candidates' distances (a floor below their median
#: would drop most of what matters) and of all candidates' distances.
RELEVANT_QUANTILES = (0.5, 0.75, 0.9, 0.95, 0.98, 0.99, 1.0)
ALL_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def sweep_points(distances: np.ndarray, relevant: np.ndarray) -> list[float]:
    points = np.concatenate((np.quantile(distances[relevant], RELEVANT_QUANTILES),
                             np.quantile(distances, ALL_QUANTILES)))
    # Rounded up, so a threshold at a quantile keeps the candidate that defines it.
    return sorted({float(np.ceil(p * 1000) / 1000) for p in points})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT_SET)
    parser.add_argument("--provider", default=None, help="default: HAKI_EMBED_PROVIDER")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET_TOKENS)
    parser.add_argument("--max-recall-loss", type=float, default=0.01,
                        help="recall the floor may cost, absolute (default 0.01)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    use_local_defaults()
    settings = Settings.from_env()
    if args.provider:
        settings = settings.model_copy(update={"embed_provider": args.provider})
    embedder = get_embedder(settings)
    labelled = load_labelled_set(args.file)

    with scratch_database(start_embedded(settings.data_dir)) as urls:
        owner, app = Database(urls[Role.OWNER]), Database(urls[Role.APP])
        try:
            MemoryWriter(owner, embedder).write(labelled.document)
            evaluator = Evaluator(labelled, db=app, keys=evaluation_keys(owner, labelled),
                                  embedder=embedder,
                                  settings=settings.model_copy(
                                      update={"recall_max_distance": 0.0}),
                                  budget=args.budget)
            without_floor = evaluator.config
            base_outcomes = evaluator.run()
            base: dict[str, Any] = figures(base_outcomes)
            pairs = evaluator.candidate_distances(base_outcomes)
            distances = np.array([d for d, _ in pairs])
            relevant = np.array([r for _, r in pairs])
            rows: list[dict[str, Any]] = []
            for threshold in sweep_points(distances, relevant):
                run = figures(evaluator.run(
                    replace(without_floor, recall_max_distance=threshold)))
                rows.append({
                    "max_distance": threshold,
                    "relevant_kept": round(float(np.mean(distances[relevant] <= threshold)), 4),
                    "irrelevant_kept": round(
                        float(np.mean(distances[~relevant] <= threshold)), 4),
                    "mean_recall": run["mean_recall"],
                    "injection_rate": run["injection_rate"],
                    "negative_injection_rate": run["negative_injection_rate"],
                    "negative_tokens": run["negative_tokens"],
                    "mean_tokens": run["mean_tokens"],
                })
        finally:
            owner.close()
            app.close()

    base_recall = float(base["mean_recall"] or 0.0)
    floor_ok = [r for r in rows if r["mean_recall"] >= base_recall - args.max_recall_loss]
    recommended = min(floor_ok, key=lambda r: r["max_distance"]) if floor_ok else None
    print(f"embedder {embedder.provider}: {len(pairs)} candidates "
          f"({int(relevant.sum())} relevant), floor off: mean recall {base['mean_recall']}, "
          f"injection {base['injection_rate']}, on negatives {base['negative_injection_rate']} "
          f"({base['negative_tokens']} tokens)")
    print(f"{'max_distance':>12} {'relevant kept':>13} {'irrelevant kept':>15} "
          f"{'mean recall':>11} {'injection':>9} {'neg. injection':>14} {'neg. tokens':>11} "
          f"{'tokens':>7}")
    for r in rows:
        print(f"{r['max_distance']:>12.3f} {r['relevant_kept']:>13.3f} "
              f"{r['irrelevant_kept']:>15.3f} {r['mean_recall']:>11.4f} "
              f"{r['injection_rate']:>9.3f} {figure_text(r['negative_injection_rate'], 3):>14} "
              f"{figure_text(r['negative_tokens'], 0):>11} {r['mean_tokens']:>7.1f}")
    summary = {"embedder": embedder.provider, "floor_off": base, "sweep": rows,
               "max_recall_loss": args.max_recall_loss,
               "recommended_max_distance": recommended["max_distance"] if recommended else None}
    if recommended:
        print(f"recommended for {embedder.provider}: "
              f"HAKI_RECALL_MAX_DISTANCE={recommended['max_distance']}")
    else:
        print("no threshold of the sweep keeps recall within the allowed loss: leave it off")
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
