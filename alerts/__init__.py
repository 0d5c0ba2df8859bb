"""alerts: the alert lifecycle and its channels (see README.md beside this file).

The face the shell's pipeline uses, by module (imported by name; this file imports none of
them so that ``import alerts.cli`` stays light):

- ``manager``: ``AlertManager`` — one alert per episode, its lifecycle and notifications;
- ``episodes``: ``LiveEpisodes``, ``sensors_from_db`` — streaming evaluation per pack;
- ``health``: ``HealthWatch`` — no data and flat line;
- ``channels``: ``build_routes``, ``Route`` and the channels;
- ``keys``: ``AlertKey``; ``content``: the messages; ``store``: the alerts' SQL;
- ``links``: ``AckLinks`` — signed, expiring, single-use acknowledgement links;
- ``ackpage``: ``AckPage`` — the acknowledgement page ``sewerwatch run`` serves.
"""

__all__ = ["ackpage", "channels", "content", "episodes", "health", "keys", "links", "manager", "store"]
