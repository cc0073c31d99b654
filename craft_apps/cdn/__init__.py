"""Purge on change: the poller asks the CDN to drop an answer that changed (docs/cdn.md).

``plan`` which URLs changed; ``backends`` one class per kind of CDN; ``sender`` one request,
with the token; ``guard`` one purger per change in the fleet; ``purger`` the thread;
``jobs`` its sending threads; ``readiness`` when a change may be purged; ``fleet_serving``
what each host serves, through Redis; ``wiring`` the thread made from the settings.
"""
