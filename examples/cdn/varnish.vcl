# Varnish in front of the web workers of craft_apps, as docs/cdn.md recommends. Placeholders,
# filled by you (and by tests/cdn, which runs this file as shipped): @ORIGIN_HOST@ and
# @ORIGIN_PORT@, the origin (gunicorn, or the host's nginx). Run varnishd with
# `-p http_gzip_support=off`: the origin chooses between brotli, gzip and plain JSON itself, and
# Varnish's own gzip handling would ask it for gzip only and drop brotli.
#
# What it keeps is what the origin's Cache-Control says: a warm answer 60 s (max-age), then
# served while it is fetched again for 5 minutes (stale-while-revalidate, Varnish's grace),
# and for a day while the origin's health check fails (stale-if-error); a cold host's answer
# (no-store) is never kept. The query string is part of the key, so every channel and bucket is
# its own entry; Vary: Accept-Encoding keeps the codings apart.
#
# Purge on change (docs/cdn.md): the poller sends PURGE <url> (every coding of that URL is
# dropped) or BAN <path> (every URL under the path, each channel and the updater paths), and
# only from the addresses in the purgers ACL: put your pollers' addresses there.
vcl 4.1;

import std;

acl purgers {
    "127.0.0.1";
    "::1";
}

backend origin {
    .host = "@ORIGIN_HOST@";
    .port = "@ORIGIN_PORT@";
    .connect_timeout = 2s;
    .first_byte_timeout = 10s;
    # The health endpoint with only the rules a cache should care about: the state file reads
    # and the signing key works (the poller and GitHub left out: the answers are still served
    # while they fail). No body to speak of, never cached: 12 requests a minute to the origin,
    # and the origin is taken as sick within 10 s of failing (2 of the last 3). Set
    # .host_header to a name in the site's ALLOWED_HOSTS if the address isn't one.
    .probe = {
        .url = "/v1/craft_apps/health?rules=state_file";
        .expected_response = 200;
        .interval = 5s;
        .timeout = 2s;
        .window = 3;
        .threshold = 2;
        .initial = 3;
    }
}

sub vcl_recv {
    if (req.method == "PURGE" || req.method == "BAN") {
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (req.method == "PURGE") {
            return (purge);
        }
        # Every kept URL that starts with the path (plain paths only: the ACL admits the pollers).
        ban("obj.http.X-Craft-Apps-Url ~ ^" + req.url);
        return (synth(200, "Banned"));
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    if (req.url !~ "^/v1/craft_apps/(release_info|updates/)") {
        return (pass);
    }
    # Few variants: what the origin would choose for the header a launcher sent.
    if (req.http.Accept-Encoding ~ "(^|[ ,])br($|[ ,;])") {
        set req.http.Accept-Encoding = "br";
    } elsif (req.http.Accept-Encoding ~ "(^|[ ,])gzip($|[ ,;])") {
        set req.http.Accept-Encoding = "gzip";
    } else {
        unset req.http.Accept-Encoding;
    }
    unset req.http.Cookie;
    # A healthy origin: stale answers only within stale-while-revalidate; a failing one: the
    # whole grace the answer carries (stale-if-error's day).
    if (std.healthy(req.backend_hint)) {
        set req.grace = 300s;
    }
    return (hash);
}

sub vcl_backend_response {
    if (beresp.http.Cache-Control ~ "no-store") {
        set beresp.uncacheable = true;
        set beresp.ttl = 120s;
        return (deliver);
    }
    if (beresp.http.Cache-Control ~ "stale-if-error=") {
        set beresp.grace = std.duration(
            regsub(beresp.http.Cache-Control, ".*stale-if-error=([0-9]+).*", "\1s"), 0s);
    }
    # Kept past its grace so that a due answer is revalidated with If-None-Match (a 304).
    set beresp.keep = 1h;
    # What a BAN matches (a ban on the object, not the request, so Varnish's lurker applies it).
    set beresp.http.X-Craft-Apps-Url = bereq.url;
}

sub vcl_deliver {
    unset resp.http.X-Craft-Apps-Url;
    if (obj.uncacheable) {
        set resp.http.X-Cache-Status = "MISS";
    } elsif (obj.hits > 0) {
        set resp.http.X-Cache-Status = "HIT";
    } else {
        set resp.http.X-Cache-Status = "MISS";
    }
}
