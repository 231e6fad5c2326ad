"""The core app (label `kbpo`): corpus, KBP schema, accounts and the site's own pages.

Every other app builds on it; it imports none of them (see `.importlinter`).
"""
