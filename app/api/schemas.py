"""Request and response models. Create and Public models are separate so a token hash never
reaches a response."""
from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field
from pydantic_core import PydanticCustomError

from app.api.messages import Event, PromptInfo
from app.api.names import DISPLAY_RAW_MAX

#: the most seats a game takes (the lobby's ``seats`` bound; seat numbers are below it)
MAX_SEATS = 16


def check_text(value: str) -> str:
    """Refuse text no database can store: NUL (U+0000; Postgres text cannot hold it) and lone
    surrogates (not encodable as UTF-8). Raises a validation error of type ``invalid_text``, which
    the error handler answers as ``422 invalid_text``."""
    if "\x00" in value:
        raise PydanticCustomError("invalid_text", "NUL characters (U+0000) are not allowed in text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError("invalid_text", "text must be valid Unicode (no lone surrogates)") from None
    return value


#: a string the server may store or query with
Text = Annotated[str, AfterValidator(check_text)]


class StrictRequest(BaseModel):
    """Request bodies: strict types (``"2"`` or ``2.0`` is not an int), unknown fields refused."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Error(BaseModel):
    """Every error answer: a stable ``code`` and a message for people (validation errors add
    ``details``: ``[{loc, msg}]``)."""

    code: str
    message: str
    details: list[dict[str, Any]] | None = None


class PlayerCreate(StrictRequest):
    name: Text = Field("guest", min_length=1, max_length=DISPLAY_RAW_MAX,
                       description="1-32 characters once normalised (NFKC, white space collapsed)")


class PlayerPublic(BaseModel):
    id: str
    name: str
    role: str


class PlayerCreated(BaseModel):
    player: PlayerPublic
    token: str = Field(description="Bearer token; shown once, stored only hashed")


class GameInfo(BaseModel):
    """A hosted game as its package declares it (``app.games.base.GameInfo``)."""

    id: str
    title: str
    min_seats: int
    max_seats: int
    options_schema: dict[str, Any] = Field(description="JSON Schema of the lobby options")
    bot_kinds: list[str] = Field(description="the game's bot kinds, in its order (a lobby's bot `kind`)")
    phases: list[str] = Field(description="the prompt kinds, in their order of play")
    action_types: list[str]
    hidden_information: bool = Field(description="some seat may not see something another seat sees")
    simultaneous_moves: bool = Field(description="some phase prompts several seats at once")
    chance: list[str] = Field(description="the game's chance devices: 'cards', 'dice' (empty: none)")
    max_actions: int = Field(description="the most records a match may have; the server aborts a match "
                                         "that reaches it (reason max_actions)")
    board: str | None = Field(description="URL of the game's web board module (an ES module), or null")
    schema_url: str = Field(description="URL of the JSON Schemas of the game's actions, events and view")
    rules_version: int = Field(description="the rules version new matches of this game start under")


class GameSchema(BaseModel):
    """The JSON Schemas (draft 2020-12) of a game's wire shapes (``docs/schemas/games/<id>/``)."""

    game: str
    action: dict[str, Any] = Field(description="an action (act.action): one of the game's action types")
    event: dict[str, Any] = Field(description="an event (state/delta events, without the wire's 'v')")
    view: dict[str, Any] = Field(description="the view (state.view, and what a delta patches)")


class LobbyCreate(StrictRequest):
    game: Text = Field(max_length=32)
    seats: int = Field(ge=1, le=MAX_SEATS)
    options: dict[Text, Any] = Field(default_factory=dict, description="the game's options (see its options_schema)")
    loadout: list[Text] | None = Field(None, max_length=15, description="Conquest: owned special ids the host brings")
    rated: bool = Field(False, description="its match changes ratings if every seat is an account "
                        "(no guests, no bots; docs/decisions.md, 'Rated matches')")


class SeatPublic(BaseModel):
    seat: int
    player: PlayerPublic | None = None
    bot: str | None = None
    username: str | None = Field(None, description="the seat's player's account username; null for a guest "
                                 "or a bot, so two players of one display name can be told apart")
    loadout: list[str] | None = Field(None, description="Conquest: the specials this seat brings")


class LobbyPublic(BaseModel):
    id: str
    game: str
    options: dict[str, Any]
    seat_count: int
    host_id: str
    status: Literal["open", "started", "closed"]
    match_id: str | None
    seats: list[SeatPublic]
    created_at: float
    rated: bool = False

    @computed_field(description="changes whenever anything else in this answer changes (a seat taken or left, "  # type: ignore[prop-decorator]
                                "a bot, a loadout, the start and its match_id, the close): pass it back as "
                                "?state= with ?wait= to long-poll GET /lobbies/{id}")
    @property
    def state(self) -> str:
        """A fingerprint of the answer: 16 hex digits of the SHA-256 of its other fields' JSON."""
        return hashlib.sha256(self.model_dump_json(exclude={"state"}).encode()).hexdigest()[:16]


class JoinRequest(StrictRequest):
    seat: int | None = Field(None, ge=0, lt=MAX_SEATS, description="a seat number, or none for the first free seat")
    loadout: list[Text] | None = Field(None, max_length=15, description="Conquest: owned special ids you bring")


class BotsRequest(StrictRequest):
    kind: Text = Field("random", min_length=1, max_length=32,
                       description="a bot kind of the lobby's game (`GET /games`: `bot_kinds`); "
                                   "another: 422 unknown_bot")
    count: int | None = Field(None, ge=1, le=MAX_SEATS, description="how many empty seats to fill (default: all)")


class MatchSeat(BaseModel):
    seat: int
    player_id: str | None
    name: str
    bot: str | None


class MatchPublic(BaseModel):
    id: str
    game: str
    status: str
    options: dict[str, Any]
    seats: list[MatchSeat]
    seed_hash: str
    seed: str | None = Field(None, description="revealed when the match has ended")
    outcome: dict[str, Any] | None
    created_at: float
    ended_at: float | None
    version: int | None = Field(None, description="the spectators' version (docs/protocol.md, audiences) when "
                                "the match is in memory on the answering node, else null; admins see the "
                                "match's action count in /admin/matches")
    rules_version: int | None = Field(None, description="the game's rules version the match is played under (a replay "
                               "of its log needs an engine of that version: bannerfall verify)")


class AbortRequest(StrictRequest):
    reason: Text = Field("aborted by an admin", max_length=200)


# -- accounts, ratings, leaderboards and paging -------------------------------------------
class ClaimRequest(StrictRequest):
    """Claim the asking guest: ``username`` 3-24 letters, digits, ``_-.`` (unique case-insensitively),
    ``password`` 8-128 characters."""

    username: Text = Field(min_length=1, max_length=64)
    password: Text = Field(min_length=1, max_length=1024)


class PasswordChange(StrictRequest):
    """``current_password`` as stored now; ``new_password`` 8-128 characters, not easy to guess."""

    current_password: Text = Field(min_length=1, max_length=1024)
    new_password: Text = Field(min_length=1, max_length=1024)


class SignInRequest(StrictRequest):
    username: Text = Field(min_length=1, max_length=64)
    password: Text = Field(min_length=1, max_length=1024)
    label: Text | None = Field(None, max_length=64, description="what this device is, shown in the token list")


class AccountPublic(BaseModel):
    player: PlayerPublic
    username: str | None = Field(description="None while the player is a guest")


class SignedIn(BaseModel):
    player: PlayerPublic
    username: str
    token: str = Field(description="A new bearer token for this device; shown once, stored only hashed")
    token_id: str


class TokenPublic(BaseModel):
    id: str = Field(description="`first` for the player's first token, else the sign-in's id")
    label: str | None
    created_at: float
    current: bool = Field(description="the token this request was made with")


class TokenList(BaseModel):
    items: list[TokenPublic]


class RevokedTokens(BaseModel):
    revoked: int


#: the one line the web client shows beside a rating (leaderboard, profile)
RATING_EXPLANATION = ("Rating = 1000 + 40 × (skill − 3 × uncertainty), never below 0: everyone starts at "
                      "1000; it rises as you win and as the server grows sure of your skill. Shown on the "
                      "leaderboard after {n} rated matches.")


class RatingPublic(BaseModel):
    """openskill Plackett-Luce: ``mu`` skill, ``sigma`` its uncertainty, ``ordinal`` = mu - 3 sigma
    (exact); ``display`` = max(0, round(1000 + 40 × ordinal)), the number players see."""

    mu: float
    sigma: float
    ordinal: float
    display: int = Field(description="max(0, round(1000 + 40 × ordinal)): what players see")
    matches: int
    wins: int
    weighted_matches: float = Field(description="rated matches counted by their weight (the repeated-opponent "
                                    "rule, docs/decisions.md)")
    provisional: bool = Field(description="too few weighted matches for the leaderboard "
                              "(RATING_PROVISIONAL_MATCHES)")


class LeaderboardRow(BaseModel):
    rank: int | None = Field(description="1-based, by ordinal (ties broken by player id); None: provisional "
                             "(only the asking player's own row can be)")
    player: PlayerPublic
    username: str | None
    rating: RatingPublic


class LeaderboardPage(BaseModel):
    game: str
    items: list[LeaderboardRow]
    next_cursor: str | None
    me: LeaderboardRow | None = Field(description="the asking player's row, None if never rated in this game")
    explanation: str = Field(description="one line saying what the displayed rating is")
    provisional_matches: float = Field(description="weighted rated matches a rating needs to be listed")


class RecentMatch(BaseModel):
    match_id: str
    game: str
    seat: int
    rank: int
    seats: int
    ordinal_before: float
    ordinal_after: float
    display_before: int
    display_after: int
    weight: float = Field(description="0-1: how much of openskill's change was applied (repeated-opponent rule)")
    ended_at: float


class ProfilePublic(BaseModel):
    player: PlayerPublic
    username: str | None
    created_at: float
    ratings: dict[str, RatingPublic] = Field(description="by game id; only games the player was rated in")
    recent_matches: list[RecentMatch] = Field(description="the last rated matches, newest first")
    explanation: str = Field(description="one line saying what the displayed rating is")


class LobbyPage(BaseModel):
    items: list[LobbyPublic]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; None on the last")


class MatchPage(BaseModel):
    items: list[MatchPublic]
    next_cursor: str | None


# -- admin answers (``/admin/matches/{id}``, ``…/log``, ``…/replay``) ------------------------------
class LogRecord(BaseModel):
    """One record of a match's action log, in ``seq`` order from 1."""
    match_id: str
    seq: int = Field(description="the match's action count after this record (1 = the first)")
    seat: int | None = Field(description="the acting seat; null for an abort")
    kind: Literal["act", "deadline", "abort"] = Field(description="a seat's action, a deadline's default "
                                                                  "action, or an admin's abort")
    action: dict[str, Any] = Field(description="the game action as applied (an abort: {type, reason, by})")
    client_seq: int | None = Field(description="the act's seq from the seat's socket; null otherwise")
    deadlines: dict[str, float] = Field(description="the open phases after it: phase id -> epoch seconds")
    created_at: float = Field(description="epoch seconds")


class AdminMatchState(BaseModel):
    """The admin ``state`` message of a match (every card, hidden ones marked ``"hidden": true``),
    with the match, its seed and what each seat cannot see."""
    type: Literal["state"]
    match_id: str
    game: str
    version: int = Field(description="the match's action count (admins count everything)")
    status: Literal["running", "finished", "aborted"]
    seat: None = Field(description="always null: the admin view is no seat's")
    viewer: Literal["admin"]
    prompts: list[PromptInfo]
    view: dict[str, Any] = Field(description="the game's admin view (its schema: GET /games/{id}/schema)")
    events: list[Event]
    server_time: float = Field(description="epoch seconds, the clock of deadline_at")
    match: MatchPublic
    seed: str = Field(description="hex; secret from players until the match ends")
    hidden_from: dict[str, list[str]] = Field(description="seat number -> the card tokens that seat cannot see")


class AdminLog(BaseModel):
    match_id: str
    initial_deadlines: dict[str, float] = Field(description="the deadlines the match started with (phase id -> "
                                                "epoch seconds): a replay needs them to derive audience versions")
    actions: list[LogRecord]


class ReplayEvent(BaseModel):
    """An event of a replayed step, as the game declares it (``GET /games/{id}/schema``), with who may see it."""
    model_config = ConfigDict(extra="allow")
    type: str
    audience: list[int] | None = Field(description="the seats that may see it; null: everyone")


class AdminReplay(BaseModel):
    match_id: str
    version: int = Field(description="the action count replayed to (0 = the deal)")
    last_version: int = Field(description="the match's action count: the newest version there is")
    action: LogRecord | None = Field(description="the record that made this version; null at 0")
    view: dict[str, Any] = Field(description="the admin view at that version")
    events: list[ReplayEvent] = Field(description="the events of that step")
