"""The exhaustive sample for recall: document sampling, its entity and relation
workflow, gold import (KBPO and DocRED formats), simulation, and the operator page."""
