"""The file formats and sources that tasks read their raw examples from.

Parsers of one format each (CSV/TSV/JSONL rows, CoNLL columns, `tokens<TAB>tags` TSVs, SQuAD JSON), tfds
loading (`tfds_source`), and the source plumbing and label vocabularies every task shares (`sources`). A task
reads its own examples in its own module (`kbert.tasks.classification.read_classification`,
`kbert.tasks.tagging.read_tagging`, `kbert.tasks.question_answering.read_squad`), on these pieces; they
return plain dicts (tokenization happens in the tasks' tf.data pipelines).
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
    require_file,
    source_label_names,
    split_of,
)
from kbert.tasks.readers.squad_json import (
    AnswerOffsetWarning,
    answer_problem,
    check_answers,
    keep_matching_answers,
    read_squad_json,
    squad_examples,
)
from kbert.tasks.readers.tfds_source import LengthCheck, load_tfds, tfds_label_names

__all__ = [
    "AnswerOffsetWarning",
    "LengthCheck",
    "TAG_FORMATS",
    "answer_problem",
    "DataSource",
    "build_label_vocabulary",
    "check_answers",
    "detect_tag_format",
    "detect_tagging_scheme",
    "iob1_to_iob2",
    "keep_matching_answers",
    "load_tfds",
    "parse_source",
    "read_classification_file",
    "read_conll",
    "read_space_separated_tags",
    "read_squad_json",
    "require_file",
    "sentiment_examples",
    "source_label_names",
    "split_of",
    "squad_examples",
    "tag_parts",
    "tfds_label_names",
]
