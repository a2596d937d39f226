"""The fixed cost in USD: what it, and a change of it, costs per 1,000 requests.

Priced at the model's uncached input price, at the tier of a request that holds only the
fixed cost (the smallest request the surface can make), with the o200k counts scaled for
the model's tokenizer (``o200k×1.80``) the way every other scaled figure is: rounded up,
away from zero for a signed change. A model without an input price gives no pricing at all,
never a guessed zero.

Pure: no pytest, no tokenizer.
"""

from __future__ import annotations

import math

from pytest_toll.core.models import PER_MILLION, Model
from pytest_toll.core.tokens import O200K, scaled_method
from pytest_toll.report.data import PricingDict, SessionReport

#: The number of requests the USD figures are given for.
REQUESTS = 1_000
#: USD figures are kept to a millionth of a dollar; the Markdown rounds further.
_USD_DIGITS = 6


def scaled_tokens(tokens: int, factor: float) -> int:
    """``tokens`` (signed) scaled by ``factor``, rounded away from zero."""
    return int(math.copysign(math.ceil(abs(tokens) * factor), tokens))


def usd_per_requests(tokens: int, price_per_mtok: float) -> float:
    """What ``tokens`` on each of :data:`REQUESTS` requests cost at ``price_per_mtok``."""
    return round(tokens * price_per_mtok / PER_MILLION * REQUESTS, _USD_DIGITS)


def price_report(report: SessionReport, model: Model) -> PricingDict | None:
    """The report's fixed cost priced for ``model``; None when its input price is unknown."""
    factor = model.scale.factor
    fixed = scaled_tokens(report.fixed_cost, factor)
    price = model.input_price(fixed)
    if price is None:
        return None
    change = report.fixed_cost_change
    change_tokens = None if change is None else scaled_tokens(change, factor)
    priced: PricingDict = {
        "model": model.name,
        "input_usd_per_mtok": float(price),
        "scale": factor,
        "scale_measured": model.scale.measured,
        "method": O200K if factor == 1.0 else scaled_method(factor),
        "fixed_cost_tokens": fixed,
        "fixed_cost_usd_per_1000": usd_per_requests(fixed, price),
        "change_tokens": change_tokens,
        "change_usd_per_1000": (
            None if change_tokens is None else usd_per_requests(change_tokens, price)
        ),
    }
    hosts = report.host_costs
    if hosts:
        per_host: dict[str, float] = {}
        for name, cost in hosts.items():
            scaled = scaled_tokens(cost["resident"], factor)
            host_price = model.input_price(scaled)
            if host_price is not None:
                per_host[name] = usd_per_requests(scaled, host_price)
        priced["hosts"] = per_host
    return priced
