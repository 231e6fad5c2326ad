"""The demo world: a synthetic corpus with exhaustive gold, simulated KBP systems and
their exact scores. Pure Python + numpy; the formats are in docs/reference/demo-world.md.

Modules, in the order the generator uses them: `names` and `facts` (the fictional
world), `templates` and `text` (documents), `gold` (what each document expresses),
`systems` and `kbfile` (simulated systems and their KB files), `truth` (exact scores),
`generate` (the entry point). `docred` builds the real-text world from a Re-DocRED file
in the same formats. Everything is deterministic for a seed.
"""
