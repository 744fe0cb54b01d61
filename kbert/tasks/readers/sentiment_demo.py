"""A small English sentiment dataset made at run time, for the offline demo and notebooks.

Sentences are built from templates ("the plot was gripping and the acting superb") with disjoint word
lists for training and evaluation, so the evaluation measures whether the model learned sentiment from
the pretrained weights' knowledge of words it never saw labelled, not whether it memorised words.
"""

from __future__ import annotations

import random

SUBJECTS = ["the movie", "the film", "the plot", "the acting", "the story", "the ending", "the soundtrack",
            "the cast", "the script", "the direction", "the dialogue", "the pacing", "this picture",
            "the camera work", "the lead performance", "the final act"]

# Each list is split in two: the first half for training, the second for evaluation.
POSITIVE = ["wonderful", "brilliant", "moving", "delightful", "superb", "gripping", "charming", "beautiful",
            "excellent", "touching", "hilarious", "stunning", "clever", "heartfelt", "masterful", "joyful",
            "fantastic", "memorable", "inspiring", "engaging", "graceful", "powerful", "lovely", "witty"]
NEGATIVE = ["boring", "dreadful", "clumsy", "tedious", "awful", "dull", "confusing", "lifeless", "terrible",
            "predictable", "shallow", "painful", "messy", "bland", "forgettable", "annoying", "horrible",
            "pointless", "lazy", "stale", "tiresome", "weak", "ugly", "miserable"]
TEMPLATES = ["{s} was {a}.", "{s} is {a} and {a2}.", "honestly, {s} felt {a}.", "i thought {s} was {a}!",
             "{s} was {a}, truly {a2}.", "what a {a} experience: {s} was {a2}."]
LABELS = ["negative", "positive"]


def _split(words: list[str], part: str) -> list[str]:
    half = len(words) // 2
    return words[:half] if part == "train" else words[half:]


def sentiment_examples(split: str = "train", size: int = 320, seed: int = 0) -> list[dict]:
    """Examples {"text": str, "label": "negative"|"positive"}, balanced, deterministic for a seed.

    Args:
        split: "train" or "validation" (disjoint adjectives).
        size: number of examples.
        seed: random seed.
    """
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    rng = random.Random(f"{seed}-{split}")
    examples = []
    for i in range(size):
        label = i % 2
        words = _split(POSITIVE if label else NEGATIVE, split)
        text = rng.choice(TEMPLATES).format(s=rng.choice(SUBJECTS), a=rng.choice(words), a2=rng.choice(words))
        examples.append({"text": text[0].upper() + text[1:], "label": LABELS[label]})
    rng.shuffle(examples)
    return examples
