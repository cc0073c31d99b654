"""Token buckets that bound what one install and one client address may send: in memory, per
web process, at most ``max_keys`` buckets each (the least recently used go first)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

INSTALL_RATE = "install_rate"
ADDRESS_RATE = "address_rate"


@dataclass(frozen=True)
class Bucket:
    """``burst`` reports at once, then one every ``every_s`` seconds."""

    burst: float
    every_s: float


# An install sends one report per update: a few at once are plenty, then one a minute.
PER_INSTALL = Bucket(burst=5, every_s=60.0)
# Many installs may share an address (an office behind NAT): 120 at once, then 10 a second.
PER_ADDRESS = Bucket(burst=120, every_s=0.1)
MAX_KEYS = 50_000


class TokenBuckets:
    """One bucket per key; ``take`` says whether the key may send one more now."""

    def __init__(self, bucket: Bucket, monotonic: Callable[[], float], max_keys: int = MAX_KEYS) -> None:
        self.bucket = bucket
        self.monotonic = monotonic
        self.max_keys = max_keys
        self._tokens: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> bool:
        """Takes a token from ``key``'s bucket; False when it is empty."""
        now = self.monotonic()
        with self._lock:
            tokens, at = self._tokens.pop(key, (self.bucket.burst, now))
            tokens = min(self.bucket.burst, tokens + max(0.0, now - at) / self.bucket.every_s)
            allowed = tokens >= 1.0
            self._tokens[key] = (tokens - 1.0 if allowed else tokens, now)
            while len(self._tokens) > self.max_keys:
                self._tokens.popitem(last=False)
            return allowed

    def __len__(self) -> int:
        return len(self._tokens)


class RateLimits:
    """The per install and per address buckets together."""

    def __init__(
        self,
        monotonic: Callable[[], float],
        per_install: Bucket = PER_INSTALL,
        per_address: Bucket = PER_ADDRESS,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.installs = TokenBuckets(per_install, monotonic, max_keys)
        self.addresses = TokenBuckets(per_address, monotonic, max_keys)

    def refusal(self, address: str, install: Callable[[], str]) -> str | None:
        """Take a token for ``address``, then for ``install()`` (its hash, made only then); return
        the limit that refused (``ADDRESS_RATE``, ``INSTALL_RATE``) or None."""
        if not self.addresses.take(address):
            return ADDRESS_RATE
        if not self.installs.take(install()):
            return INSTALL_RATE
        return None
