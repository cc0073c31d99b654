"""Ask GitHub for an app's latest release (``client``) and read its answer safely (``parsing``).

The first tier: nothing here knows about the state file, Redis or HTTP answers."""
