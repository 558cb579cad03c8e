"""A Hugging Face `Trainer` fine-tune, with no trainscope in it: a small BERT made from a config
(no download: the weights are initialised here), a sequence classification task on synthetic
token ids (the label is
whether the first token is below 36), AdamW through the Trainer's accelerate-wrapped
optimizer, gradient accumulation of 2, gradient clipping, a linear schedule with warm-up, and an
evaluation every 10 steps. Arguments: --steps (optimizer steps), --out (the Trainer's folder)."""

import argparse

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--out", required=True)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(8, 64, (n, 16), generator=g)
        self.labels = (self.ids[:, 0] < 36).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(16, dtype=torch.long),
                "labels": self.labels[i]}


config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32, num_labels=2)
model = BertForSequenceClassification(config)
training_args = TrainingArguments(
    output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=16,
    gradient_accumulation_steps=2, learning_rate=3e-3, warmup_steps=5, max_grad_norm=1.0,
    eval_strategy="steps", eval_steps=10, per_device_eval_batch_size=32, logging_steps=10,
    save_strategy="no", report_to=[], use_cpu=True, dataloader_num_workers=0, seed=0,
    disable_tqdm=True)
trainer = Trainer(model=model, args=training_args, train_dataset=Tokens(2048, 1),
                  eval_dataset=Tokens(128, 2))
trainer.train()
print("done", flush=True)
