#!/usr/bin/env python3
"""Writes the tiny random-weight Llama that nvdet probe's tests serve, into one folder.

Nothing is downloaded: a SentencePiece tokenizer is trained on seeded text made of a fixed word
list, and a LlamaForCausalLM of a few million parameters is initialised from a seeded generator
and saved with transformers (config.json, model.safetensors, tokenizer files, and the
SentencePiece model as tokenizer.model, which llama.cpp's converter reads). Its weights are
random: its text means nothing, and its logits are close to each other, so that the order of a
floating-point sum can change which token wins -- what a batch-invariance probe has to see.

    make_tiny_llama.py OUT_DIR [--seed 1234]
"""
import argparse
import os
import random
import shutil
import tempfile

WORDS = """the a river stone light green over under quiet window garden morning cold bright
paper small house after before during along mountain valley clock table letter number winter
summer yellow market bridge forest silver simple harbor engine circle pencil orange planet story
music friend travel signal harvest library evening north south storm cloud field wheel candle
ladder basket tunnel castle island meadow copper thunder shadow once upon time there was and
then it is in on of to with for from by at who what where when why how one two three""".split()


def seeded_corpus(seed, lines=4000):
    rng = random.Random(seed)
    return ["".join(w + " " for w in rng.choices(WORDS, k=rng.randint(4, 24))).strip()
            for _ in range(lines)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--vocab", type=int, default=320)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()

    import sentencepiece as spm
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaTokenizer

    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w") as f:
            f.write("\n".join(seeded_corpus(args.seed)) + "\n")
        prefix = os.path.join(tmp, "tok")
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=args.vocab,
            byte_fallback=False, character_coverage=1.0, num_threads=1, minloglevel=2,
            bos_id=1, eos_id=2, unk_id=0, pad_id=-1)
        shutil.copy(prefix + ".model", os.path.join(args.out, "tokenizer.model"))

    # Read from the folder that holds only tokenizer.model: transformers converts it to its fast
    # tokenizer (tokenizer.json), which `transformers serve` loads.
    tokenizer = LlamaTokenizer.from_pretrained(args.out)
    assert len(tokenizer) == args.vocab, len(tokenizer)
    tokenizer.save_pretrained(args.out)
    config = LlamaConfig(
        vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.generation_config.do_sample = False
    model.save_pretrained(args.out)


if __name__ == "__main__":
    main()
