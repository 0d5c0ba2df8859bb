"""What a non-detect (qualifier ``<``, the value is the detection limit) counts as.

The policy is configurable per use. By default a non-detect counts as zero for billing
(DESIGN.md: "a non-detect counts as zero for billing unless configured otherwise") and as
its detection limit for compliance (the conservative reading: the result is at most that).
"""

from __future__ import annotations

import numpy as np

from foundation.errors import InputError

#: policy -> fraction of the detection limit a non-detect counts as
POLICIES: dict[str, float] = {"zero": 0.0, "half": 0.5, "dl": 1.0}
DEFAULT_BILLING = "zero"
DEFAULT_COMPLIANCE = "dl"


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise InputError(f"unknown non-detect policy '{policy}' (known: {', '.join(POLICIES)})")
    return policy


def substitute(values_mg_l, non_detect, policy: str) -> np.ndarray:
    """Values with non-detects replaced by the policy's fraction of their detection limit.

    Parameters
    ----------
    values_mg_l : array_like
        Results [mg/l]; a non-detect's value is its detection limit [mg/l].
    non_detect : array_like of bool
        True where the result was below detection.
    policy : str
        ``zero``, ``half`` or ``dl``.

    Returns
    -------
    numpy.ndarray
        float64 values [mg/l].
    """
    factor = POLICIES[check_policy(policy)]
    v = np.asarray(values_mg_l, dtype=np.float64)
    nd = np.asarray(non_detect, dtype=bool)
    return np.where(nd, v * factor, v)
