"""XLNet's weights under HF names (`XLNetModel`, and `XLNetLMHeadModel`'s `lm_loss` bias): XLNet's layers are not
BERT's, so its links are written out here rather than as `HfNames` data.

Examples:
    >>> assign_links(backbone_links(backbone), checkpoint.state_dict, checkpoint.source)
    >>> load_lm_head(head, checkpoint)
    True
"""

from kerasbert.families.checkpoint_weights import assign_links, dense_links, norm_links

# HF XLNetRelativeAttention's parameter -> XLNetRelativeAttention's weight (all in the same layout).
ATTENTION_WEIGHTS = {"q": "query_kernel", "k": "key_kernel", "v": "value_kernel", "o": "output_kernel",
                     "r": "position_kernel", "r_w_bias": "content_bias", "r_r_bias": "position_bias",
                     "r_s_bias": "segment_bias", "seg_embed": "segment_embedding"}
SUMMARY = "sequence_summary.summary"  # XLNetForSequenceClassification's summary Linear (`pooled_output`'s)
LM_HEAD_BIAS = "lm_loss.bias"  # XLNetLMHeadModel's decoder is tied to word_embedding; its bias is its own


def backbone_links(backbone):
    """`(variable, hf_names, kind)` of every `XLNetBackbone` weight under HF `XLNetModel` names."""
    yield backbone.token_embedding.embeddings, ["word_embedding.weight"], "copy"
    yield backbone.mask_embedding, ["mask_emb"], "copy"
    for index, (attention, feed_forward) in enumerate(zip(backbone.attention_layers, backbone.feed_forward_layers)):
        prefix = f"layer.{index}"
        for theirs, ours in ATTENTION_WEIGHTS.items():
            yield getattr(attention, ours), [f"{prefix}.rel_attn.{theirs}"], "copy"
        yield from norm_links(attention.layer_norm, f"{prefix}.rel_attn.layer_norm")
        yield from dense_links(feed_forward.inner_dense, f"{prefix}.ff.layer_1")
        yield from dense_links(feed_forward.output_dense, f"{prefix}.ff.layer_2")
        yield from norm_links(feed_forward.layer_norm, f"{prefix}.ff.layer_norm")


def load_lm_head(head, checkpoint):
    """Load `lm_loss.bias` (HF `XLNetLMHeadModel`) into an `XLNetLMHead`; returns whether the checkpoint had it."""
    weights = checkpoint.heads(LM_HEAD_BIAS)
    if weights:
        if not head.built:
            head.build(None)
        assign_links([(head.bias, [LM_HEAD_BIAS], "copy")], weights, checkpoint.source)
    return bool(weights)
