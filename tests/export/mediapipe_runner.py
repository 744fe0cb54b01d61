"""Runs a `.tflite` file through MediaPipe Tasks, in a Python that has the `mediapipe` package.

    python mediapipe_runner.py '{"api": "TextClassifier" | "TextEmbedder", "model": PATH, "texts": [...]}'

prints one JSON line: per text, the classifier's categories (index, category_name, score) or the embedder's
vector. Run as its own process, so that the tests need mediapipe only where this runs.
"""

import json
import sys


def main(request: dict) -> list:
    from mediapipe.tasks.python.text import text_classifier, text_embedder

    if request["api"] == "TextClassifier":
        with text_classifier.TextClassifier.create_from_model_path(request["model"]) as classifier:
            return [[{"index": c.index, "category_name": c.category_name, "score": c.score}
                     for c in classifier.classify(text).classifications[0].categories]
                    for text in request["texts"]]
    with text_embedder.TextEmbedder.create_from_model_path(request["model"]) as embedder:
        return [[float(v) for v in embedder.embed(text).embeddings[0].embedding] for text in request["texts"]]


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
