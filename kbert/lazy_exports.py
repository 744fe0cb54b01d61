"""Public names of a package resolved on first use (PEP 562), so importing the package stays cheap.

A package `__init__` that would import TensorFlow (several seconds) just to list its API names them
instead: `__getattr__, __dir__ = lazy_exports(__name__, {"BertEncoder": "kbert.models.bert_encoder"})`.
`kbert --help` and the TensorFlow-free modules (settings dataclasses, readers, metrics) then load without
TensorFlow, and `kbert.BertEncoder` still works: the first access imports its module.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Callable


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of a package with lazily imported public names.

    Args:
        package: str. The package's `__name__`.
        exports: dict. Public name -> the module that defines it; a name that is the module's own last
            part (`"pretrained": "kbert.pretrained"`) is the module itself.

    Returns:
        (`__getattr__`, `__dir__`): the first imports a name's module on first access and caches the value
        in the package, so later accesses cost nothing; a submodule's name imports the submodule
        (`kbert.text` after `import kbert`, as when the package imported everything). The second lists
        the package's names and `exports`.

    Example:
    >>> __getattr__, __dir__ = lazy_exports("kbert", {"BertConfig": "kbert.config"})
    >>> __getattr__("BertConfig").__name__
    'BertConfig'
    """

    def __getattr__(name: str) -> object:
        module_name = exports.get(name)
        if module_name is None:
            if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return importlib.import_module(f"{package}.{name}")
        module = importlib.import_module(module_name)
        value = module if module_name == f"{package}.{name}" else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
