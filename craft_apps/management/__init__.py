"""Where Django looks for the app's commands: ``commands``."""
