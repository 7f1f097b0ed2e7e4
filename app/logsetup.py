"""Logs never carry tokens, token hashes or hidden cards, at any level (``docs/operations.md``).

What used to leak at ``debug`` and how each is closed:

- WebSocket frames: uvicorn's websockets implementation logs every frame (``< TEXT '{"type":"hello",
  "token":…'``) on ``uvicorn.error``, and the bots' client does the same on ``websockets.client``;
  frames also carry each seat's own cards. Frame records keep only the frame's kind and size.
- SQL parameters (token hashes in ``WHERE token_hash = ?``): SQLAlchemy logs statements with their
  parameters on ``sqlalchemy.engine`` whenever that logger is enabled for INFO (a root logger at
  DEBUG is enough), and aiosqlite logs every call with its arguments on ``aiosqlite``. Those loggers
  are held at WARNING.
- Anything else: every record is scrubbed as it is made (message and traceback): ``token`` values in
  JSON, Python reprs or ``key=value`` form, ``Bearer`` credentials and 64-hex-digit strings (SHA-256
  token hashes; seeds too, which must not be logged either) are replaced by ``[redacted]``.

And a client's mistake is not the server's error: uvicorn logs a text frame that is not UTF-8 (it
closes the socket with 1007, RFC 6455 8.1) as an ERROR with the decoder's traceback, any client may
send one before ``hello``, and every one cost ~15 lines. :class:`BadFrameFilter` makes that record
one INFO line without a traceback (dropped below INFO).
"""
from __future__ import annotations

import logging
import re

QUIET_LOGGERS = {"sqlalchemy.engine": logging.WARNING, "sqlalchemy.pool": logging.WARNING,
                 "aiosqlite": logging.WARNING}
FRAME_LOGGERS = ("uvicorn.error", "websockets")
_FRAME_MESSAGES = frozenset({"< %s", "> %s"})

_PATTERNS = [
    (re.compile(r"(bearer\s+)[^\s\"',;]+", re.IGNORECASE), r"\1[redacted]"),
    # "token": "...", 'token': '...', token=..., "token_hash": ... (values may be cut short)
    (re.compile(r"""(["']?(?:token|token_hash|admin_token|authorization)["']?\s*[:=]\s*["']?)"""
                r"""(?!\[redacted\]|bearer\b)[^"'\s,;}\])]+""", re.IGNORECASE), r"\1[redacted]"),
    (re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])"), "[redacted]"),
    (re.compile(r"revoked:[0-9a-f]+"), "revoked:[redacted]"),
]


def redact(text: str) -> str:
    """``text`` with every token-like value replaced by ``[redacted]``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _frame_summary(frame: object) -> str:
    opcode = getattr(frame, "opcode", None)
    data = getattr(frame, "data", None)
    name = getattr(opcode, "name", "FRAME")
    return f"{name} [{len(data)} bytes]" if isinstance(data, (bytes, bytearray)) else str(name)


#: what uvicorn's websockets-sansio protocol logs (with the traceback) for a text frame that is not UTF-8
BAD_UTF8_MESSAGE = "Invalid UTF-8 sequence received from client."
BAD_UTF8_LINE = "socket closed with 1007: the client sent a text frame that is not UTF-8"


class BadFrameFilter(logging.Filter):
    """On ``uvicorn.error``: the record of a text frame that is not UTF-8 becomes one INFO line,
    :data:`BAD_UTF8_LINE`, without its traceback; dropped when the logger is not enabled for INFO.
    Every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != BAD_UTF8_MESSAGE:
            return True
        if not logging.getLogger(record.name).isEnabledFor(logging.INFO):
            return False
        record.msg, record.args = BAD_UTF8_LINE, None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return True


_installed = False


def install_log_safety() -> None:
    """Idempotent: quiet the loggers that print SQL parameters, install a log-record factory
    that strips frame contents and scrubs every record, and :class:`BadFrameFilter` on uvicorn's
    logger. Called by ``create_app``."""
    global _installed
    for name, level in QUIET_LOGGERS.items():
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < level:
            logger.setLevel(level)
    if _installed:
        return
    _installed = True
    logging.getLogger("uvicorn.error").addFilter(BadFrameFilter())
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            _scrub(record)
        except Exception:  # never let logging fail the caller
            record.msg, record.args = "[log record dropped: it could not be scrubbed]", None
        return record

    logging.setLogRecordFactory(factory)


def _scrub(record: logging.LogRecord) -> None:
    if record.msg in _FRAME_MESSAGES and record.name.startswith(FRAME_LOGGERS) and record.args:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        record.args = tuple(_frame_summary(a) for a in args)
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        record.exc_text = redact(text)
