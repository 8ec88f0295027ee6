"""Statistics the benchmark scripts print."""


def percentile(values, p):
    """The p-th percentile (0..100) of values, interpolated linearly between the two nearest
    ranks (what statistics.quantiles(method="inclusive") does)."""
    s = sorted(values)
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)
