"""How often a 95% interval of a mean of values in [0, 1] covers it, and how often it leaves [0, 1]
(issue 46 item 4): Student's t against the expanded bootstrap cut to the range, over sets of
values drawn from Beta distributions whose mean is known (a drifting device's probability, and
one near 1). Prints the Markdown rows of docs/figures.md's table; seeded, so they read the same::

    python bench/bounded_coverage.py --sets 300
"""

from __future__ import annotations

import argparse
import random

from llqm_core.analysis.stats import summarize

SHAPES = (("Beta(0.5, 0.5)", 0.5, 0.5), ("Beta(20, 2)", 20.0, 2.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=300, help="sets of values per row")
    parser.add_argument("--sizes", default="3,5,8,16", help="values per set, comma-separated")
    args = parser.parse_args()
    rng = random.Random(5)
    for name, a, b in SHAPES:
        mean = a / (a + b)
        for n in (int(size) for size in args.sizes.split(",")):
            t_covers = bootstrap_covers = leaves = 0
            for _ in range(args.sets):
                values = [rng.betavariate(a, b) for _ in range(n)]
                signed, bounded = summarize(values), summarize(values, bounds=(0.0, 1.0))
                assert signed.low is not None and signed.high is not None
                assert bounded.low is not None and bounded.high is not None
                t_covers += signed.low <= mean <= signed.high
                bootstrap_covers += bounded.low <= mean <= bounded.high
                leaves += signed.low < 0 or signed.high > 1
            print(
                f"| {n} draws of {name} | {t_covers / args.sets:.2f} / "
                f"{leaves / args.sets:.0%} | {bootstrap_covers / args.sets:.2f} |"
            )


if __name__ == "__main__":
    main()
