"""Where the benchmark's site keeps its extra view (shared by the site and the benchmark, which
must not import the site's URLconf outside Django)."""

BARE_BODY_ENV = "BENCH_BARE_BODY_FILE"  # the file whose bytes /bench/bare returns
BARE_PATH = "bench/bare"
