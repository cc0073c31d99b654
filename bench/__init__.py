"""Benchmarks of craft_apps: a simulated fleet, the endpoint under load, the poller's footprint.

Benchmarks are not tests: ``bash .ci/bench`` runs them at full size and rewrites the figures in
docs/benchmarks.md; tests/test_bench_smoke.py runs them at a tiny size so they never rot.

- ``python -m bench``: everything, then the figures (``--help`` for sizes and outputs);
- ``python -m bench.fleet``: N real pollers on one virtual clock, one Redis, the GitHub stand-in;
- ``python -m bench.endpoint``: the endpoint under gunicorn against a bare view and nginx
  (``release_controls``: the controls its ``--controls`` puts in force, and their checks);
- ``python -m bench.footprint``: memory, CPU and Redis round trips of one poller's ticks;
- ``python -m bench.cdn``: simulated launchers behind Varnish or nginx (or none) in front of the
  real origin: origin load, bytes per poll, a release and a yank reaching them, an outage;
- ``python -m bench.refine``: brotli at the request path's quality against the ``Refiner``'s.
"""
