"""Where Django finds the app's commands: ``commands``."""
