"""Names for the fictional world: people, organisations, places and job titles."""

from __future__ import annotations

import random

# ---------------------------------------------------------------------------
# Names. Stems are generated from syllables and used at most once, so no
# entity's name is contained in another's (apart from family surnames).
# ---------------------------------------------------------------------------

FEMALE_NAMES = (
    "Ada",
    "Alma",
    "Anna",
    "Beatrix",
    "Carla",
    "Clara",
    "Dina",
    "Edith",
    "Elena",
    "Freya",
    "Greta",
    "Hanna",
    "Ida",
    "Irene",
    "Jana",
    "Julia",
    "Karin",
    "Lena",
    "Lidia",
    "Maren",
    "Marta",
    "Nadia",
    "Nora",
    "Olga",
    "Paula",
    "Rosa",
    "Selma",
    "Sonja",
    "Tessa",
    "Vera",
    "Wanda",
    "Yara",
    "Zora",
    "Lucia",
    "Mira",
    "Agnes",
)
MALE_NAMES = (
    "Adam",
    "Anton",
    "Bruno",
    "Carlo",
    "Daniel",
    "Emil",
    "Felix",
    "Gregor",
    "Hugo",
    "Ivan",
    "Jonas",
    "Karl",
    "Leon",
    "Lukas",
    "Marco",
    "Milan",
    "Nikolai",
    "Oskar",
    "Pavel",
    "Peter",
    "Rafael",
    "Simon",
    "Stefan",
    "Tobias",
    "Viktor",
    "Walter",
    "Yusuf",
    "Omar",
    "Tomas",
    "Arne",
    "Ruben",
    "Elias",
    "Henrik",
    "Boris",
)
_ONSETS = (
    "b",
    "br",
    "c",
    "d",
    "dr",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
    "",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou", "y")
_CODAS = ("", "", "n", "r", "l", "s", "m", "nd", "rk", "lt", "st", "x", "v")

TITLES = (
    "chief executive",
    "chairman",
    "president",
    "managing director",
    "engineer",
    "lawyer",
    "professor",
    "senator",
    "finance minister",
    "mayor",
    "architect",
    "economist",
    "journalist",
    "editor",
    "surgeon",
    "physicist",
    "diplomat",
    "chief financial officer",
    "spokeswoman",
    "spokesman",
    "ambassador",
    "composer",
    "software developer",
    "accountant",
    "general manager",
    "governor",
)
SENIOR_TITLES = frozenset(
    {"chief executive", "chairman", "president", "managing director", "general manager"}
)


class Namer:
    """Unique capitalised stems from random syllables."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def stem(self, syllables: int = 2) -> str:
        rng = self.rng
        while True:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                for _ in range(syllables)
            )
            if 4 <= len(word) <= 10 and word not in self.used and word[0] not in "aeiouy":
                self.used.add(word)
                return word.capitalize()


