"""The release control actions, one class each, found by their stored name.

``base`` what every action says (what it takes, its part of the serving rule, how it is
shown); ``hold``, ``yank`` and ``rollout`` the three shipped; ``registry`` each action by the
name a control stores. A new action is one more module here (docs/controls.md).
"""
