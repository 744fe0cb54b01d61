"""REST client for a kbert export under TF Serving. Run: python export/client_rest.py [TASK]

Request bodies per task (signature `serving_default`, "inputs" in columnar form):
    classify / regress / encoder   {"inputs": {"text": ["a great movie", "dull"]}}
    ... with a pair                {"inputs": {"text": [...], "text_pair": [...]}, "signature_name": "serving_pair"}
    tag                            {"inputs": {"text": ["Ada Lovelace lived in London"]}}
    qa                             {"inputs": {"question": ["who?"], "context": ["Ada wrote it."]}}
    embed                          {"inputs": {"text": ["a heron at dawn"]}}
The answer is {"outputs": {name: [one value per input]}}: probabilities/label_id/label, score,
word_*/entity_*, start_char/end_char/score/answer, pooled_output/mean_embedding/embedding, or embedding.
"""

from __future__ import annotations

import json
import sys
import urllib.request

REQUESTS = {
    "classify": {"inputs": {"text": ["a great movie", "dull and long"]}},
    "regress": {"inputs": {"text": ["a man is playing"], "text_pair": ["a man plays"]},
                "signature_name": "serving_pair"},
    "encoder": {"inputs": {"text": ["a great movie"]}},
    "embed": {"inputs": {"text": ["a heron at dawn"]}},
    "tag": {"inputs": {"text": ["Ada Lovelace lived in London"]}},
    "qa": {"inputs": {"question": ["Who wrote the notes?"], "context": ["The notes were written by Ada."]}},
}


def predict(body: dict, model: str = "sst2", host: str = "http://localhost:8501") -> dict:
    request = urllib.request.Request(f"{host}/v1/models/{model}:predict", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else "classify"
    print(json.dumps(predict(REQUESTS[task]), indent=2))
