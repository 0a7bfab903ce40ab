"""Torch models: paraphrastic sentence encoders, their training and STS evaluation, SIF, NMT."""
