"""Pretraining: SentencePiece vocabularies, corpora and DeBERTa-v2 masked-language-model training."""
