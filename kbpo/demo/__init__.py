"""The demo: a synthetic world with known truth (`world/`) and the commands that run the
whole evaluation loop on it (`manage.py make_demo_world`, `manage.py demo`).

It sits above every other app: it submits systems, answers as a simulated crowd and
computes scores, so it may import them all, and none of them imports it.
"""
