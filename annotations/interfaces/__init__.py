"""The annotation pages workers see, the answer intake every backend shares, and the
data a page shows for a question."""
