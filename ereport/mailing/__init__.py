"""Mailing issued documents in batches the clerk reviews: :mod:`~ereport.mailing.kinds` (what
can be mailed), :mod:`~ereport.mailing.batches` (making and reading a batch),
:mod:`~ereport.mailing.send` (sending it once, each sending logged),
:mod:`~ereport.mailing.bounces` (delivery-status notifications read back) and
:mod:`~ereport.mailing.paper` (the paper list)."""
