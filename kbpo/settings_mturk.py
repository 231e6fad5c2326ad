"""Settings of the MTurk requester side: HIT types, qualifications, confirmation of
task-page posts and automatic rejection. Imported whole by kbpo/settings.py; every
variable is described in docs/reference/settings.md.
"""

from __future__ import annotations

import os

from kbpo.envvars import env_int, env_list

# One HIT type per task kind; the reward is per HIT (per-question reward × questions).
KBPO_MTURK_TOKEN_NAMESPACE = os.environ.get("KBPO_MTURK_TOKEN_NAMESPACE", "kbpo")
KBPO_MTURK_HIT_TYPES = {
    kind: {
        "title": os.environ.get(f"KBPO_MTURK_{kind.upper()}_TITLE", title),
        "description": os.environ.get(f"KBPO_MTURK_{kind.upper()}_DESCRIPTION", description),
        "keywords": env_list(f"KBPO_MTURK_{kind.upper()}_KEYWORDS", keywords),
    }
    for kind, title, description, keywords in [
        ("relation", "How are two highlighted names related in a sentence?",
         "Read short news sentences and choose the relation (if any) that each sentence "
         "states between two highlighted names.", "relation,sentence,reading,nlp"),
        ("entity", "Mark the names of people, organisations and places in a news article",
         "Select every name in a short news article, give its type and group the names "
         "that refer to the same entity.", "entity,names,annotation,nlp"),
        ("exhaustive", "Find every relation between names in a news article",
         "For each pair of highlighted names in the same sentence, choose the relation the "
         "sentence states, if any.", "relation,annotation,nlp"),
    ]
}
# The texts of the HIT types whose questions are on whole documents (a corpus with a
# document-level schema such as DocRED's): Wikipedia-style articles, entities with all
# their mentions, not news sentences. KBPO_MTURK_DOCUMENT_<KIND>_TITLE etc. override them.
KBPO_MTURK_DOCUMENT_HIT_TYPES = {
    kind: {
        "title": os.environ.get(f"KBPO_MTURK_DOCUMENT_{kind.upper()}_TITLE", title),
        "description": os.environ.get(f"KBPO_MTURK_DOCUMENT_{kind.upper()}_DESCRIPTION",
                                      description),
        "keywords": env_list(f"KBPO_MTURK_DOCUMENT_{kind.upper()}_KEYWORDS", keywords),
    }
    for kind, title, description, keywords in [
        ("relation", "How are two highlighted entities related in a short article?",
         "Read a short encyclopedia article and choose the relations (if any) it states "
         "from one highlighted entity to another.", "relation,document,reading,nlp"),
        ("exhaustive", "List every relation the article states for a few entities",
         "Read a short encyclopedia article and add every relation it states from the "
         "given entities to any other entity it names.", "relation,document,annotation,nlp"),
    ]
}
KBPO_MTURK_ASSIGNMENT_DURATION = env_int("KBPO_MTURK_ASSIGNMENT_DURATION", 30 * 60)
KBPO_MTURK_AUTO_APPROVAL_DELAY = env_int("KBPO_MTURK_AUTO_APPROVAL_DELAY", 3 * 24 * 3600)
KBPO_MTURK_LIFETIME = env_int("KBPO_MTURK_LIFETIME", 3 * 24 * 3600)
KBPO_MTURK_FRAME_HEIGHT = env_int("KBPO_MTURK_FRAME_HEIGHT", 800)
# Qualification requirements; 0 / empty disables one.
KBPO_MTURK_MIN_APPROVAL_RATE = env_int("KBPO_MTURK_MIN_APPROVAL_RATE", 95)
KBPO_MTURK_MIN_APPROVED_HITS = env_int("KBPO_MTURK_MIN_APPROVED_HITS", 100)
KBPO_MTURK_COUNTRIES = env_list("KBPO_MTURK_COUNTRIES", "US")
# Workers holding this qualification do not see our HITs (created on first use by name,
# or give the id of an existing one).
KBPO_MTURK_BLOCK_QUALIFICATION_NAME = os.environ.get(
    "KBPO_MTURK_BLOCK_QUALIFICATION_NAME", "KBPO blocked workers")
KBPO_MTURK_BLOCK_QUALIFICATION_ID = os.environ.get("KBPO_MTURK_BLOCK_QUALIFICATION_ID", "")
KBPO_MTURK_MAX_ATTEMPTS = env_int("KBPO_MTURK_MAX_ATTEMPTS", 8)
# A posted HIT whose questions still need answers is extended by this much when it expires.
KBPO_MTURK_EXTEND_SECONDS = env_int("KBPO_MTURK_EXTEND_SECONDS", 2 * 24 * 3600)
# An assignment is rejected as spam only on evidence with a known answer: it misses every
# one of at least KBPO_REJECT_MIN_CONTROLS control questions, and contradicts the label of
# every other question, in a HIT of at least KBPO_REJECT_MIN_QUESTIONS questions (0
# disables automatic rejection). Disagreeing with peers alone never rejects (issue 41).
KBPO_REJECT_MIN_QUESTIONS = env_int("KBPO_REJECT_MIN_QUESTIONS", 3)
KBPO_REJECT_MIN_CONTROLS = env_int("KBPO_REJECT_MIN_CONTROLS", 1)
# MTurk answers count only once MTurk confirms the assignment: the task page's post is
# provisional; a check runs KBPO_MTURK_CONFIRM_DELAY seconds after it (and every sync),
# and a post MTurk never confirmed expires after KBPO_PAGE_POST_TTL seconds.
KBPO_MTURK_CONFIRM_DELAY = env_int("KBPO_MTURK_CONFIRM_DELAY", 20)
# That check reads the HIT's assignments (ListAssignmentsForHIT): once per HIT per delay,
# and at most KBPO_MTURK_CONFIRM_RATE per KBPO_MTURK_CONFIRM_RATE_WINDOW seconds over the
# site, however many posts arrive; the periodic sync settles the rest.
KBPO_MTURK_CONFIRM_RATE = env_int("KBPO_MTURK_CONFIRM_RATE", 30)
KBPO_MTURK_CONFIRM_RATE_WINDOW = env_int("KBPO_MTURK_CONFIRM_RATE_WINDOW", 60)
# Unconfirmed posts a HIT keeps at most; later ones are checked and answered but not
# kept (MTurk's copy still counts, at the next sync).
KBPO_PAGE_POSTS_WAITING_PER_HIT = env_int("KBPO_PAGE_POSTS_WAITING_PER_HIT", 50)
KBPO_PAGE_POST_TTL = env_int("KBPO_PAGE_POST_TTL",
                             KBPO_MTURK_ASSIGNMENT_DURATION + 2 * 3600)
