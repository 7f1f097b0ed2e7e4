"""Compare hold'em hand evaluators for Hold'em Conquest: phevaluator, pokerkit, treys.

Speed: 7-card evaluations per second (best five of seven, the operation a final and a bot's
Monte-Carlo estimate need), on the same random deals for each library, card conversion excluded.
Correctness: the hand-ranking cases of the conquest issue (wheel, steel wheel, no wrap-around,
board straight, two pair / kicker order), pairwise agreement of winners on random showdowns, and
with ``--exhaustive`` the category counts of all 2,598,960 five-card hands against the known
totals.

Run:  python bench/bench_poker_libraries.py [--deals 20000] [--exhaustive] [--write docs/benchmarks/poker-libraries.md]
"""
from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import os
import platform
import random
import time

RANKS = "23456789TJQKA"
SUITS = "cdhs"
NAMES = [r + s for r in RANKS for s in SUITS]  # card id = rank * 4 + suit


def split(text: str) -> list[str]:
    text = text.replace(" ", "")
    return [text[i:i + 2] for i in range(0, len(text), 2)]


# ---- adapters: each returns (prepare(names) -> native, rank(native hand, native board) -> int), lower is stronger

def phevaluator_adapter():
    from phevaluator import evaluate_7cards

    def prepare(names):
        return [NAMES.index(n) for n in names]

    def rank(hand, board):
        return evaluate_7cards(*hand, *board)
    return prepare, rank


def treys_adapter():
    from treys import Card, Evaluator
    evaluator = Evaluator()

    def prepare(names):
        return [Card.new(n) for n in names]

    def rank(hand, board):
        return evaluator.evaluate(board, hand)
    return prepare, rank


def pokerkit_adapter():
    from pokerkit import Card, StandardHighHand

    def prepare(names):
        return list(Card.parse("".join(names)))

    def rank(hand, board):
        # pokerkit hands compare with <, >; map to a sortable key: lower is stronger
        return -StandardHighHand.from_game(hand, board).entry.index
    return prepare, rank


LIBRARIES = {"phevaluator": phevaluator_adapter, "pokerkit": pokerkit_adapter, "treys": treys_adapter}

# (board, [hands strongest first, with '=' joining equal hands]) from the conquest issue
CASES = [
    ("wheel: A-2 on 3h4s5c9dKh is a five-high straight, beats QQ, loses to 67",
     "3h4s5c9dKh", [["6c7c"], ["Ac2d"], ["QcQd"]]),
    ("steel wheel: AdKc on 2d3d4d5d9s is a five-high straight flush, beats 6c7h, loses to 6d7h",
     "2d3d4d5d9s", [["6d7h"], ["AdKc"], ["6c7h"]]),
    ("no wrap-around: 7d8h on QcKdAh2s3c is only ace-high (loses to a pair of twos, beats A-K-Q-6-4)",
     "QcKdAh2s3c", [["2d9c"], ["7d8h"], ["4d6h"]]),
    ("board straight: 9d2c wins alone on 4c5d6h7s8c; AhKd and QsJh tie",
     "4c5d6h7s8c", [["9d2c"], ["AhKd", "QsJh"]]),
    ("two pair: on 9s9d5c5h4d, QsQd > Kc4s > Qh2c",
     "9s9d5c5h4d", [["QsQd"], ["Kc4s"], ["Qh2c"]]),
]


def check_cases(adapter) -> list[tuple[str, bool]]:
    prepare, rank = adapter()
    results = []
    for name, board, tiers in CASES:
        b = prepare(split(board))
        values = [[rank(prepare(split(h)), b) for h in tier] for tier in tiers]
        ok = all(len(set(tier)) == 1 for tier in values)
        ok = ok and all(values[i][0] < values[i + 1][0] for i in range(len(values) - 1))
        results.append((name, ok))
    return results


def random_deals(count: int, seed: int = 1) -> list[tuple[list[str], list[str], list[str]]]:
    rng = random.Random(seed)
    deals = []
    for _ in range(count):
        cards = [NAMES[c] for c in rng.sample(range(52), 9)]
        deals.append((cards[:2], cards[2:4], cards[4:]))
    return deals


def speed(adapter, deals) -> float:
    prepare, rank = adapter()
    native = [(prepare(a), prepare(b), prepare(board)) for a, b, board in deals]
    start = time.perf_counter()
    for a, b, board in native:
        rank(a, board)
        rank(b, board)
    return 2 * len(native) / (time.perf_counter() - start)


def winners(adapter, deals) -> list[int]:
    prepare, rank = adapter()
    out = []
    for a, b, board in deals:
        bb = prepare(board)
        ra, rb = rank(prepare(a), bb), rank(prepare(b), bb)
        out.append((ra > rb) - (ra < rb))
    return out


KNOWN_FIVE_CARD = {"straight_flush": 40, "four_of_a_kind": 624, "full_house": 3744, "flush": 5108,
                   "straight": 10200, "three_of_a_kind": 54912, "two_pair": 123552,
                   "one_pair": 1098240, "high_card": 1302540}


def exhaustive_phevaluator() -> tuple[bool, int]:
    from phevaluator import evaluate_5cards

    from app.games.conquest.poker import category
    counts = dict.fromkeys(KNOWN_FIVE_CARD, 0)
    distinct = set()
    for combo in itertools.combinations(range(52), 5):
        value = evaluate_5cards(*combo)
        distinct.add(value)
        counts[category(value)] += 1
    return counts == KNOWN_FIVE_CARD, len(distinct)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deals", type=int, default=20000)
    parser.add_argument("--exhaustive", action="store_true")
    parser.add_argument("--write", default=None)
    args = parser.parse_args()

    deals = random_deals(args.deals)
    small = deals[: max(1, args.deals // 10)]
    rows = []
    for name, adapter in LIBRARIES.items():
        sample = small if name == "pokerkit" else deals
        rate = speed(adapter, sample)
        cases = check_cases(adapter)
        rows.append((name, importlib.metadata.version(name), rate, cases))
    reference = winners(phevaluator_adapter, small)
    agreement = {name: sum(x == y for x, y in zip(reference, winners(adapter, small), strict=True)) / len(small)
                 for name, adapter in LIBRARIES.items()}

    lines = [
        "# Poker hand evaluators for Hold'em Conquest",
        "",
        "Produced by `python bench/bench_poker_libraries.py --exhaustive --write docs/benchmarks/poker-libraries.md`.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "## Speed: 7-card evaluations per second (best five of seven)",
        "",
        "| library | version | evaluations/s | µs each |",
        "|---|---|---|---|",
    ]
    for name, version, rate, _ in rows:
        lines.append(f"| {name} | {version} | {rate:,.0f} | {1e6 / rate:.2f} |")
    lines += [
        "",
        f"({len(deals)} random showdowns, {len(small)} for pokerkit; each library's own card objects built beforehand.)",
        "",
        "## Correctness: the cases of the issue",
        "",
        "| case | " + " | ".join(r[0] for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for i, (case, *_rest) in enumerate(CASES):
        lines.append(f"| {case} | " + " | ".join("pass" if r[3][i][1] else "**FAIL**" for r in rows) + " |")
    lines += [
        "",
        f"Winner agreement with phevaluator on {len(small)} random heads-up showdowns: "
        + ", ".join(f"{name} {100 * share:.2f}%" for name, share in agreement.items()) + ".",
        "",
    ]
    if args.exhaustive:
        start = time.perf_counter()
        ok, distinct = exhaustive_phevaluator()
        lines += [
            f"Exhaustive check of phevaluator over all 2,598,960 five-card hands: category counts "
            f"{'match' if ok else '**do not match**'} the known totals, {distinct} distinct ranks "
            f"(7,462 expected); {time.perf_counter() - start:.1f} s.",
            "",
        ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        with open(args.write, encoding="utf-8") as fh:
            existing = fh.read()
        marker = "<!-- measurements above are generated; the choice below is written by hand -->"
        tail = existing[existing.index(marker):] if marker in existing else marker + "\n"
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(report + "\n" + tail)


if __name__ == "__main__":
    main()
