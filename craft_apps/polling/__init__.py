"""The poller: when to ask GitHub (``schedule``), one tick (``poller``), and the long-running
process around it with its lease and signals (``process``); what an answer dropped, said once
(``drops``). Reads GitHub, writes the host's state
file and the fleet's Redis; never imports the HTTP side."""
