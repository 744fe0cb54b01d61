"""`Example`: one example of a downstream task, as a reader returns it and a task reads it.

A plain dict of the fields its task names (`text`, `label`, `tokens`, `tags`, `question`, `context`,
`answers`, ...); tokenization happens later, in the task's tf.data pipeline.
"""

from __future__ import annotations

from typing import Any

Example = dict[str, Any]
