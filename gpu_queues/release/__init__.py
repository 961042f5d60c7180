"""The Kueue release: reading and checking the manifest (checksum, allowlist), preparing it
with the stack's settings, upgrade checks against a live cluster, moving the pin, and
rendering a release from its pinned module."""
