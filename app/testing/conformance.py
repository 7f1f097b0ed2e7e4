"""The conformance suite: every check of the game contract (``app/games/base.py``), for any game.

Each ``check_*`` function takes a game object (``registry()[id]``, or your own ``GAME`` before it is
installed) and raises ``AssertionError`` with what is wrong; :data:`CHECKS` lists them all and
:func:`check_game` runs them in turn. A game's own test module needs only::

    import pytest
    from app.testing import conformance
    from my_game import GAME

    @pytest.mark.parametrize("check", conformance.CHECKS, ids=lambda c: c.__name__)
    def test_conformance(check):
        check(GAME)

Checked: metadata as data (seats, options, phases, bots, flags, files, declared types, test options);
determinism from the seed; replay equality; every prompt's default legal through the public legality
API and every ``legal_actions`` example legal; views JSON-ready and of the declared view type;
actions and events of their declared types; ``apply`` never mutates its input; no card id a viewer
may not see in its view or its events, where "may not see" is ``hidden_tokens`` *and* the oracle's
set (the admin view's card ids missing from the viewer's view, ``app.testing.oracle``), which must
agree; a game flagged with hidden information hides something in every random match; the
simultaneous flag matches the prompts; illegal actions raise ``IllegalAction`` with a snake_case
code, the same as ``check_action``'s, and change nothing; outcomes well formed; random play and
deadline defaults alone end every match within ``max_actions``; ``views`` equals ``view`` per viewer.
Matches are played with the game's default options and with its ``test_options``.
"""
from __future__ import annotations

import json
import pickle
import random
import re
from typing import Any, Callable

from pydantic import BaseModel

from app.games import declared_file
from app.games.base import CHANCE_KINDS, Event, GameInfo, IllegalAction, Outcome, Prompt
from app.games.contract import type_name
from app.testing.contracts import TypeCheck
from app.testing.oracle import card_ids, examine, viewers_of
from app.testing.play import random_step, setup_for_tests

__all__ = [
    "CHECKS", "check_deadline_defaults_end_every_match", "check_determinism", "check_game",
    "check_illegal_actions", "check_metadata", "check_random_play", "check_random_play_many_seeds",
    "check_replay_equality", "check_views_batch", "play", "seat_counts",
]

CODE = re.compile(r"^[a-z][a-z0-9_]*$")
GAME_ID = re.compile(r"^[a-z][a-z0-9_]{0,31}$")


def expect(condition: Any, message: Any) -> None:
    """``assert`` that survives ``python -O``: AssertionError(message) when ``condition`` is false."""
    if not condition:
        raise AssertionError(message)


def frozen(state: Any) -> bytes:
    """A byte image of a state (to see that nothing changed it)."""
    return pickle.dumps(state)


def views_of(game: Any, state: Any, seats: int) -> str:
    return json.dumps([game.view(state, v) for v in viewers_of(seats)], sort_keys=True)


def wire_events(events: list[Event]) -> str:
    return json.dumps([(e.to_wire(), sorted(e.audience) if e.audience is not None else None) for e in events],
                      sort_keys=True)


def seat_counts(game: Any) -> list[int]:
    return list(range(game.info.min_seats, game.info.max_seats + 1))


class _Watch:
    """What the per-step checks saw during one match."""

    def __init__(self) -> None:
        self.hidden_seen = False
        self.simultaneous_seen = False


def _check_prompts(game: Any, state: Any, seats: int, watch: _Watch) -> list[Prompt]:
    prompts = game.prompts(state)
    expect(len({p.seat for p in prompts}) == len(prompts), "one prompt per seat")
    expect(len({p.phase_id for p in prompts}) <= 1, f"the prompts of one moment share a phase_id: {prompts}")
    for prompt in prompts:
        expect(isinstance(prompt, Prompt), f"prompts() gives Prompt objects, not {type(prompt).__name__}")
        expect(0 <= prompt.seat < seats, f"a prompt for seat {prompt.seat}")
        expect(prompt.kind in game.info.phases, f"prompt kind {prompt.kind!r} not in info.phases {game.info.phases}")
        expect(prompt.deadline_seconds > 0, "a deadline is positive")
        if prompt.simultaneous:
            watch.simultaneous_seen = True
            expect(game.info.simultaneous_moves, f"a simultaneous prompt ({prompt.kind}) but "
                                                  "info.simultaneous_moves is False")
        if not prompt.submitted:
            game.check_action(state, prompt.seat, prompt.default_action)  # the default is legal
            expect(game.can_act(state, prompt.seat, prompt.default_action), "can_act agrees with check_action")
            expect(game.legal_actions(state, prompt.seat), "a prompted seat has something legal to do")
    return prompts


def _check_position(game: Any, state: Any, events: list[Event], seats: int, types: TypeCheck,
                    watch: _Watch) -> None:
    """A position after a step: views of the declared type and JSON-ready; no card id a viewer may not
    see in its view or its events; ``hidden_tokens`` equal to the oracle's set."""
    viewers = viewers_of(seats)
    hidden, problems = examine(game, state, viewers)
    expect(not problems, "\n".join(problems))
    for viewer in viewers:
        view = game.view(state, viewer)
        expect(isinstance(view, dict), "a view is a dict")
        json.dumps(view)
        problem = types.view_problem(view, viewer)
        expect(problem is None, problem)
        if hidden[viewer]:
            watch.hidden_seen = True
        leaked = card_ids(view) & hidden[viewer]
        expect(not leaked, f"{game.info.id}: viewer {viewer} sees hidden card ids in its view: {sorted(leaked)}")
        received = [e.to_wire() for e in events if e.visible_to(viewer)]
        leaked = card_ids(received) & hidden[viewer]
        expect(not leaked, f"{game.info.id}: viewer {viewer} gets hidden card ids in events: {sorted(leaked)}")
    for event in events:
        expect(isinstance(event, Event), f"apply() gives Event objects, not {type(event).__name__}")
        expect(event.audience is None or all(type(s) is int for s in event.audience), "audiences are seats")
        problem = types.event_problem(event.to_wire())
        expect(problem is None, problem)


def play(game: Any, seats: int, seed: bytes, *, checks: bool, options: Any = "test",
         watch: _Watch | None = None) -> tuple[Any, list[tuple[int, dict[str, Any]]], list[str]]:
    """Random legal play to the end; returns (final state, [(seat, action)], [events wire per step]).
    ``checks``: every per-step check (slow). Fails when the match does not end within
    ``info.max_actions``."""
    rng = random.Random(seed)
    state = setup_for_tests(game, seats, seed, options)
    watch = watch if watch is not None else _Watch()
    types = TypeCheck(game)
    log: list[tuple[int, dict[str, Any]]] = []
    trail: list[str] = []

    def step_check(st: Any, _prompts: Any, seat: int, legal: list[Any]) -> None:
        _check_prompts(game, st, seats, watch)
        for kind in legal:
            expect(kind.type in game.info.action_types, f"legal kind {kind.type!r} not in info.action_types")
            game.check_action(st, seat, kind.example)  # every example is legal

    if checks:
        _check_position(game, state, [], seats, types, watch)
    for _ in range(game.info.max_actions):
        if game.outcome(state) is not None:
            return state, log, trail
        step = random_step(game, state, seats, rng, step_check if checks else None)
        expect(step is not None, "a running match must prompt someone")
        assert step is not None
        seat, action = step
        if checks:
            problem = types.action_problem(action)
            expect(problem is None, problem)
            assert_defaults_end_the_phase(game, state)
            before = frozen(state)
        new, events = game.apply(state, seat, action)
        if checks:
            expect(frozen(state) == before, "apply mutated its input")
            _check_position(game, new, events, seats, types, watch)
        else:
            watch.simultaneous_seen = watch.simultaneous_seen or any(p.simultaneous for p in game.prompts(new))
        log.append((seat, action))
        trail.append(wire_events(events))
        state = new
    raise AssertionError(f"{game.info.id}: no end within max_actions = {game.info.max_actions} actions")


def assert_defaults_end_the_phase(game: Any, state: Any) -> None:
    """What the server does when every deadline passes: each unsubmitted default applied in turn
    moves the match to a new phase (or ends it), so deadlines alone always finish a match."""
    prompts = game.prompts(state)
    after = state
    for prompt in prompts:
        if not prompt.submitted:
            after, _ = game.apply(after, prompt.seat, dict(prompt.default_action))
    pending = game.prompts(after)
    expect(game.outcome(after) is not None or not pending or pending[0].phase_id != prompts[0].phase_id,
           f"{game.info.id}: applying every default of phase {prompts[0].phase_id} did not end it")


def assert_outcome(game: Any, state: Any, seats: int) -> None:
    outcome = game.outcome(state)
    expect(isinstance(outcome, Outcome), f"outcome() gives an Outcome once over, not {outcome!r}")
    assert isinstance(outcome, Outcome)
    expect(set(outcome.ranks) == set(range(seats)) == set(outcome.scores), "a rank and a score for every seat")
    expect(all(1 <= rank <= seats for rank in outcome.ranks.values()), "ranks are 1..seats")
    expect(min(outcome.ranks.values()) == 1, "someone ranks first")
    expect(all(isinstance(score, (int, float)) for score in outcome.scores.values()), "scores are numbers")
    expect(isinstance(outcome.reason, str) and outcome.reason, "a reason")
    json.dumps(outcome.to_wire())
    expect(game.prompts(state) == [], "no prompt once over")
    for seat in range(seats):
        expect(game.legal_actions(state, seat) == [], "nothing legal once over")
        for kind in game.info.action_types:
            try:
                game.check_action(state, seat, {"type": kind})
            except IllegalAction:
                pass
            else:
                raise AssertionError(f"{kind!r} accepted after the end")
            expect(not game.can_act(state, seat, {"type": kind}), "can_act False once over")


# ------------------------------------------------------------------------------------------------
# the checks


def check_metadata(game: Any) -> None:
    """Metadata as data: ``info`` a :class:`GameInfo` and mirrored on the game; seats, options (every
    field with a default, the test options valid), phases, bots, flags, max_actions, declared types
    (one per action type, the view), declared files present and compiled modules importable; setup
    refuses a bad seat count."""
    info = game.info
    expect(isinstance(info, GameInfo), "info is a GameInfo")
    expect(GAME_ID.match(info.id), f"id {info.id!r} is [a-z][a-z0-9_]{{0,31}}")
    expect((game.id, game.title, game.min_seats, game.max_seats, game.Options) ==
           (info.id, info.title, info.min_seats, info.max_seats, info.options), "the info mirrors (GameBase)")
    expect(1 <= info.min_seats <= info.max_seats and info.phases and info.action_types, "seats, phases, actions")
    expect(isinstance(info.options, type) and issubclass(info.options, BaseModel), "options is a pydantic model")
    info.options()  # every option has a default
    info.options.model_validate(dict(info.test_options))
    json.dumps(info.options.model_json_schema())
    expect(info.bots, "at least one bot kind")
    for kind, cls in info.bots.items():
        expect(GAME_ID.match(kind), f"bot kind {kind!r} is a lowercase name")
        expect(callable(cls(1).decide), f"bot {kind!r} has decide(view, prompt)")
    expect(isinstance(info.max_actions, int) and info.max_actions > 0, "max_actions is a positive int")
    expect(isinstance(info.hidden_information, bool) and isinstance(info.simultaneous_moves, bool), "flags are bool")
    expect(set(info.chance) <= CHANCE_KINDS, f"chance is a subset of {sorted(CHANCE_KINDS)}")
    names = [type_name(t) for t in info.actions]
    expect(sorted(names) == sorted(info.action_types),
           f"one declared action type per action type: {sorted(names)} vs {sorted(info.action_types)}")
    events = [type_name(t) for t in info.events]
    expect(events and len(set(events)) == len(events), f"event types declared once each: {events}")
    expect(info.view is not None, "the view type is declared")
    TypeCheck(game)
    for what in ("board", "wording", "doc"):
        path = declared_file(game, getattr(info, what))
        expect(path is None or path.is_file(), f"info.{what}: {path} is not a file")
    import importlib

    for module in info.compiled:
        importlib.import_module(module)
    for seats in (info.min_seats - 1, info.max_seats + 1):
        try:
            game.setup(seats, None, b"s" * 32)
        except ValueError:
            continue
        raise AssertionError(f"setup accepted {seats} seats")


def check_determinism(game: Any) -> None:
    """The same seed gives the same match; with a chance device, other seeds give other matches."""
    seats = game.info.max_seats
    first_views = views_of(game, setup_for_tests(game, seats, b"seed-a" * 5), seats)
    expect(views_of(game, setup_for_tests(game, seats, b"seed-a" * 5), seats) == first_views, "same seed, same match")
    if game.info.chance:
        others = {views_of(game, setup_for_tests(game, seats, b"seed-%d" % n), seats) for n in range(4)}
        expect(len(others) > 1, "a game with chance: different seeds give different matches")


def check_replay_equality(game: Any) -> None:
    """The same actions on a fresh setup give the same events, views and outcome."""
    seats = game.info.min_seats
    final, log, trail = play(game, seats, b"replay", checks=False, options=None)
    state = setup_for_tests(game, seats, b"replay", None)
    for (seat, action), expected in zip(log, trail, strict=True):
        state, events = game.apply(state, seat, action)
        expect(wire_events(events) == expected, "replayed events differ")
    expect(views_of(game, state, seats) == views_of(game, final, seats), "replayed views differ")
    expect(game.outcome(state) == game.outcome(final), "replayed outcome differs")


def check_random_play(game: Any) -> None:
    """Random matches with every per-step check (the two smallest seat counts; the first with the
    game's default options, the second with its test options), then a well-formed outcome; with
    hidden information some viewer's hidden set was not empty; a simultaneous game had a
    simultaneous prompt."""
    watch = _Watch()
    for index, seats in enumerate(seat_counts(game)[:2]):  # the biggest tables cost time, not coverage
        match = _Watch()
        final, log, _ = play(game, seats, b"checked-%d" % seats, checks=True, watch=match,
                             options=None if index == 0 else "test")
        assert_outcome(game, final, seats)
        expect(log, "a match of at least one action")
        if game.info.hidden_information:
            expect(match.hidden_seen, f"{game.info.id} has hidden information, but no viewer had anything "
                                      f"hidden during a whole match ({seats} seats): hidden_tokens and the views hide "
                                      "nothing")
        else:
            expect(not match.hidden_seen, f"{game.info.id} hides cards but info.hidden_information is False")
        watch.simultaneous_seen |= match.simultaneous_seen
    if game.info.simultaneous_moves:
        expect(watch.simultaneous_seen, "info.simultaneous_moves, but no prompt was simultaneous")


def check_random_play_many_seeds(game: Any) -> None:
    """Random play ends from many seeds and seat counts within ``max_actions`` (every other match
    with the game's default options, the others with its test options), every match with something
    hidden for a hidden-information game (``hidden_tokens`` and the oracle compared at every step
    until then)."""
    counts = seat_counts(game)
    for n in range(12):
        seats = counts[n % len(counts)]
        rng = random.Random(n)
        state = setup_for_tests(game, seats, b"many-%d" % n, None if n % 2 == 0 else "test")
        hidden = False
        for _ in range(game.info.max_actions):
            if game.outcome(state) is not None:
                break
            step = random_step(game, state, seats, rng)
            expect(step is not None, "a running match must prompt someone")
            assert step is not None
            state, _ = game.apply(state, *step)
            if not hidden:
                sets, problems = examine(game, state, viewers_of(seats))
                expect(not problems, "\n".join(problems))
                hidden = any(sets.values())
        else:
            raise AssertionError(f"{game.info.id}: no end within max_actions = {game.info.max_actions}")
        assert_outcome(game, state, seats)
        if game.info.hidden_information:
            expect(hidden, f"{game.info.id}: nothing was hidden from anyone in random match {n} ({seats} seats)")


def check_deadline_defaults_end_every_match(game: Any) -> None:
    """Deadlines alone finish a match within ``max_actions``: from the start, every prompt's default
    applied in turn (what the server does when nobody answers) reaches an outcome."""
    for seats in sorted({game.info.min_seats, game.info.max_seats}):
        state = setup_for_tests(game, seats, b"defaults-%d" % seats, None)
        for _ in range(game.info.max_actions):
            if game.outcome(state) is not None:
                break
            prompt = next((p for p in game.prompts(state) if not p.submitted), None)
            expect(prompt is not None, "a running match must prompt someone")
            assert prompt is not None
            state, _ = game.apply(state, prompt.seat, dict(prompt.default_action))
        else:
            raise AssertionError(f"{game.info.id}: the deadline defaults do not end a match within max_actions")
        assert_outcome(game, state, seats)


JUNK: list[Any] = [None, 5, "x", [], {}, {"type": None}, {"type": 7}, {"type": "no_such_action"},
                   {"type": "x" * 10000}, {"type": ["show"]}]


def check_illegal_actions(game: Any) -> None:
    """Junk and broken actions from any seat (and from no seat) raise ``IllegalAction`` with a
    snake_case code, the same from ``check_action`` and ``apply``, and change nothing."""
    rng = random.Random(7)
    seats = game.info.max_seats
    state = setup_for_tests(game, seats, b"illegal", None)
    weird = [None, True, -1, 10 ** 30, 1.5, "", "0", [], {}, [None], ["x"], {"0": ["x"]}, "x" * 5000]
    for _step in range(60):
        if game.outcome(state) is not None:
            break
        before = frozen(state)
        actions = list(JUNK)
        for kind in sorted(game.info.action_types):
            actions.append({"type": kind})
            for legal in game.legal_actions(state, rng.randrange(seats)):
                for name in legal.example:
                    if name != "type":
                        actions.append({**legal.example, name: rng.choice(weird)})
        for action in actions:
            for seat in (rng.randrange(seats), -1, seats, None, "0"):
                try:
                    game.check_action(state, seat, action)
                except IllegalAction as exc:
                    code = exc.code
                    expect(CODE.match(code), f"code {code!r} is snake_case")
                    expect(not game.can_act(state, seat, action), "can_act agrees")
                    try:
                        game.apply(state, seat, action)
                    except IllegalAction as applied:
                        expect(applied.code == code, f"apply raised {applied.code!r}, check_action {code!r}")
                    else:
                        raise AssertionError(f"apply accepted what check_action refused: {action!r}") from None
                else:
                    expect(game.can_act(state, seat, action), "can_act agrees")
                    game.apply(state, seat, action)  # legal: must not raise
        expect(frozen(state) == before, "an illegal action changed the state")
        step = random_step(game, state, seats, rng)
        expect(step is not None, "a running match must prompt someone")
        assert step is not None
        state, _ = game.apply(state, *step)


def check_views_batch(game: Any) -> None:
    """``views(state, viewers)`` equals ``[view(state, v) ...]`` as exact JSON at every step of a
    random match, for every viewer list order."""
    seats = game.info.min_seats
    rng = random.Random(3)
    state = setup_for_tests(game, seats, b"views", None)
    for _ in range(game.info.max_actions):
        viewers = viewers_of(seats)
        rng.shuffle(viewers)
        batch = game.views(state, viewers)
        expect(json.dumps(batch, sort_keys=True) == json.dumps([game.view(state, v) for v in viewers],
                                                                sort_keys=True), "views differs from view")
        if game.outcome(state) is not None:
            return
        step = random_step(game, state, seats, rng)
        assert step is not None
        state, _ = game.apply(state, *step)


#: every check, in the order :func:`check_game` runs them
CHECKS: tuple[Callable[[Any], None], ...] = (
    check_metadata, check_determinism, check_replay_equality, check_random_play, check_random_play_many_seeds,
    check_deadline_defaults_end_every_match, check_illegal_actions, check_views_batch,
)


def check_game(game: Any) -> None:
    """Every check of :data:`CHECKS`; the first failure raises AssertionError."""
    for check in CHECKS:
        check(game)

