"""Reading HF `tokenizers`' `tokenizer.json` (what transformers 5 saves instead of the classic files) into what
kerasbert's tokenizers take: a byte-level BPE's vocabulary and merges, a SentencePiece unigram model (a
`ModelProto` built from the pieces, scores and precompiled character map), the special tokens. A model,
normaliser or pre-tokenizer kind kerasbert cannot reproduce is a `TokenizerJsonError` naming it.

Examples:
    >>> fast = read_tokenizer_json("my_albert/tokenizer.json")  # doctest: +SKIP
    >>> proto, settings = unigram_model(fast, "my_albert/tokenizer.json")  # doctest: +SKIP
"""

import base64
import json
import os

from sentencepiece import sentencepiece_model_pb2

TOKENIZER_JSON = "tokenizer.json"
METASPACE = "\u2581"  # "▁"
DIGIT_COMMA_PENALTY = 100  # what transformers 4's `AlbertConverter` took off pieces ending in a digit and ","
# The unigram normaliser of HF's ALBERT and XLNet converters: the quote pairs, then these, then `Precompiled`.
QUOTE_REPLACEMENTS = [{"type": "Replace", "pattern": {"String": "``"}, "content": '"'},
                      {"type": "Replace", "pattern": {"String": "''"}, "content": '"'}]
# transformers 4's converter ended it with this, and split with Metaspace alone: the same words.
SPACE_RUNS = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
UNIGRAM_SUPPORTED = ("normaliser Sequence[Replace('``', '\"'), Replace(\"''\", '\"'), (NFKD, StripAccents)?, "
                     "Lowercase?, Precompiled] and pre-tokenizer Sequence[WhitespaceSplit, Metaspace('▁', "
                     "prepend_scheme='always')] (or, with Replace(' {2,}', ' ') last, Metaspace alone), as HF's "
                     "ALBERT and XLNet tokenizers")
DEBERTA_NORMALIZER = [{"type": "Replace", "pattern": {"Regex": "\\s{2,}|[\\n\\r\\t]"}, "content": " "},
                      {"type": "NFC"}, {"type": "Strip", "strip_left": False, "strip_right": True}]
DEBERTA_SUPPORTED = ("normaliser Sequence[Lowercase?, Replace('\\s{2,}|[\\n\\r\\t]', ' '), NFC, Strip(right)] and "
                     "pre-tokenizer Sequence[Metaspace('▁', prepend_scheme='always')], as HF's DebertaV2Tokenizer "
                     "(transformers 5)")
BIG_BIRD_NORMALIZER = [{"type": "Strip", "strip_left": False, "strip_right": False},
                       {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": METASPACE}]
BIG_BIRD_SUPPORTED = ("normaliser Sequence[Strip(none), Replace(' {2,}', '▁')] and pre-tokenizer Metaspace('▁', "
                      "prepend_scheme='always'), as HF's BigBirdTokenizer (transformers 5); a folder without the "
                      "tokenizer.json is read from its spiece.model, as transformers 5 reads it")
WORDPIECE_SUPPORTED = "a WordPiece model ('##' continuations) with BertNormalizer and BertPreTokenizer, as HF's BERT"
BPE_SUPPORTED = ("no normaliser and the ByteLevel pre-tokenizer (with its regular expression), no subword "
                 "prefix or suffix, no byte fallback or dropout, as HF's RoBERTa, GPT-2 and ModernBERT tokenizers")


class TokenizerJsonError(ValueError):
    """A `tokenizer.json` whose model, normaliser or pre-tokenizer kerasbert's tokenizers cannot reproduce."""


def is_tokenizer_json(path):
    """Whether `path` names a `tokenizer.json` file."""
    return isinstance(path, (str, os.PathLike)) and os.path.basename(os.fspath(path)) == TOKENIZER_JSON \
        and os.path.isfile(path)


def read_tokenizer_json(path):
    """The parsed `tokenizer.json` at `path` (or in the folder `path`); a ValueError when it is no JSON."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, TOKENIZER_JSON)
    with open(path, encoding="utf-8") as file:
        try:
            return json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON ({error}); the file is corrupt.") from None


def kind(part):
    """`"Sequence[A, B]"` / `"A"` / `"none"`: how an error message names a normaliser or pre-tokenizer."""
    if not part:
        return "none"
    inner = part.get("normalizers") or part.get("pretokenizers")
    if part.get("type") == "Sequence" and inner is not None:
        return f"Sequence[{', '.join(kind(step) for step in inner)}]"
    return part.get("type", "?")


def unsupported(source, fast, what, supported):
    model = (fast.get("model") or {}).get("type")
    return TokenizerJsonError(
        f"{source}: kerasbert cannot reproduce its {what} (model {model}, normaliser "
        f"{kind(fast.get('normalizer'))}, pre-tokenizer {kind(fast.get('pre_tokenizer'))}). It reads {supported}."
    )


def wordpiece_tokens(fast, source):
    """The tokens, in id order, of a WordPiece `tokenizer.json` (parsed) with BERT's normaliser and pre-tokenizer,
    for `BertTokenizer`; a `TokenizerJsonError` for another kind.

    Examples:
        >>> tokens = wordpiece_tokens(read_tokenizer_json("my_bert"), "my_bert")  # doctest: +SKIP
    """
    model = fast.get("model") or {}
    normalizer, pre_tokenizer = fast.get("normalizer") or {}, fast.get("pre_tokenizer") or {}
    if (model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict)
            or normalizer.get("type", "BertNormalizer") != "BertNormalizer"
            or pre_tokenizer.get("type", "BertPreTokenizer") != "BertPreTokenizer"
            or model.get("continuing_subword_prefix", "##") != "##"):
        raise unsupported(source, fast, "WordPiece pipeline", WORDPIECE_SUPPORTED)
    tokens = sorted(model["vocab"], key=model["vocab"].get)
    if [model["vocab"][token] for token in tokens] != list(range(len(tokens))):
        raise ValueError(f"{source}: the WordPiece ids are not 0..{len(tokens) - 1}; the file is corrupt.")
    return tokens


def bpe_model(fast, source):
    """`({token: id}, [(a, b), ...])` of a byte-level BPE `tokenizer.json` (parsed), for `RobertaTokenizer`.

    Examples:
        >>> vocabulary, merges = bpe_model(read_tokenizer_json("modernbert"), "modernbert")  # doctest: +SKIP
    """
    model = fast.get("model") or {}
    pre_tokenizer = fast.get("pre_tokenizer") or {}
    if pre_tokenizer.get("type") == "Sequence" and len(pre_tokenizer.get("pretokenizers") or []) == 1:
        pre_tokenizer = pre_tokenizer["pretokenizers"][0]
    if (model.get("type") != "BPE" or fast.get("normalizer") or pre_tokenizer.get("type") != "ByteLevel"
            or not pre_tokenizer.get("use_regex", True) or model.get("continuing_subword_prefix")
            or model.get("end_of_word_suffix") or model.get("byte_fallback") or model.get("dropout")):
        raise unsupported(source, fast, "byte-level BPE", BPE_SUPPORTED)
    vocabulary = dict(model["vocab"])
    for token in fast.get("added_tokens", []):
        vocabulary.setdefault(token["content"], token["id"])
    merges = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in model["merges"]]
    return vocabulary, merges


def unigram_settings(fast, source):
    """`{"do_lower_case", "keep_accents"}` of a unigram `tokenizer.json` with ALBERT's pipeline, or a
    `TokenizerJsonError` naming the pipeline it has."""
    steps = list(((fast.get("normalizer") or {}).get("normalizers")) or [])
    pre_tokenizer = fast.get("pre_tokenizer") or {}
    pre_tokenizers = pre_tokenizer.get("pretokenizers") or [pre_tokenizer]
    metaspace = pre_tokenizers[-1]
    pre_tokenizer = [step.get("type") for step in pre_tokenizers]
    if steps[-1:] == [SPACE_RUNS] and pre_tokenizer == ["Metaspace"]:
        steps, pre_tokenizer = steps[:-1], ["WhitespaceSplit", "Metaspace"]
    keep_accents = steps[2:4] != [{"type": "NFKD"}, {"type": "StripAccents"}]
    rest = steps[2:] if keep_accents else steps[4:]
    lowercase = rest[:1] == [{"type": "Lowercase"}]
    rest = rest[1:] if lowercase else rest
    if ((fast.get("model") or {}).get("type") != "Unigram" or steps[:2] != QUOTE_REPLACEMENTS
            or [step.get("type") for step in rest] != ["Precompiled"]
            or pre_tokenizer != ["WhitespaceSplit", "Metaspace"] or metaspace.get("replacement") != METASPACE
            or metaspace.get("prepend_scheme", "always" if metaspace.get("add_prefix_space", True) else "never")
            != "always" or not metaspace.get("split", True) or (fast.get("model") or {}).get("byte_fallback")):
        raise unsupported(source, fast, "unigram pipeline", UNIGRAM_SUPPORTED)
    return {"do_lower_case": lowercase, "keep_accents": keep_accents}


def deberta_settings(fast, source):
    """`{"do_lower_case"}` of a unigram `tokenizer.json` with HF's DeBERTa-v2/v3 pipeline (transformers 5), or a
    `TokenizerJsonError` naming the pipeline it has."""
    steps = list(((fast.get("normalizer") or {}).get("normalizers")) or [])
    lowercase = steps[:1] == [{"type": "Lowercase"}]
    pre_tokenizer = fast.get("pre_tokenizer") or {}
    pre_tokenizers = pre_tokenizer.get("pretokenizers") or [pre_tokenizer]
    if ((fast.get("model") or {}).get("type") != "Unigram" or steps[int(lowercase):] != DEBERTA_NORMALIZER
            or [step.get("type") for step in pre_tokenizers] != ["Metaspace"]
            or pre_tokenizers[0].get("replacement") != METASPACE
            or pre_tokenizers[0].get("prepend_scheme") != "always" or not pre_tokenizers[0].get("split", True)
            or fast["model"].get("byte_fallback")):
        raise unsupported(source, fast, "DeBERTa unigram pipeline", DEBERTA_SUPPORTED)
    return {"do_lower_case": lowercase}


def big_bird_settings(fast, source):
    """`{}` (BigBird's tokenizer has no settings) of a unigram `tokenizer.json` with HF's BigBird pipeline
    (transformers 5), or a `TokenizerJsonError` naming the pipeline it has."""
    pre_tokenizer = fast.get("pre_tokenizer") or {}
    if ((fast.get("model") or {}).get("type") != "Unigram" or fast["model"].get("byte_fallback")
            or ((fast.get("normalizer") or {}).get("normalizers")) != BIG_BIRD_NORMALIZER
            or pre_tokenizer.get("type") != "Metaspace" or pre_tokenizer.get("replacement") != METASPACE
            or pre_tokenizer.get("prepend_scheme") != "always" or not pre_tokenizer.get("split", True)):
        raise unsupported(source, fast, "BigBird unigram pipeline", BIG_BIRD_SUPPORTED)
    return {}


def unigram_model(fast, source, restore_digit_commas=False, pipeline=unigram_settings):
    """`(SentencePiece ModelProto bytes, settings)` of a unigram `tokenizer.json` (parsed) with ALBERT's
    pipeline: its pieces and scores (added special tokens as control pieces, other added tokens as
    user-defined pieces, the model's `unk_id` as the unknown piece), its precompiled character map, and
    `unigram_settings`. `restore_digit_commas`: give back the 100 that transformers 4's converter took off
    pieces ending in a digit and a comma (so the proto is the original `spiece.model`'s). `pipeline`: the reader
    of the normaliser and pre-tokenizer (`deberta_settings` for DeBERTa's).

    Examples:
        >>> proto, settings = unigram_model(read_tokenizer_json("albert"), "albert")  # doctest: +SKIP
        >>> settings
        {'do_lower_case': True, 'keep_accents': False}
    """
    settings = pipeline(fast, source)
    model = fast["model"]
    added = {token["id"]: token for token in fast.get("added_tokens", [])}
    proto = sentencepiece_model_pb2.ModelProto()
    piece_types = proto.SentencePiece
    for index, (piece, score) in enumerate(model["vocab"]):
        kind_ = piece_types.NORMAL
        if index == model.get("unk_id"):
            kind_ = piece_types.UNKNOWN
        elif index in added:
            kind_ = piece_types.CONTROL if added[index].get("special") else piece_types.USER_DEFINED
        if restore_digit_commas and piece[-1:] == "," and piece[-2:-1].isdigit():
            score += DIGIT_COMMA_PENALTY
        proto.pieces.add(piece=piece, score=score, type=kind_)
    for index in sorted(added):
        if index >= len(model["vocab"]):  # added after the model's pieces (DeBERTa-v3's [MASK])
            if index != len(proto.pieces):
                raise TokenizerJsonError(f"{source}: added token {added[index]['content']!r} has id {index}, "
                                         f"after a gap in the ids (the vocabulary ends at {len(proto.pieces)}).")
            special = added[index].get("special")
            proto.pieces.add(piece=added[index]["content"], score=0.0,
                             type=piece_types.CONTROL if special else piece_types.USER_DEFINED)
    proto.trainer_spec.model_type = proto.trainer_spec.UNIGRAM
    proto.trainer_spec.unk_id = model.get("unk_id") or 0
    proto.trainer_spec.unk_piece = model["vocab"][proto.trainer_spec.unk_id][0]
    precompiled = [step for step in fast["normalizer"]["normalizers"] if step["type"] == "Precompiled"]
    charsmap = (precompiled or [{}])[0].get("precompiled_charsmap") or ""
    proto.normalizer_spec.name = "nmt_nfkc"
    proto.normalizer_spec.precompiled_charsmap = base64.b64decode(charsmap)
    return proto.SerializeToString(), settings


def post_processor_specials(fast):
    """`{"cls_token", "sep_token"}` the post-processor adds (RoBERTa's `cls`/`sep`; a template's special
    tokens: the one before `$A` is the class token, the one right after it the separator, XLNet's `A <sep>
    <cls>` too)."""
    processor = (fast or {}).get("post_processor") or {}
    if processor.get("type") == "Sequence":
        processor = next((step for step in processor.get("processors", []) if step.get("type") != "ByteLevel"), {})
    if processor.get("type") in ("RobertaProcessing", "BertProcessing"):
        return {"cls_token": processor["cls"][0], "sep_token": processor["sep"][0]}
    if processor.get("type") != "TemplateProcessing":
        return {}
    single = processor.get("single") or []
    names = [piece.get("SpecialToken", {}).get("id") if "SpecialToken" in piece else "$A" for piece in single]
    if "$A" not in names:
        return {}
    at = names.index("$A")
    found = {}
    if at + 1 < len(names):
        found["sep_token"] = names[at + 1]
    if at > 0:
        found["cls_token"] = names[at - 1]
    elif len(names) > at + 2:
        found["cls_token"] = names[-1]
    return found


def template_pair_separators(fast):
    """The separators between a pair's texts in a `tokenizer.json`'s template post-processor (ModernBERT's
    `[CLS] $A [SEP] $B [SEP]`: 1); 2 (RoBERTa's `</s></s>`) for a `RobertaProcessing` one or without a file."""
    processor = (fast or {}).get("post_processor") or {}
    steps = processor.get("processors", []) if processor.get("type") == "Sequence" else [processor]
    template = next((step["pair"] for step in steps if step.get("type") == "TemplateProcessing"), None)
    if not template:
        return 2
    kinds = ["A" if item.get("Sequence", {}).get("id") == "A" else "B" if "Sequence" in item else "special"
             for item in template]
    if "A" not in kinds or "B" not in kinds:
        return 2
    return kinds.index("B") - kinds.index("A") - 1


def special_tokens_of(fast, settings, names):
    """The special tokens of `names` (e.g. `unk_token`, ...) a tokenizer folder names: `tokenizer_config.json`'s
    (`settings`), else the `tokenizer.json` post-processor's class and separator tokens and the model's unknown
    token. Only those it names are returned.

    Examples:
        >>> special_tokens_of(fast, {"mask_token": "[MASK]"}, ["mask_token"])  # doctest: +SKIP
        {'mask_token': '[MASK]'}
    """
    found = post_processor_specials(fast)
    model = (fast or {}).get("model") or {}
    if model.get("unk_token"):
        found["unk_token"] = model["unk_token"]
    elif model.get("type") == "Unigram" and model.get("unk_id") is not None:
        found["unk_token"] = model["vocab"][model["unk_id"]][0]
    for name in names:
        token = settings.get(name)
        if isinstance(token, dict):
            token = token.get("content")
        if isinstance(token, str) and token:
            found[name] = token
    return {name: found[name] for name in names if name in found}
