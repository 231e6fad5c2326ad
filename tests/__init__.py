"""KBPO's test suite; its folders mirror the code's (core, demo, submissions,
annotations/{crowd,interfaces,quality,exhaustive}, estimation, deploy)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
