"""A two-article SQuAD file in memory, for the tests of the sentence-pair task built from SQuAD."""


def _article(title: str, context: str, qas: list[tuple[str, str, str]]) -> dict:
    return {"title": title, "paragraphs": [{"context": context, "qas": [
        {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": context.index(answer)}]}
        for qid, question, answer in qas]}]}


SMALL = {"data": [
    _article("a", "Paris is in France. Rome is in Italy. Bern is in Switzerland.",
             [(f"a{i}", f"Where is city {i}?", answer)
              for i, answer in enumerate(["France", "Italy", "Switzerland", "is in France. Rome"] * 5)]),
    _article("b", "Water boils at 100 degrees. Ice melts at 0 degrees.",
             [("b0", "When does water boil?", "100 degrees")]),
]}
