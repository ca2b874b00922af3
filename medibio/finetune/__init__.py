"""Fine-tuning engine: every BLURB task through accelerate, with run records, IFT and stability options."""
