"""The poller: keeps each app's release fresh, alone or with the fleet (asks ``kernel.source``).

``poller`` a tick as named steps sharing ``state``: ``fleet_merge`` takes the fleet's entries, ``due_apps``
who is due and claimed, ``answers`` an app's latest, ``history_lists`` its release list, ``updater_reads``
its updater files (``tauri.file_reads``), ``state_checks`` checks what is read back, ``publish`` writes the
state file, ``fleet_shares`` shares it. ``schedule`` when to ask; ``history`` a history's rules;
``requests``, ``wakeup`` refreshes asked for; ``drops`` dropped assets; ``tally`` counters; ``loop``,
``process``, ``stopping`` the command's loop, lease, signals (the fleet's controls: ``controls.relay``).
"""
