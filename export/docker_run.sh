#!/usr/bin/env sh
# Serve every model of export/models.config with TF Serving (REST on 8501, gRPC on 8500).
# The export/models/ directory is mounted at /models; warmup requests in each version's
# assets.extra/ are replayed at load time. Use the image of the TF version that wrote the export.
docker run --rm -p 8500:8500 -p 8501:8501 \
  -v "$(pwd)/export/models:/models" \
  -v "$(pwd)/export/models.config:/models/models.config" \
  -v "$(pwd)/export/batching.config:/models/batching.config" \
  tensorflow/serving:2.21.0 \
  --model_config_file=/models/models.config \
  --enable_batching --batching_parameters_file=/models/batching.config
