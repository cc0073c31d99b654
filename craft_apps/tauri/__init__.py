"""The Tauri updater: what the apps' own updaters are offered, from tauri-action's files.

``names`` the bundler's file names; ``files`` ``latest.json`` and ``.sig`` files read into
updater files; ``file_reads`` each release's files read once and kept; ``updates`` what the
updater endpoint offers a platform; ``views`` the endpoint and ``answers`` its answers as sent;
``fake_release`` a release as tauri-action publishes one, for tests. GitHub's download of the
files is ``github.updater_downloads``. See docs/tauri.md.
"""
