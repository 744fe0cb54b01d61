"""Test helpers: is a Keras model's train step really one XLA program, and are its batches fixed-shape?"""

import tensorflow as tf


def xla_compiled_steps(model) -> list:
    """The traced concrete functions behind `model.train_function` that TensorFlow must compile with XLA.

    Keras 3.15 (TF backend) wraps `one_step_on_data` in `tf.function(jit_compile=model.jit_compile)`; the
    traced function then carries `_XlaMustCompile = True` in its FunctionDef. Walks the closures of
    `model.train_function` to find every `tf.function` and returns those traced functions: empty when the
    step runs as a plain graph.
    """
    found, seen = [], set()

    def walk(obj, depth):
        if id(obj) in seen or depth > 8:
            return
        seen.add(id(obj))
        if isinstance(obj, tf.types.experimental.PolymorphicFunction):
            for concrete in obj._list_all_concrete_functions():
                attr = concrete.function_def.attr
                if "_XlaMustCompile" in attr and attr["_XlaMustCompile"].b:
                    found.append(concrete)
            obj = obj.python_function
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if callable(value):
                walk(value, depth + 1)

    assert model.train_function is not None, "the model has not trained yet"
    walk(model.train_function, 0)
    return found


def assert_fixed_batches(element_spec, batch_size: int, sequence_length: int) -> None:
    """Every tensor is `(batch_size,)` or `(batch_size, sequence_length)`, static, and not a string."""
    for spec in tf.nest.flatten(element_spec):
        assert spec.shape.as_list() in ([batch_size], [batch_size, sequence_length]), spec
        assert spec.dtype in (tf.int32, tf.bool, tf.float32), spec
