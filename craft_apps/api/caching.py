"""What every answer of the HTTP side may be kept for, by a browser, a proxy or a CDN."""

# The download links and the downloads page: a minute, no stale use (a stale link could point
# at a file a release replaced).
FRESH_FOR_A_MINUTE = "public, max-age=60"

# The release info, once every app was fetched. Shared caches and CDNs keep a warm host's answer
# 60 s, then revalidate (a 304 costs no body). Past that, for 5 minutes (a launcher's polling
# period) a cache may answer with what it has while it revalidates in the background, so a
# launcher never waits on a quiet edge; and for a day it may answer with what it has when the
# origin is down or failing: yesterday's releases beat an error for a launcher, which would only
# miss an update it can still get later.
CACHEABLE = f"{FRESH_FOR_A_MINUTE}, stale-while-revalidate=300, stale-if-error=86400"

# Before every app was fetched (a cold host's answer), and what must never be kept (health,
# metrics).
NOT_CACHEABLE = "no-store"
