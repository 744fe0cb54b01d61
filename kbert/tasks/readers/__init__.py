"""Downstream task data: raw examples from local files (CSV/TSV/JSONL, CoNLL, SQuAD JSON) and tfds.

`read_classification`, `read_tagging` (CoNLL columns or `tokens<TAB>tags` TSVs) and `read_squad` take a
file path or `tfds:NAME[:SPLIT]` and return lists of plain dicts (tokenization happens in the tasks'
tf.data pipelines).
`sentiment_examples` makes the offline demo's sentiment sentences.
"""

from kbert.tasks.readers.conll import detect_tagging_scheme, iob1_to_iob2, read_conll, tag_parts
from kbert.tasks.readers.local_files import read_classification_file
from kbert.tasks.readers.space_separated import TAG_FORMATS, detect_tag_format, read_space_separated_tags
from kbert.tasks.readers.sentiment_demo import sentiment_examples
from kbert.tasks.readers.sources import (
    DataSource,
    build_label_vocabulary,
    parse_source,
    read_classification,
    read_squad,
    read_tagging,
    source_label_names,
)
from kbert.tasks.readers.squad_json import (
    AnswerOffsetWarning,
    answer_problem,
    check_answers,
    keep_matching_answers,
    read_squad_json,
    squad_examples,
)
from kbert.tasks.readers.tfds_tasks import (
    CLASSIFICATION_COLUMNS,
    read_tfds_classification,
    read_tfds_squad,
    read_tfds_tagging,
    tfds_label_names,
)

__all__ = [
    "AnswerOffsetWarning",
    "CLASSIFICATION_COLUMNS",
    "TAG_FORMATS",
    "answer_problem",
    "DataSource",
    "build_label_vocabulary",
    "check_answers",
    "detect_tag_format",
    "detect_tagging_scheme",
    "iob1_to_iob2",
    "keep_matching_answers",
    "parse_source",
    "read_classification",
    "read_classification_file",
    "read_conll",
    "read_space_separated_tags",
    "read_squad",
    "read_squad_json",
    "read_tagging",
    "read_tfds_classification",
    "read_tfds_squad",
    "read_tfds_tagging",
    "sentiment_examples",
    "source_label_names",
    "squad_examples",
    "tag_parts",
    "tfds_label_names",
]
