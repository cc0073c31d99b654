"""Where the benchmark's site keeps its extra views (shared by the site and the benchmark, which
must not import the site's URLconf outside Django)."""

BARE_BODY_ENV = "BENCH_BARE_BODY_FILE"  # the file whose bytes /bench/bare returns
# With --signing, a JSON file of the headers each bare view adds, by the suffix of its body's
# file ("", ".br", ".gzip", and BARE_NOT_MODIFIED's ".304"): the signed endpoint's own.
BARE_HEADERS_ENV = "BENCH_BARE_HEADERS_FILE"
BARE_PATH = "bench/bare"
# /bench/bare/<coding> returns the bytes of <file>.<coding> with that Content-Encoding.
BARE_CODINGS = ("br", "gzip")
BARE_BETA = "beta"  # /bench/bare/beta returns the bytes of <file>.beta: the beta channel's answer
BARE_NOT_MODIFIED = "304"  # /bench/bare/304: an empty 304, the floor of any revalidation


def bare_path(coding: str | None = None) -> str:
    return BARE_PATH if coding is None else f"{BARE_PATH}/{coding}"
