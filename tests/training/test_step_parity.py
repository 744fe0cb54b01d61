"""A whole fine-tuning step equals transformers + PyTorch's: forward, loss, backward, clipping, AdamW, schedule.

`tests/optim/test_adamw.py` checks the update rule on a synthetic gradient stream; this checks everything
around it on real weights. all-MiniLM-L6-v2 in `BertClassifier` (kbert's `compile()` default optimizer)
and in `BertForSequenceClassification` (`torch.optim.AdamW`, eps 1e-6, decay except biases and
LayerNorm, `clip_grad_norm_(1.0)`, the same warmup/decay schedule) start from the same classifier head
and see the same batches with dropout off, so any difference in the math shows up in the losses.
"""

import numpy as np
import pytest

STEPS, WARMUP, LR, BATCH = 8, 2, 5e-5, 8
WORDS = ("a moving , funny film", "dull and far too long", "the cast is wonderful", "nothing works here",
         "an honest , warm story", "i hated every minute", "smart writing and fine acting", "a tedious mess",
         "it is a joy to watch", "the plot makes no sense at all , sadly")


@pytest.mark.slow
def test_finetuning_steps_match_transformers(minilm):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import kbert

    rng = np.random.RandomState(0)
    texts = [" ".join(rng.choice(WORDS, size=rng.randint(1, 4))) for _ in range(STEPS * BATCH)]
    labels = rng.randint(0, 2, size=STEPS * BATCH)

    torch.manual_seed(0)
    reference = transformers.BertForSequenceClassification.from_pretrained(
        str(minilm), num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm))
    encoder = kbert.load_pretrained(minilm, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = kbert.BertClassifier(encoder, num_classes=2, dropout=0.0)
    model.output_dense.kernel.assign(reference.classifier.weight.detach().numpy().T)
    model.output_dense.bias.assign(reference.classifier.bias.detach().numpy())
    model.compile(optimizer=kbert.optim.create_optimizer(LR, num_train_steps=STEPS, warmup_steps=WARMUP))

    named = list(reference.named_parameters())
    no_decay = ("bias", "LayerNorm.weight")
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in named if not any(k in n for k in no_decay)], "weight_decay": 0.01},
         {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0}], lr=LR, eps=1e-6)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda u: u / WARMUP if u < WARMUP else max(0.0, 1.0 - u / STEPS))
    reference.train()

    ours, theirs = [], []
    for step in range(STEPS):
        batch = slice(step * BATCH, (step + 1) * BATCH)
        inputs = tokenizer(texts[batch], padding=True, return_tensors="pt")
        loss = reference(**inputs, labels=torch.tensor(labels[batch])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        theirs.append(loss.item())
        features = {"token_ids": inputs["input_ids"].numpy().astype("int32"),
                    "segment_ids": inputs["token_type_ids"].numpy().astype("int32"),
                    "padding_mask": inputs["attention_mask"].numpy().astype(bool)}
        ours.append(model.train_on_batch(features, labels[batch], return_dict=True)["loss"])

    # Step 0 is before any update; the later losses carry every update made so far.
    np.testing.assert_allclose(ours, theirs, atol=2e-5)
    assert max(theirs) - min(theirs) > 1e-3  # the weights moved: the comparison is not of a frozen model
    np.testing.assert_allclose(model.output_dense.kernel.numpy(), reference.classifier.weight.detach().numpy().T,
                               atol=1e-6)
    query = reference.bert.encoder.layer[5].attention.self.query.weight.detach().numpy().T
    ours_query = next(v for v in model.trainable_variables if "transformer_layer_5" in v.path and "query" in v.path
                      and v.path.endswith("kernel"))
    np.testing.assert_allclose(ours_query.numpy().reshape(query.shape), query, atol=1e-6)
