"""What operators ask of a host: ``status``, the document ``craft_apps_status`` prints (text or
``--json``), read from the state file, Redis and the site's database, each with a bound."""
