#!/usr/bin/env python3
"""Golden token ids from llama.cpp (through llama-cpp-python) for nib's tokenizer test.

    python tools/gen_golden_tokens.py [--models-dir models] [--out tests/golden]

For each model below that is present, tokenizes a corpus of tricky strings
with llama.cpp (vocab only, no weights computed) under two settings:
    add_special=1 parse_special=1   (the model's BOS rule, special tokens parsed)
    add_special=0 parse_special=0   (no BOS/EOS, special-token text is plain text)
and writes tests/golden/tokenize_<model>.txt, read by tests/test_tokenizer.c.

File format (line based, so C reads it with fgets and sscanf):
    # ...                         comment (the readable form of each text is one)
    model <file name>
    case <n> <add_special 0|1> <parse_special 0|1>
    text <the input bytes in hex; "-" when empty>
    ids <space-separated ids; "-" when none>
    piece <hex of llama_token_to_piece(id, special=true) of every id, concatenated; "-" when empty>
    end
Texts are hex because the corpus has invalid UTF-8, NULs, \\r and tabs.
"""
import argparse
import ctypes
import os
import random
import sys

MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}


def corpus():
    """(bytes) texts. Fixed content; the random part has a fixed seed."""
    s = [
        "",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\n\n",
        "\n\n\n\n",
        "\r\n",
        "a\r\nb\r\n\r\nc",
        "Hello world",
        " Hello world",
        "Hello world ",
        "  Hello   world  ",
        "Hello\tworld\t\tagain",
        "Hello\nworld\n\nagain\n",
        "line one\n  indented line\n\ttabbed line\n",
        "The quick brown fox jumps over the lazy dog.",
        "I'm sure you're right; it's what they've said, isn't it? We'll see, I'd say.",
        "IT'S LOUD, YOU'RE LOUD, THEY'VE BEEN, WE'LL, I'D, I'M",
        "'s 't 're 've 'm 'll 'd",
        "don't can't won't shouldn't y'all",
        "0",
        "12",
        "123",
        "1234",
        "12345678901234567890",
        "3.14159 2,718 1e-10 -42 +7 0x1F 1_000_000",
        "Year 2024, 10,000 people, 99.9% sure",
        "!!!???...,,,;;;:::",
        "--- *** ### ``` ~~~ ^^^ ||| <<< >>>",
        "(a) [b] {c} <d> \"e\" 'f'",
        "#include <stdio.h>\nint main(void) { return 0; }\n",
        "def f(x):\n    return x ** 2  # square\n",
        "email@example.com https://example.com/path?q=1&r=2#frag",
        "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe",
        "e\u0301 combining acute, n\u0303 tilde",
        "\u00c0\u00c9\u00ce\u00d5\u00dc \u0141\u00f3d\u017a \u0160\u010de\u0159",
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u4eca\u5929\u5929\u6c14\u5f88\u597d\u3002",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a",
        "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440!",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e0a\u0e32\u0e27\u0e42\u0e25\u0e01",
        "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5",
        "\U0001f600 \U0001f44d\U0001f3fd \U0001f1fa\U0001f1f8 \u2764\ufe0f",
        "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family, \U0001f3f3\ufe0f\u200d\U0001f308 flag",
        "\U0001f9d1\U0001f3ff\u200d\U0001f4bb\U0001f600\U0001f600\U0001f600",
        "\u00b2\u00b3 \u00bd \u2167 \u0663\u0664\u0665 \uff11\uff12\uff13",
        "\u00a0nbsp\u2003em\u3000ideo\u0085nel\u2028ls\u2029ps",
        "\u200b\u200c\u200d\ufeff zero widths",
        "\u2581 lower one eighth block \u2581\u2581",
        "\ufffd replacement char",
        # Unicode 15.0/15.1 letters, numbers, emoji (newer than PCRE2 10.42's tables) and U+180E
        # U+180E is \s to PCRE2 but not to llama.cpp: these split differently if nib forgets
        " \u180eb",
        "ti\u1ea1 \u180e\u1ea1",
        "new \U0001fabf\U0001fae8 \U00011f04\U00011f05x \U0001d2c0\U0001d2c1 12\U0001d2c2 \U00031350\U00031351 a\u180eb \u180e c",
        "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|><|im_end|><|endoftext|>",
        "text<|im_start|>text <|im_end|> text",
        "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
        "<bos>Hello<eos>",
        "<bos><bos> double",
        "a<bos>b <pad> c <unk> d <mask>",
        "<unused0><unused99>[multimodal]",
        "<|im_start|",
        "< |im_start|>",
        "<start_of_image> <end_of_image>",
        "<repo_name>x<file_sep>y<reponame>",
        "<fim_prefix>a<fim_suffix>b<fim_middle>",
        "    four spaces",
        "        eight spaces then text",
        "text then spaces        ",
        " " * 40,
        "\n" * 40,
        "\t" * 17,
        " \n \n \n",
        "\n \n \n ",
        "a" * 300,
        "1234567890" * 30,
        "=" * 100,
        "ab" * 200,
        "\U0001f600" * 50,
        ("It was the best of times, it was the worst of times, it was the age of wisdom, it was "
         "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it "
         "was the season of Light, it was the season of Darkness, it was the spring of hope, it was "
         "the winter of despair, we had everything before us, we had nothing before us, we were all "
         "going direct to Heaven, we were all going direct the other way \u2013 in short, the period "
         "was so far like the present period, that some of its noisiest authorities insisted on its "
         "being received, for good or for evil, in the superlative degree of comparison only.\n\n"
         "There were a king with a large jaw and a queen with a plain face, on the throne of England; "
         "there were a king with a large jaw and a queen with a fair face, on the throne of France."),
    ]
    texts = [t.encode("utf-8") for t in s]
    # bytes that are not valid UTF-8 (kept below U+10FFFF: llama.cpp throws past it)
    texts += [
        b"\xff",
        b"abc\x80def",
        b"\xe2\x82",
        b"caf\xc3",
        b"\xc0\x80 overlong",
        b"\xe0\x80\xaf overlong slash",
        b"\xed\xa0\x80 surrogate",
        b"\xf0\x9f\x98 cut emoji",
        b"\xf0\x9f\x98",
        b"a\x00b\x00",
        b"\x01\x02\x1b[0m\x7f",
        b"mixed \xfe\xfe valid \xc3\xa9 \x80\x80",
    ]
    # random strings over an alphabet of classes the pre-tokenizers treat
    # differently (letters of each case class, numbers of each kind, marks,
    # punctuation, symbols, every kind of space, emoji)
    alphabet = (
        list("abcXYZ019 ''''..,,!?-_()\t\n\r") +
        ["s", "t", "re", "ve", "ll", "d", "m", "S", "T", "RE"] +
        list("\u00e9\u00df\u01c5\u02b0\u0301\u0308\u00b2\u00bd\u2167\u0663\uff11\u4e2d\u6587\u3042\u30a2\ud55c"
             "\u0627\u05d0\u0416\u03a9\u0e01\u0915\u093f\u00a0\u2003\u3000\u0085\u2028\u200d\ufe0f\u2581\u00ad\u00d7"
             "\u20ac\u00a9\u2122\u221e\u2192\u3001\u3002\uff0c\u2026") +
        ["\U0001f600", "\U0001f44d", "\U0001f3fd", "\U00010400", "\U0001d400", "\U00020000"] +
        ["<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>"]
    )
    rng = random.Random(20240601)
    for _ in range(150):
        n = rng.randint(1, 40)
        texts.append("".join(rng.choice(alphabet) for _ in range(n)).encode("utf-8"))
    return texts


def readable(b):
    return b.decode("utf-8", "backslashreplace").encode("unicode_escape").decode("ascii")[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default=os.environ.get("NIB_MODELS_DIR", "models"))
    ap.add_argument("--out", default="tests/golden")
    args = ap.parse_args()

    import llama_cpp  # imported here so --help works without it

    texts = corpus()
    os.makedirs(args.out, exist_ok=True)
    for short, fname in MODELS.items():
        path = os.path.join(args.models_dir, fname)
        if not os.path.exists(path):
            print(f"skip {short}: {path} not found", file=sys.stderr)
            continue
        llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        vocab = getattr(llm._model, "vocab", None) or llama_cpp.llama_model_get_vocab(llm.model)
        buf = ctypes.create_string_buffer(1 << 16)

        def piece(tid):
            n = llama_cpp.llama_token_to_piece(vocab, tid, buf, len(buf), 0, True)
            assert n >= 0, (tid, n)
            return buf.raw[:n]

        out = [f"# golden token ids from llama.cpp via llama-cpp-python {llama_cpp.__version__}",
               "# written by tools/gen_golden_tokens.py; the format is described there",
               f"model {fname}"]
        n_case = 0
        for t in texts:
            for add_special, parse_special in ((1, 1), (0, 0)):
                ids = llm.tokenize(t, add_bos=bool(add_special), special=bool(parse_special))
                pieces = b"".join(piece(i) for i in ids)
                out.append(f"# {readable(t)}")
                out.append(f"case {n_case} {add_special} {parse_special}")
                out.append("text " + (t.hex() if t else "-"))
                out.append("ids " + (" ".join(str(i) for i in ids) if ids else "-"))
                out.append("piece " + (pieces.hex() if pieces else "-"))
                out.append("end")
                n_case += 1
        dst = os.path.join(args.out, f"tokenize_{short}.txt")
        with open(dst, "w") as f:
            f.write("\n".join(out) + "\n")
        print(f"{dst}: {n_case} cases")


if __name__ == "__main__":
    main()
