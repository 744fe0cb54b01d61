"""gRPC client (tensorflow-serving-api) for a kbert export. Run: python export/client_grpc.py [TASK]

Inputs are 1-D DT_STRING tensors named as the signature's inputs (see client_rest.py for each task).
"""

from __future__ import annotations

import sys

import grpc
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

INPUTS = {
    "classify": {"text": ["a great movie", "dull and long"]},
    "tag": {"text": ["Ada Lovelace lived in London"]},
    "qa": {"question": ["Who wrote the notes?"], "context": ["The notes were written by Ada."]},
    "encoder": {"text": ["a great movie"]},
    "embed": {"text": ["a heron at dawn"]},
}


def predict(inputs: dict, model: str = "sst2", signature: str = "serving_default",
            target: str = "localhost:8500") -> dict:
    stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(target))
    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    request.model_spec.signature_name = signature
    for name, values in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string))
    response = stub.Predict(request, timeout=30.0)
    return {name: tf.make_ndarray(tensor) for name, tensor in response.outputs.items()}


if __name__ == "__main__":
    task = sys.argv[1] if len(sys.argv) > 1 else "classify"
    for name, value in predict(INPUTS[task]).items():
        print(name, value.tolist())
