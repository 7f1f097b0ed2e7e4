"""Accounts: a guest claims its player with a username and password, signs in
from another device for a new token, lists and revokes its tokens (sign out everywhere).

Passwords are hashed with argon2id (:mod:`app.api.passwords`); tokens are 256-bit random, stored only
as SHA-256 (:func:`app.api.deps.hash_token`). Sign-in attempts are rate limited per client address
(``rate_limit_sign_in_ip``), failed ones per username from one address and from all
(``rate_limit_sign_in``, ``rate_limit_sign_in_user``). Protocol: ``docs/protocol.md``
("Accounts").
"""
from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Request, Response

from app.api import limits as api_limits
from app.api.deps import PlayerDep, RepoDep, hash_token
from app.api.errors import ApiError, not_found, responses
from app.api.idempotency import IdempotencyKeyHeader, idempotency, mark, refusing_reuse
from app.api.names import NameRefused, check_name, check_username, username_key
from app.api.passwords import Passwords, PasswordsBusy, WeakPassword, check_length
from app.api.schemas import (
    AccountPublic,
    ClaimRequest,
    PasswordChange,
    PlayerPublic,
    RevokedTokens,
    SignedIn,
    SignInRequest,
    Text,
    TokenList,
    TokenPublic,
)
from app.db.accounts import AccountRefused, AccountsRepository
from app.db.idempotency import lookup as lookup_key

router = APIRouter(prefix="/accounts", tags=["accounts"])
T = TypeVar("T")


async def get_accounts(request: Request) -> AccountsRepository:
    state = request.app.state
    if getattr(state, "accounts", None) is None:
        state.accounts = AccountsRepository(state.repo.engine)
    return state.accounts


async def get_passwords(request: Request) -> Passwords:
    """The app's :class:`Passwords` (its bounded pool, counted in the metrics), made at first use."""
    state = request.app.state
    if getattr(state, "passwords", None) is None:
        metrics = state.metrics
        passwords = Passwords(state.settings, counter=lambda op: metrics.password_work.labels(op).inc())
        metrics.password_in_flight.set_function(lambda: passwords.in_flight)
        state.passwords = passwords
    return state.passwords


AccountsDep = Annotated[AccountsRepository, Depends(get_accounts)]
PasswordsDep = Annotated[Passwords, Depends(get_passwords)]
TokenId = Annotated[Text, Path(max_length=64, description="a token id from GET /accounts/tokens")]


def _bearer_hash(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return hash_token(token.strip()) if scheme.lower() == "bearer" and token.strip() else None


def _check_length(password: str) -> None:
    """422 ``weak_password`` unless 8-128 characters (no pool, no lookup)."""
    try:
        check_length(password)
    except WeakPassword as exc:
        raise ApiError(422, "weak_password", exc.message) from None


def _busy(exc: PasswordsBusy) -> api_limits.LimitExceeded:
    return api_limits.LimitExceeded(503, "busy", f"too many password checks at once: retry in {exc.retry_after} s",
                                    exc.retry_after)


async def _password_work(work: Awaitable[T]) -> T:
    """``work`` (an operation of :class:`Passwords`): a full pool is ``503 busy`` with
    ``Retry-After``, a refused new password ``422 weak_password``."""
    try:
        return await work
    except PasswordsBusy as exc:
        raise _busy(exc) from None
    except WeakPassword as exc:
        raise ApiError(422, "weak_password", exc.message) from None


async def _spend(request: Request, items: list[Any], what: str, *counters: tuple[str, ...]) -> None:
    """Count one attempt against ``items`` under each counter key; 429 ``rate_limited`` (with
    ``Retry-After``) when one is spent."""
    limiter: api_limits.RateLimiter = request.app.state.rate_limiter
    for counter in counters:
        retry = await limiter.hit(items, *counter, exact=True)
        if retry is not None:
            raise api_limits.LimitExceeded(429, "rate_limited", f"too many {what}: retry in {retry} s", retry)


def checked_username(username: str) -> str:
    try:
        return check_username(username)
    except NameRefused as exc:
        raise ApiError(422, exc.code, exc.message) from None


def checked_name(name: str) -> str:
    """A display name as stored (NFKC, trimmed), else ApiError 422 ``bad_name``, ``blank_name``,
    ``reserved_name`` or ``name_too_long`` (:mod:`app.api.names`)."""
    try:
        return check_name(name)
    except NameRefused as exc:
        raise ApiError(422, exc.code, exc.message) from None


def _sign_in_limits_of(request: Request) -> tuple[list[Any], list[Any], list[Any]]:
    """The parsed ``rate_limit_sign_in``, ``rate_limit_sign_in_user`` and ``rate_limit_sign_in_ip``
    (parsed once per app)."""
    state = request.app.state
    if getattr(state, "sign_in_limits", None) is None:
        settings = state.settings
        state.sign_in_limits = (api_limits._parse(settings.rate_limit_sign_in),
                                api_limits._parse(settings.rate_limit_sign_in_user),
                                api_limits._parse(settings.rate_limit_sign_in_ip))
    return state.sign_in_limits


def _address(request: Request) -> str:
    """The key of the client's address (behind trusted proxies; an IPv6 one by its /64)."""
    return api_limits.address_key(api_limits.client_address(request.scope))


def _sign_in_budgets(request: Request, key: str) -> list[tuple[list[Any], tuple[str, ...]]]:
    """The failed-sign-in budgets of ``key`` (a username's key) asked from this request's address:
    ``rate_limit_sign_in`` for the username from this address, ``rate_limit_sign_in_user`` for the
    username from every address; each as (limits, counter key)."""
    per_user_ip, per_user, _ = _sign_in_limits_of(request)
    user = hash_token(key)[:32]
    budgets: list[tuple[list[Any], tuple[str, ...]]] = []
    if per_user_ip:
        budgets.append((per_user_ip, ("sign-in-user-ip", user, hash_token(_address(request))[:16])))
    if per_user:
        budgets.append((per_user, ("sign-in-user", user)))
    return budgets


async def _sign_in_limits(request: Request, budgets: list[tuple[list[Any], tuple[str, ...]]]) -> None:
    """Before a sign-in: every attempt counts against the address's ``rate_limit_sign_in_ip``; the
    username's failure ``budgets`` (:func:`_sign_in_budgets`) are only looked at. 429 when any is
    spent."""
    per_ip = _sign_in_limits_of(request)[2]
    limiter: api_limits.RateLimiter = request.app.state.rate_limiter
    ip = _address(request)
    retry = None
    if per_ip and api_limits.client_address(request.scope) not in limiter.exempt:
        retry = await limiter.hit(per_ip, "sign-in-ip", ip, exact=True)
    for limits, counter in budgets:
        if retry is not None:
            break
        retry = await limiter.test(limits, *counter, exact=True)
    if retry is not None:
        raise api_limits.LimitExceeded(429, "rate_limited", f"too many sign-in attempts: retry in {retry} s", retry)


async def _sign_in_failed(request: Request, budgets: list[tuple[list[Any], tuple[str, ...]]]) -> None:
    """A failed sign-in spends one from each of the username's failure ``budgets``."""
    limiter: api_limits.RateLimiter = request.app.state.rate_limiter
    for limits, counter in budgets:
        await limiter.hit(limits, *counter, exact=True)


@router.get("/me", response_model=AccountPublic, responses=responses(401))
async def my_account(player: PlayerDep, accounts: AccountsDep) -> AccountPublic:
    """The asking player and its username (None for a guest)."""
    account = await accounts.account(player["id"])
    return AccountPublic(player=PlayerPublic(**player), username=account["username"] if account else None)


@router.post("/claim", response_model=AccountPublic, status_code=201, responses=responses(400, 401, 403, 409))
async def claim(request: Request, response: Response, body: ClaimRequest, player: PlayerDep, accounts: AccountsDep,
                passwords: PasswordsDep, idempotency_key: IdempotencyKeyHeader = None) -> AccountPublic:
    """Claim the asking guest: it keeps its id, name, token, wallet and history and can sign in from
    other devices. ``Idempotency-Key``: a repeat (same username) gets the first answer (the
    password is left out of the key's fingerprint: nothing derived from it is kept but its argon2
    hash). 403 ``forbidden`` for bots and admins; 409 ``already_claimed``, ``username_taken``;
    422 ``bad_username``, ``bad_name``, ``blank_name``, ``reserved_name``, ``name_too_long``,
    ``weak_password``, ``idempotency_key_reused``; 400 ``bad_idempotency_key``; 429 ``rate_limited``
    (``rate_limit_claim``, per address and per player); 503 ``busy`` (the password pool is full, with
    ``Retry-After``).

    The cheap checks come first and the expensive work last: a repeat of an idempotent claim, the
    shape of the username and the password's length, the claim budgets (every attempt counts),
    whether the player has an account or the username is taken (one indexed lookup each); only then
    the password policy and the argon2 hash, on the bounded pool. The unique index on the username's
    key still decides a race."""
    idem = idempotency(request, player["id"], idempotency_key, {"username": body.username})
    if player["role"] != "player":
        raise ApiError(403, "forbidden", "only players can claim an account")
    if idem is not None:  # a repeat: its answer before any work (no second password hash)
        with refusing_reuse():
            found, stored = await lookup_key(accounts.engine, idem)
        if found:
            mark(response, idem)
            return AccountPublic(player=PlayerPublic(**player), username=stored["username"])
    username = checked_username(body.username)
    _check_length(body.password)
    limiter: api_limits.RateLimiter = request.app.state.rate_limiter
    if limiter.claims:
        counters = [("claim-player", player["id"])]
        if api_limits.client_address(request.scope) not in limiter.exempt:
            counters.append(("claim-ip", _address(request)))
        await _spend(request, limiter.claims, "claims", *counters)
    if await accounts.account(player["id"]) is not None:
        if idem is not None:  # a repeat whose first request committed since the lookup above
            with refusing_reuse():
                found, stored = await lookup_key(accounts.engine, idem)
            if found:
                mark(response, idem)
                return AccountPublic(player=PlayerPublic(**player), username=stored["username"])
        raise ApiError(409, "already_claimed", "this player has an account already")
    key = username_key(username)
    if await accounts.account_by_key(key) is not None:
        raise ApiError(409, "username_taken", "that username is taken")
    await _password_work(passwords.check_new(body.password, username, player["name"]))
    password_hash = await _password_work(passwords.hash(body.password))
    try:
        with refusing_reuse():
            row = await accounts.claim(player["id"], username, key, password_hash, idem=idem)
    except AccountRefused as exc:
        raise ApiError(409, exc.code, exc.message) from None
    mark(response, idem)
    return AccountPublic(player=PlayerPublic(**player), username=row["username"])


@router.post("/password", response_model=AccountPublic, responses=responses(401, 403, 409))
async def change_password(body: PasswordChange, request: Request, player: PlayerDep, accounts: AccountsDep,
                          passwords: PasswordsDep) -> AccountPublic:
    """Change the asking player's password: ``current_password`` must be right, ``new_password``
    passes the policy of a claim. The player's tokens stay valid (``POST
    /accounts/sign-out-everywhere`` ends them). 403 ``wrong_password``; 409 ``no_account`` (a guest:
    claim first); 422 ``weak_password``; 429 ``rate_limited`` (``rate_limit_password_change``, per
    player, every attempt counted before the current password is checked); 503 ``busy``."""
    _check_length(body.new_password)
    limiter: api_limits.RateLimiter = request.app.state.rate_limiter
    if limiter.password_changes:
        await _spend(request, limiter.password_changes, "password changes", ("password-change", player["id"]))
    account = await accounts.account(player["id"])
    if account is None:
        raise ApiError(409, "no_account", "this player has no account: claim one first")
    if not await _password_work(passwords.verify(account["password_hash"], body.current_password)):
        raise ApiError(403, "wrong_password", "the current password is wrong")
    await _password_work(passwords.check_new(body.new_password, account["username"], player["name"]))
    await accounts.set_password_hash(player["id"], await _password_work(passwords.hash(body.new_password)))
    return AccountPublic(player=PlayerPublic(**player), username=account["username"])


@router.post("/sign-in", response_model=SignedIn, responses=responses(401))
async def sign_in(body: SignInRequest, request: Request, repo: RepoDep, accounts: AccountsDep,
                  passwords: PasswordsDep) -> SignedIn:
    """Sign in with a username and password: a new bearer token for this device (the others stay
    signed in). 401 ``bad_credentials`` (unknown username or wrong password, indistinguishable);
    429 ``rate_limited`` (``rate_limit_sign_in_ip``: attempts per address; ``rate_limit_sign_in`` and
    ``rate_limit_sign_in_user``: failed attempts per username from this address and from all)."""
    typed = unicodedata.normalize("NFKC", " ".join(body.username.split()))
    key = username_key(typed)
    # one sign-in of a username at a time on this node: the failure budgets are looked at before the
    # password check and spent after it, so parallel guesses must not all pass the look (2 Dec 2026:
    # 20 parallel wrong passwords all got a password check against a budget of 5)
    budgets = _sign_in_budgets(request, key)
    async with api_limits.keyed_lock(request, "sign-in", key):
        await _sign_in_limits(request, budgets)
        account = await accounts.account_for_sign_in(typed, key)
        if not await _password_work(passwords.verify(account["password_hash"] if account else None,
                                                     body.password)) or account is None:
            await _sign_in_failed(request, budgets)
            raise ApiError(401, "bad_credentials", "unknown username or wrong password")
    player = await repo.player(account["player_id"])
    if player is None:
        raise ApiError(401, "bad_credentials", "unknown username or wrong password")
    if passwords.needs_rehash(account["password_hash"]):
        try:  # best effort: with the pool full the old hash stays, for the next sign-in to renew
            await accounts.set_password_hash(player["id"], await passwords.hash(body.password))
        except PasswordsBusy:
            pass
    label = None
    if body.label:
        try:
            label = check_name(body.label, max_length=64)
        except NameRefused as exc:
            raise ApiError(422, exc.code if exc.code != "reserved_name" else "bad_name", exc.message) from None
    token = secrets.token_urlsafe(32)
    row = await accounts.add_token(player["id"], hash_token(token), label)
    return SignedIn(player=PlayerPublic(**player), username=account["username"], token=token, token_id=row["id"])


@router.get("/tokens", response_model=TokenList, responses=responses(401))
async def list_tokens(request: Request, player: PlayerDep, accounts: AccountsDep) -> TokenList:
    """The asking player's live tokens (never the tokens themselves), oldest first."""
    mine = _bearer_hash(request)
    return TokenList(items=[TokenPublic(id=t["id"], label=t["label"], created_at=t["created_at"],
                                        current=t["token_hash"] == mine)
                            for t in await accounts.tokens(player["id"])])


def _own_tokens_only(player: dict[str, Any]) -> None:
    """Admins' and bots' tokens are the server's to set (``ADMIN_TOKEN``; a bot's at each start):
    revoking the admin's would lock it out until the next restart. 403 ``forbidden``."""
    if player["role"] != "player":
        raise ApiError(403, "forbidden", "this token is set by the server's configuration (ADMIN_TOKEN): "
                                         "change it there")


@router.delete("/tokens/{token_id}", status_code=204, responses=responses(401, 403, 404))
async def revoke_token(token_id: TokenId, player: PlayerDep, accounts: AccountsDep) -> Response:
    """Revoke one token (this device's too: the next request with it gets 401). 404 ``not_found``;
    403 ``forbidden`` for admins and bots (their tokens come from the configuration)."""
    _own_tokens_only(player)
    if not await accounts.revoke_token(player["id"], token_id):
        raise not_found("token")
    return Response(status_code=204)


@router.post("/sign-out-everywhere", response_model=RevokedTokens, responses=responses(401, 403))
async def sign_out_everywhere(player: PlayerDep, accounts: AccountsDep) -> dict[str, Any]:
    """Revoke every token of the asking player, this one included (sign in again to get one).
    403 ``forbidden`` for admins and bots."""
    _own_tokens_only(player)
    return {"revoked": await accounts.revoke_all(player["id"])}
