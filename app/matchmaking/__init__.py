"""Quick-play matchmaking: tickets in a queue (in-process or Redis, behind
:class:`~app.matchmaking.store.TicketStore`), a pure matcher (:mod:`app.matchmaking.matcher`) and
the service every node runs (:class:`~app.matchmaking.service.MatchmakingService`)."""
