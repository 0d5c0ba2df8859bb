"""Who a request comes from: the peer, or behind a trusted reverse proxy the client it names
(used by the web application and the acknowledgement page).

One function for every limit the office applies per client (sign-in attempts, the
acknowledgement page's rate), so both believe the same ``X-Forwarded-For`` and only from the
configured ``[web] trusted_proxies``.
"""

from __future__ import annotations

import ipaddress


def networks(trusted: tuple[str, ...] | list[str]) -> list:
    """``[web] trusted_proxies`` as networks."""
    return [ipaddress.ip_network(p, strict=False) for p in trusted]


def _trusted(address: str, nets) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in nets)


def client_address(peer: str | None, forwarded_for: list[str], nets) -> str:
    """The client: ``peer``, or when the peer is a trusted proxy the last address of
    ``X-Forwarded-For`` (all its headers, in order) that is not a trusted proxy.

    Parameters
    ----------
    peer : str or None
        The TCP peer's address.
    forwarded_for : list of str
        The values of every ``X-Forwarded-For`` header.
    nets : list
        :func:`networks` of the trusted proxies.
    """
    peer = peer or "unknown"
    if not _trusted(peer, nets):
        return peer
    hops = [h.strip() for h in ",".join(forwarded_for).split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, nets):
            return hop
    return peer
