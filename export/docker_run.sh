#!/usr/bin/env sh
# Serve every model of export/models.config with TF Serving (REST on 8501, gRPC on 8500).
# The export/models/ directory is mounted at /models; warmup requests in each version's
# assets.extra/ are replayed at load time. Use the image of the TF version that wrote the export.
#
# Threads (docs/investigations/intel-threads.md): one thread a product, and as many batches in flight as
# the host has cores (batching.config's num_batch_threads; set it to CORES too), which beat splitting each
# product across the cores by 1.2x (float32) to 1.5x (bfloat16) on a 2-core Xeon. oneDNN lays out each
# weight matrix once (TF_ONEDNN_ASSUME_FROZEN_WEIGHTS: right for a server, whose weights never change).
CORES=${CORES:-$(nproc)}
docker run --rm -p 8500:8500 -p 8501:8501 \
  -e TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 \
  -v "$(pwd)/export/models:/models" \
  -v "$(pwd)/export/models.config:/models/models.config" \
  -v "$(pwd)/export/batching.config:/models/batching.config" \
  tensorflow/serving:2.21.0 \
  --model_config_file=/models/models.config \
  --enable_batching --batching_parameters_file=/models/batching.config \
  --tensorflow_intra_op_parallelism=1 --tensorflow_inter_op_parallelism="$CORES"
