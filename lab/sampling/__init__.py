"""Sampling events with chain of custody: the samples a schedule owes, planned as events the
laboratory receives and returns (:mod:`lab.sampling.events`), their containers, preservation
and holding times (:mod:`lab.sampling.methods`, the data in ``preservation.toml``), their
chain-of-custody form (:mod:`lab.sampling.custody`) and the results matched to them on import
(:mod:`lab.sampling.matching`). Planning a month from the schedule is
:mod:`enforcement.sampling_plan` (the floor above, which reads the schedule)."""
