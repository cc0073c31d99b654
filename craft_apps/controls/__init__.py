"""The release controls and policies, in one place: what operators use to stop a bad release.

Pure rules (no Django, no I/O): ``rules`` hold, yank and staged rollout, their check and codec;
``actions`` one class per action; ``guard`` a guarded rollout's step or pause; ``policies`` each
app's release policy. With I/O: ``kept`` the controls kept in the state directory; ``relay``
those shared with the fleet; ``known_tags`` the tags the host knows; ``form`` the admin's form;
``guard_banner`` a paused rollout's banner; ``status`` the policies as the status shows them.
"""
