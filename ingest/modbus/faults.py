"""A device's transport error in the words the superintendent reads on the Today page and in
``status``: "no answer from the meter at 10.0.4.12:502 (connection refused)", never a Python
exception's name or an errno."""

from __future__ import annotations

import asyncio
import errno
import re

#: The socket errors a control manhole's link meets, in words.
ERRNO_WORDS = {errno.ECONNREFUSED: "connection refused", errno.EHOSTUNREACH: "no route to it",
               errno.ENETUNREACH: "its network cannot be reached", errno.ECONNRESET: "the connection was reset",
               errno.ETIMEDOUT: "it did not answer in time", errno.EPIPE: "the connection was broken",
               errno.ECONNABORTED: "the connection was dropped"}


def transport_words(exc: BaseException, host: str, port: int, timeout_s: float) -> str:
    """``exc`` (raised polling the device at ``host``:``port``) as one line of words.

    Parameters
    ----------
    exc : BaseException
        What the poll raised: an ``OSError``, a timeout, a pymodbus exception (its cause
        followed), or a short reply.
    host, port : str, int
        The device's address.
    timeout_s : float
        The poll's timeout [s], said when the device was silent.
    """
    where = f"the device at {host}:{port}"
    seen = exc
    for _ in range(4):                                   # the socket's error under pymodbus' own
        if isinstance(seen, OSError) and seen.errno in ERRNO_WORDS:
            return f"no answer from {where} ({ERRNO_WORDS[seen.errno]})"
        if isinstance(seen, (asyncio.TimeoutError, TimeoutError)):
            return f"no answer from {where} within {timeout_s:g} s"
        if seen.__cause__ is None:
            break
        seen = seen.__cause__
    text = str(exc)
    m = re.search(r"\[Errno (\d+)\]", text)
    if m and int(m.group(1)) in ERRNO_WORDS:
        return f"no answer from {where} ({ERRNO_WORDS[int(m.group(1))]})"
    if "short reply" in text:
        return f"{where} sent a {text}"
    text = re.sub(r"^Modbus Error:\s*(\[[^\]]*\]\s*)*", "", text).strip() or "no reply"
    if type(exc).__name__ == "ModbusIOException" or "no response" in text.lower() or "timeout" in text.lower():
        return f"no reply from {where} ({text[:1].lower() + text[1:]})"
    return f"{where} could not be read ({text[:1].lower() + text[1:]})"
