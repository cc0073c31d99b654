"""What operators ask of a host: the status ``craft_apps_status`` prints, in three steps.

``status_read`` reads the state file, the fleet's Redis, the site's database and the kept
controls, each with a bound; ``status_document`` builds the ``--json`` document from what was
read (no I/O), with ``controls.status`` the release policies and the releases they keep back;
``status_text`` renders that document for people. See docs/operations.md.
"""
